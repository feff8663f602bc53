"""Step 1 of design/rlsched_envs.md: the protocol, the step result, latency and the registry."""

import random

import pytest

from rlsched.envs.base import EnvStep, StepLatency, resolve_env


def test_env_step_done_is_terminated_or_truncated() -> None:
    assert EnvStep("o", 1.0, True, False).done
    assert EnvStep("o", 0.0, False, True).done
    assert not EnvStep("o", 0.0, False, False).done


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("nope", "unknown environment 'nope'"),
        ("no_such_pkg.mod:Env", "cannot import environment"),
        ("rlsched.envs.base:StepLatency", "lacks reset, step, words, actions"),
    ],
)
def test_registry_errors_name_the_environment(name: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        resolve_env(name)


def test_latency_fixed_lognormal_and_zero() -> None:
    rng = random.Random(0)
    assert StepLatency("fixed", 0.25).sample(rng) == 0.25
    assert StepLatency("lognormal", 0.0).sample(rng) == 0.0
    draws = [StepLatency("lognormal", 0.1, 0.5).sample(rng) for _ in range(4000)]
    assert min(draws) > 0 and abs(sum(draws) / len(draws) - 0.1) < 0.01
    assert max(draws) > 3 * 0.1  # a long tail, not a constant
    with pytest.raises(ValueError, match="VAL_IN_SET"):
        StepLatency("uniform", 0.1).sample(rng)
