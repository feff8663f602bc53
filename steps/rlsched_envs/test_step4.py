"""Step 4 of design/rlsched_envs.md: Recall, a sliding window typed back one turn at a time."""

import math

import pytest

from rlsched.envs.base import Env, make_env, resolve_env
from rlsched.envs.recall import RECALL_SYMBOLS, Recall
from rlsched.envs.vault import random_policy


def play_by_copying(env: Recall, first: str) -> list[float]:
    """The policy of the class docstring: every typed symbol is the token `width` positions
    back in the episode's context (the previous answer shifted by one, then the new symbol)."""
    context = first.split()
    rewards = []
    while True:
        answer = context[-env.width :]
        step = env.step(" ".join(answer))
        rewards.append(step.reward)
        if step.done:
            assert step.terminated and step.observation == "done"
            return rewards
        context += answer + [step.observation]


def test_registered_and_a_protocol_env() -> None:
    assert resolve_env("recall") is Recall
    env = make_env("recall", {"width": 3, "max_turns": 5})
    assert isinstance(env, Env) and env.actions == RECALL_SYMBOLS == ("0", "1")
    assert set(env.actions) <= set(env.words) and {"done", "miss"} <= set(env.words)
    assert (Recall().width, Recall().max_turns) == (6, 16)
    for bad in ({"width": 0}, {"max_turns": 0}, {"width": 17}):
        with pytest.raises(ValueError, match="VAL_INT_RANGE"):
            Recall(**bad)


def test_a_hand_checked_episode() -> None:
    env = Recall(width=3, max_turns=8)
    env.stream, env.turns, env.turn = ("0", "1", "1", "0", "0"), 3, 0
    step = env.step("0 1 1")  # window 1: the first observation typed back
    assert (step.observation, step.done) == ("0", False)
    assert step.reward == pytest.approx(3 / 9) and step.info == {"turn": 1, "hits": 3}
    step = env.step("1 1 0")  # window 2: two symbols of turn 1, then the new one
    assert (step.observation, step.reward) == ("0", pytest.approx(3 / 9))
    step = env.step("1 0 0")
    assert step.observation == "done" and step.terminated and not step.truncated
    assert step.reward == pytest.approx(3 / 9)


def test_a_symbol_out_of_place_ends_the_episode_with_partial_credit() -> None:
    env = Recall(width=4, max_turns=8)
    env.stream, env.turns, env.turn = tuple("0110100"), 4, 0
    step = env.step("0 1 0 0")  # 3 of 4 in place: the episode ends
    assert (step.observation, step.truncated, step.terminated) == ("miss", True, False)
    assert step.reward == pytest.approx(3 / 16) and step.info["hits"] == 3
    env.turn = 0
    step = env.step("0 1")  # too short: the missing places are wrong
    assert step.observation == "miss" and step.reward == pytest.approx(2 / 16)
    env.turn = 0
    assert env.step("x 0 1 1 0").reward == pytest.approx(1 / 16)  # a non-symbol takes a place
    env.turn = 0
    assert env.step("0 1 1 0 1 1").observation == "1"  # words after the window are ignored


def test_reset_draws_the_stream_and_its_length_from_the_seed() -> None:
    env = Recall(width=6, max_turns=16)
    first, info = env.reset(seed=7)
    assert first.split() == list(env.stream[:6]) and info == {"turns": env.turns}
    assert len(env.stream) == 6 + env.turns - 1 and set(env.stream) <= set(RECALL_SYMBOLS)
    same = Recall(width=6, max_turns=16)
    assert same.reset(seed=7)[0] == first and same.stream == env.stream  # one GRPO group
    lengths = []
    for seed in range(4000):
        env.reset(seed=seed)
        lengths.append(env.turns)
    assert min(lengths) == 1 and max(lengths) == 16
    # log-uniform: P(turns = 1) = ln 2 / ln 17, P(turns <= 3) = ln 4 / ln 17
    assert abs(lengths.count(1) / 4000 - math.log(2) / math.log(17)) < 0.03
    assert abs(sum(t <= 3 for t in lengths) / 4000 - math.log(4) / math.log(17)) < 0.03


def test_copying_the_token_width_back_always_succeeds() -> None:
    for seed in range(200):
        env = Recall(width=6, max_turns=16)
        first, _ = env.reset(seed=seed)
        rewards = play_by_copying(env, first)
        assert len(rewards) == env.turns and sum(rewards) == pytest.approx(1.0)


def test_step_before_reset_or_after_the_end_is_refused() -> None:
    env = Recall()
    with pytest.raises(AssertionError, match="AST_PRECONDITION"):
        env.step("0 1 1 0 1 0")
    env.reset(seed=0)
    env.turn = env.turns
    with pytest.raises(AssertionError, match="AST_PRECONDITION"):
        env.step("0 1 1 0 1 0")


def test_random_policy_rarely_succeeds() -> None:
    base = random_policy("recall", {}, 4000, turn_words=6, max_turns=16, seed=1)
    # a window is right with chance 1/64 and a quarter of the episodes have one window:
    # success about 0.245 / 64 = 0.4%
    assert 0.001 < base["terminated"] < 0.008
    assert base["mean_episode_len"] < 1.05  # a random window is wrong at once
    # half the bits in place: E[1 / turns] / 2 = 0.21, plus the rare window typed right
    assert 0.19 < base["mean_reward"] < 0.24


def test_recall_steps_are_quick() -> None:
    assert Recall.quick_steps is True
