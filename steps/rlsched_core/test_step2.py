"""Step 2 of design/rlsched_core.md: the events of the pool path."""

import dataclasses

from rlsched.core.events import (
    Event,
    OffloadDone,
    ReloadDone,
    TrainingDone,
    WeightsSynced,
    WorkerLost,
)


def test_training_done_defaults_to_success() -> None:
    assert TrainingDone(5.0, 1, 1).ok is True
    assert TrainingDone(5.0, 1, 1, ok=False).ok is False


def test_device_events() -> None:
    lost = WorkerLost(1.0, 3)
    assert isinstance(lost, Event) and lost.device == 3 and not hasattr(lost, "__dict__")
    for cls in (OffloadDone, ReloadDone):
        event = cls(1.0, 3, 9)
        assert isinstance(event, Event) and (event.device, event.op_id) == (3, 9)
        assert not hasattr(event, "__dict__")
        assert [f.name for f in dataclasses.fields(cls)] == ["time", "device", "op_id"]
    synced = WeightsSynced(2.0, 4, 7)
    assert (synced.device, synced.version) == (4, 7)
    assert [f.name for f in dataclasses.fields(WeightsSynced)] == ["time", "device", "version"]
    assert dataclasses.fields(TrainingDone)[0].name == "time"
