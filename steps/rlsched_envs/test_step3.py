"""Step 3 of design/rlsched_envs.md: Vault and the random-policy baseline."""

import random

import pytest

from rlsched.envs.base import Env, make_env, resolve_env
from rlsched.envs.vault import Vault, random_policy


def solve(env: Vault, first: list[str]) -> int:
    """The policy of the module docstring: keep the right prefix, flip the first wrong bit."""
    guess = list(first)
    while True:
        step = env.step(" ".join(guess))
        if step.done:
            assert step.terminated and step.observation == "open"
            return env.turns
        right = int(step.observation[1:])
        guess[right] = "1" if guess[right] == "0" else "0"


def test_vault_steps_are_quick() -> None:
    assert Vault.quick_steps is True


def test_registered_and_a_protocol_env() -> None:
    assert resolve_env("vault") is Vault
    env = make_env("vault", {"length": 5, "max_turns": 3})
    assert isinstance(env, Env) and env.actions == ("0", "1")
    assert set(env.actions) <= set(env.words)
    with pytest.raises(ValueError, match="length"):
        Vault(length=0)


def test_feedback_counts_the_right_prefix() -> None:
    env = Vault(length=4, max_turns=5)
    assert env.reset(seed=3)[0] == "vault"
    code = list(env.code)
    wrong = ["1" if b == "0" else "0" for b in code]
    step = env.step(" ".join(code[:2] + wrong[2:]))
    assert (step.observation, step.reward, step.done) == ("c2", 0.0, False)
    assert env.step("junk " + " ".join(wrong)).observation == "c0"
    assert env.step(" ".join(code[:3])).observation == "c3"  # too short: not open
    step = env.step("x " + " ".join(code) + " 1 1")
    assert step.observation == "open" and step.terminated
    assert step.reward == pytest.approx(1 - 3 / 10)
    same = Vault(length=4)
    same.reset(seed=3)
    assert same.code == env.code  # one GRPO group, one code


def test_episode_ends_after_max_turns() -> None:
    env = Vault(length=3, max_turns=2)
    env.reset(seed=0)
    wrong = " ".join("1" if b == "0" else "0" for b in env.code)
    assert not env.step(wrong).done
    last = env.step(wrong)
    assert last.truncated and not last.terminated and last.reward == 0.0
    env.reset(seed=0)
    code = list(env.code)
    flipped = "1" if code[2] == "0" else "0"
    assert env.step(wrong).reward == 0.0  # c0: no reward before the last guess
    last = env.step(" ".join(code[:2] + [flipped]))  # c2 at the last guess: credit for 2 of 3
    assert last.truncated and last.reward == pytest.approx(0.5 * 2 / 3)


def test_the_flip_policy_always_opens_within_length_plus_one() -> None:
    rng = random.Random(0)
    lengths = []
    for seed in range(300):
        env = Vault(length=7, max_turns=8)
        env.reset(seed=seed)
        lengths.append(solve(env, [rng.choice("01") for _ in range(7)]))
    assert max(lengths) <= 8 and min(lengths) == 1
    assert 4.0 < sum(lengths) / len(lengths) < 5.0  # 1 + 7/2 on average: long-tailed


def test_random_policy_rarely_opens() -> None:
    base = random_policy("vault", {}, 2000, turn_words=7, max_turns=8, seed=1)
    assert base["episodes"] == 2000
    assert 0.04 < base["terminated"] < 0.085  # 1 - (127/128)^8 = 6.1%
    assert base["mean_episode_len"] > 7.5
    again = random_policy("vault", {}, 2000, turn_words=7, max_turns=8, seed=1)
    assert again == base
    grid = random_policy("grid", {"size": 4, "max_steps": 24}, 400, 1, 24, seed=2)
    assert 0.4 < grid["terminated"] < 0.7  # a random walk reaches the goal about half the time


def test_marks_feedback_lines_up_with_the_guess() -> None:
    env = Vault(length=4, max_turns=3, feedback="marks")
    env.reset(seed=3)
    code = list(env.code)
    wrong = ["1" if b == "0" else "0" for b in code]
    assert env.step(" ".join(code[:1] + wrong[1:])).observation == "y n u u"
    assert env.step(" ".join(wrong)).observation == "n u u u"
    assert env.step(" ".join(code)).observation == "open"
    with pytest.raises(ValueError, match="feedback"):
        Vault(feedback="hints")
    assert set(Vault.words) >= {"y", "n", "u", "c0", "open"}
