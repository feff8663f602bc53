"""Step 2 of design/rlsched_envs.md: GridWalk and FaultyGridWalk."""

import random
import time

import pytest

from rlsched.envs.base import BUILTIN_ENVS, Env, make_env, resolve_env
from rlsched.envs.grid import GRID_WORDS, MOVES, FaultyGridWalk, GridWalk


def walk_optimally(env: GridWalk, obs: str) -> tuple[int, float, bool]:
    moves, reward = 0, 0.0
    while True:
        step = env.step(obs.split()[-1])  # the hint is the last word
        moves += 1
        reward += step.reward
        if step.done:
            return moves, reward, step.terminated
        obs = step.observation


def test_grid_steps_are_quick_and_the_faulty_ones_are_not() -> None:
    """The runtime may step GridWalk in its driver (design/rlsched_runtime.md 0.8.0), never
    FaultyGridWalk, which sleeps."""
    assert GridWalk.quick_steps is True and FaultyGridWalk.quick_steps is False


def test_same_seed_same_task_and_words_are_declared() -> None:
    a, b = GridWalk(), GridWalk()
    assert a.reset(seed=7) == b.reset(seed=7)
    obs, info = a.reset(seed=7)
    assert info["goal"] != a.pos
    assert set(obs.split()) <= set(GRID_WORDS)
    assert GridWalk.actions == tuple(MOVES)


def test_following_the_hint_reaches_the_goal_in_the_manhattan_distance() -> None:
    for seed in range(50):
        env = GridWalk(size=5, max_steps=40)
        obs, info = env.reset(seed=seed)
        start = env.pos
        distance = abs(info["goal"][0] - start[0]) + abs(info["goal"][1] - start[1])
        moves, reward, reached = walk_optimally(env, obs)
        assert reached and moves == distance
        assert reward == pytest.approx(1 - moves / 41)


def test_random_walks_are_long_tailed_and_truncated() -> None:
    rng = random.Random(0)
    lengths = []
    for seed in range(300):
        env = GridWalk()
        env.reset(seed=seed)
        while not (step := env.step(rng.choice(GridWalk.actions))).done:
            assert step.reward == 0.0
        lengths.append(env.moves)
        if step.truncated:
            assert step.reward == 0.0 and env.moves == 24
    assert 12 < sum(lengths) / len(lengths) < 20
    assert lengths.count(24) > 60 and min(lengths) == 1


def test_invalid_and_bump_cost_a_turn() -> None:
    env = GridWalk(size=2, max_steps=3)
    env.reset(seed=1)
    step = env.step("hello")
    assert step.observation.startswith("invalid") and env.moves == 1
    x, y = env.pos
    wall = "west" if x == 0 else "east"
    step = env.step(wall)
    assert step.terminated or step.observation.startswith("bump")


def test_faulty_grid_raises_and_hangs_reproducibly() -> None:
    def faults(seed: int) -> list[int]:
        env = FaultyGridWalk(size=4, max_steps=24, fail_prob=0.3, fault_seed=5)
        env.reset(seed=seed)
        out = []
        for i in range(10):
            try:
                env.step("east")
            except RuntimeError:
                out.append(i)
        return out

    assert faults(3) == faults(3) and faults(3)
    env = FaultyGridWalk(hang_prob=1.0, hang_s=0.05)
    env.reset(seed=0)
    started = time.perf_counter()
    env.step("east")
    assert time.perf_counter() - started >= 0.05
    with pytest.raises(ValueError, match="VAL_FLOAT_RANGE"):
        FaultyGridWalk(fail_prob=0.8, hang_prob=0.5)


def test_registry_resolves_builtins_and_module_paths() -> None:
    assert set(BUILTIN_ENVS) == {"grid", "faulty-grid", "vault", "recall"}
    grid = resolve_env("grid")
    assert resolve_env("rlsched.envs.grid:GridWalk") is grid
    env = make_env("grid", {"size": 3, "max_steps": 5})
    assert isinstance(env, Env) and env.size == 3
    with pytest.raises(ValueError, match="cannot import environment"):
        resolve_env("rlsched.envs.grid:Missing")
