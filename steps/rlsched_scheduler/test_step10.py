"""Step 10 of design/rlsched_scheduler.md: the pump and `handle`, end to end for every mode."""

import dataclasses
import subprocess
import sys

import pytest

from rlsched.config import RlschedConfig
from rlsched.core.commands import (
    Dispatch,
    InitialLayout,
    LoadPrompts,
    Offload,
    Reload,
    StartEnvStep,
    SyncWeights,
    Train,
)
from rlsched.core.events import (
    EnvStepDone,
    Event,
    OffloadDone,
    PromptsLoaded,
    ReloadDone,
    RequestFinished,
    Started,
    TrainingDone,
    WeightsSynced,
)
from rlsched.core.machine import Scheduler


def _cfg(mode: str) -> RlschedConfig:
    devices = {"count": 4} if mode == "colocate" else {"count": 4, "train": 2}
    return RlschedConfig.model_validate(
        {
            "devices": devices,
            "scheduler": {
                "mode": mode,
                "train_batch_size": 4,
                "group_size": 2,
                "max_turns": 2,
                "max_tokens": 200,
                "staleness": 0 if mode == "colocate" else 1,
            },
        }
    )


def _drive(sched: Scheduler, steps: int) -> int:
    """A FIFO shell: answer every command in order until `steps` training steps are done."""
    queue: list[Event] = []
    handled = 0
    t = 0.0
    commands = sched.handle(Started(0.0))
    while sched.stats.train_steps < steps:
        for c in commands:
            if isinstance(c, LoadPrompts):
                queue.append(PromptsLoaded(t, c.load_id, (20,) * c.count))
            elif isinstance(c, Dispatch):
                queue.append(RequestFinished(t, c.rid, min(10, c.max_new_tokens)))
            elif isinstance(c, StartEnvStep):
                queue.append(EnvStepDone(t, c.tid, c.turn, 5, False))
            elif isinstance(c, Offload):
                queue.extend(OffloadDone(t, d, c.op_id) for d in c.devices)
            elif isinstance(c, Reload):
                queue.extend(ReloadDone(t, d, c.op_id) for d in c.devices)
            elif isinstance(c, SyncWeights):
                queue.extend(WeightsSynced(t, d, c.version) for d in c.devices)
            elif isinstance(c, Train):
                queue.append(TrainingDone(t, c.step, c.version + 1))
        assert queue, "the scheduler stalled"
        t += 1.0
        event = queue.pop(0)
        commands = sched.handle(dataclasses.replace(event, time=t))
        sched.check_invariants()
        handled += 1
    return handled


@pytest.mark.parametrize("mode", ["colocate", "disaggregated", "timeshare"])
def test_every_mode_trains_repeatedly(mode: str) -> None:
    sched = Scheduler(_cfg(mode))
    _drive(sched, steps=3)
    assert sched.version == 3 and sched.buffer.trained_groups == 6
    assert sched.stats.ignored_events == 0


def test_first_commands_and_boundary_checks() -> None:
    sched = Scheduler(_cfg("timeshare"))
    assert sched.handle(Started(1.0)) == [InitialLayout((0, 1, 2, 3), ()), LoadPrompts(0, 4)]
    with pytest.raises(ValueError, match="VAL_FLOAT_RANGE failed"):
        sched.handle(Started(0.5))  # time goes back
    with pytest.raises(TypeError, match="VAL_NOT_NONE failed"):
        sched.handle(Event(2.0))  # not a concrete event
    assert sched.stats.events == 1
    sched.check_invariants()


def test_the_core_imports_no_runtime_framework() -> None:
    code = (
        "import sys, rlsched.core, rlsched.core.machine, rlsched.core.policies\n"
        "bad = {'ray', 'torch', 'asyncio'} & set(sys.modules)\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_rejected_event_leaves_the_state_unchanged() -> None:
    """The clock is not advanced and nothing is counted when a handler rejects the event."""
    sched = Scheduler(_cfg("timeshare"))
    sched.handle(Started(1.0))
    out = sched.handle(PromptsLoaded(2.0, 0, (20, 20)))
    rid = next(c for c in out if isinstance(c, Dispatch)).rid
    events = sched.stats.events
    with pytest.raises(ValueError, match="VAL_INT_RANGE failed"):
        sched.handle(RequestFinished(9.0, rid, 10_000))  # more tokens than the budget
    assert sched.now == 2.0 and sched.stats.events == events and sched.in_flight == 4
    out = sched.handle(RequestFinished(3.0, rid, 5))  # earlier than the rejected event: fine
    assert [c for c in out if isinstance(c, StartEnvStep)] == [StartEnvStep(0, 0, 3.0 + 600.0)]
    assert sched.now == 3.0 and sched.stats.events == events + 1
