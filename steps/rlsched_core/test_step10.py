"""Step 10 of design/rlsched_core.md: the fault events (an environment that raised, a
replaced worker)."""

import dataclasses

import pytest

from rlsched.core.events import EnvStepFailed, EnvStepTimedOut, Event, WorkerLost, WorkerRecovered


def test_an_environment_failure_is_its_own_event() -> None:
    failed = EnvStepFailed(3.0, 7, 2)
    assert isinstance(failed, Event) and (failed.tid, failed.turn) == (7, 2)
    assert [f.name for f in dataclasses.fields(EnvStepFailed)] == ["time", "tid", "turn"]
    assert failed != EnvStepTimedOut(3.0, 7, 2) and not isinstance(failed, EnvStepTimedOut)
    assert not hasattr(failed, "__dict__")
    with pytest.raises(dataclasses.FrozenInstanceError):
        failed.tid = 8


def test_a_recovered_worker_names_its_device() -> None:
    recovered = WorkerRecovered(9.0, 1)
    assert isinstance(recovered, Event) and recovered.device == 1
    assert [f.name for f in dataclasses.fields(WorkerRecovered)] == ["time", "device"]
    assert recovered != WorkerLost(9.0, 1) and not hasattr(recovered, "__dict__")
