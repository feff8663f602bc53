"""Step 6 of design/rlsched_runtime.md: the environment pool."""

import time

import pytest

from rlsched.envs.base import StepLatency
from rlsched.runtime.workers import EnvPool


def test_reset_step_close() -> None:
    pool = EnvPool("grid", {"size": 3, "max_steps": 4}, StepLatency("fixed", 0.0), seed=0)
    observations = pool.reset([10, 11], [5, 5])
    assert observations[0] == observations[1] and observations[0].startswith("grid 3 goal")
    assert pool.ping() == 2
    step = pool.step(10, "east")
    assert isinstance(step.reward, float)
    assert pool.close([10, 99]) == 1 and pool.ping() == 1
    with pytest.raises(ValueError, match="VAL_IN_SET"):
        pool.step(10, "east")


def test_latency_is_applied_and_faults_propagate() -> None:
    pool = EnvPool("grid", {}, StepLatency("fixed", 0.05), seed=0)
    pool.reset([0], [1])
    started = time.monotonic()
    pool.step(0, "north")
    assert time.monotonic() - started >= 0.05
    faulty = EnvPool("faulty-grid", {"fail_prob": 1.0}, StepLatency("fixed", 0.0), seed=0)
    faulty.reset([0], [1])
    with pytest.raises(RuntimeError, match="injected environment fault"):
        faulty.step(0, "north")
    with pytest.raises(ValueError, match="VAL_LEN_RANGE"):
        pool.reset([1, 2], [3])
