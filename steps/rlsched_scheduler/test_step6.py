"""Step 6 of design/rlsched_scheduler.md: the pump and `handle`, end to end for every mode."""

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
    RequestAborted,
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


def test_a_rejected_event_leaves_no_trace() -> None:
    """The clock is not advanced, nothing is counted, and no command of the rejected event is
    returned later, even one its handler had already collected."""
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
    sched.ctx.out.append(LoadPrompts(99, 1))  # as if a handler had collected it, then raised
    with pytest.raises(ValueError):
        sched.handle(RequestAborted(4.0, rid + 1, 10_000))
    assert sched.ctx.out == [] and LoadPrompts(99, 1) not in sched.handle(Started(4.0))


def test_a_group_completed_while_dispatching_is_trained() -> None:
    """One rank with one slot, one group of two. The group's last trajectory completes when its
    idle session is found expired as it leaves the queue, at the end of the pump, with nothing
    left in flight. The pump must decide again (before 0.3.0 nothing ever trained the batch: a
    deadlock the property suite found)."""
    sched = Scheduler(
        RlschedConfig.model_validate(
            {
                "devices": {"count": 2, "train": 1},
                "scheduler": {
                    "mode": "disaggregated",
                    "train_batch_size": 2,
                    "group_size": 2,
                    "staleness": 0,
                    "max_turns": 3,
                    "max_tokens": 100,
                    "env_timeout_s": 4.0,
                    "max_inflight_per_rank": 1,
                },
            }
        )
    )

    def rid_of(commands: list, tid: int) -> int:
        return next(c.rid for c in commands if isinstance(c, Dispatch) and c.tid == tid)

    sched.handle(Started(0.0))
    first = rid_of(sched.handle(PromptsLoaded(0.0, 0, (5,))), 0)
    second = rid_of(sched.handle(RequestFinished(1.0, first, 3)), 1)
    sched.handle(RequestFinished(2.0, second, 3))
    third = rid_of(sched.handle(EnvStepDone(2.2, 0, 0, 2, False)), 0)  # session of tid 0 until 6.2
    out = sched.handle(EnvStepDone(2.5, 1, 0, 2, False))  # tid 1 waits for the slot until 6.5
    assert sched.in_flight == 1 and not any(isinstance(c, Dispatch) for c in out)
    out = sched.handle(RequestFinished(7.0, third, 3))  # both sessions are past their deadlines
    assert sched.stats.env_session_timeouts == 2 and sched.in_flight == 0
    assert any(isinstance(c, Train) for c in out), out
