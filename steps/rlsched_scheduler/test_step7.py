"""Step 7 of design/rlsched_scheduler.md: a stall is named the moment nothing can make
progress, and a recovery ends it."""

import dataclasses

from rlsched.config import RlschedConfig
from rlsched.core.commands import (
    Dispatch,
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
    WorkerLost,
    WorkerRecovered,
)
from rlsched.core.machine import Scheduler
from rlsched.pool import DeviceMode


def _sched() -> Scheduler:
    """The bundled run's layout: two GPUs, GPU 1 trains (timeshare)."""
    return Scheduler(
        RlschedConfig.model_validate(
            {
                "devices": {"count": 2, "train": 1},
                "scheduler": {
                    "train_batch_size": 4,
                    "group_size": 2,
                    "max_turns": 2,
                    "max_tokens": 200,
                    "staleness": 1,
                },
            }
        )
    )


def _answers(commands, t: float, lose_training: bool) -> list[Event]:
    out: list[Event] = []
    for c in commands:
        if isinstance(c, LoadPrompts):
            out.append(PromptsLoaded(t, c.load_id, (20,) * c.count))
        elif isinstance(c, Dispatch):
            out.append(RequestFinished(t, c.rid, min(10, c.max_new_tokens)))
        elif isinstance(c, StartEnvStep):
            out.append(EnvStepDone(t, c.tid, c.turn, 5, False))
        elif isinstance(c, Offload):
            out.extend(OffloadDone(t, d, c.op_id) for d in c.devices)
        elif isinstance(c, Reload):
            out.extend(ReloadDone(t, d, c.op_id) for d in c.devices)
        elif isinstance(c, SyncWeights):
            out.extend(WeightsSynced(t, d, c.version) for d in c.devices)
        elif isinstance(c, Train):
            if lose_training:  # the training worker dies: the shell reports the loss
                out.append(WorkerLost(t, c.devices[0]))
            else:
                out.append(TrainingDone(t, c.step, c.version + 1))
    return out


def _run(sched: Scheduler, lose_first_step: bool, steps: int, limit: int = 5000) -> str | None:
    """A FIFO shell; returns the stall line when its queue runs dry before `steps` steps."""
    queue: list[Event] = []
    t = 0.0
    commands = sched.handle(Started(0.0))
    lose = lose_first_step
    for _ in range(limit):
        if sched.stats.train_steps >= steps:
            return None
        new = _answers(commands, t, lose)
        if any(isinstance(e, WorkerLost) for e in new):
            lose = False
        queue.extend(new)
        if not queue:
            return sched.stall()
        assert sched.stall() is None or all(
            isinstance(e, (WeightsSynced, OffloadDone, ReloadDone)) for e in queue
        )
        t += 1.0
        commands = sched.handle(dataclasses.replace(queue.pop(0), time=t))
        sched.check_invariants()
    raise AssertionError("no stall and no progress")


def test_no_stall_while_answers_are_owed() -> None:
    sched = _sched()
    assert _run(sched, lose_first_step=False, steps=3) is None
    assert sched.stall() is None or sched.in_flight == 0


def test_losing_the_only_training_gpu_is_a_stall_named_at_once_and_recovery_ends_it() -> None:
    sched = _sched()
    line = _run(sched, lose_first_step=True, steps=1)
    assert line is not None and "lost devices [1]" in line and "rollout [0]" in line
    assert sched.stats.train_steps_failed == 1 and sched.stats.devices_lost == 1
    assert "\n" not in line and sched.pool.mode(1) is DeviceMode.LOST
    commands = sched.handle(WorkerRecovered(sched.now + 1, 1))
    assert sched.stall() is None and sched.stats.devices_recovered == 1
    assert [type(c).__name__ for c in commands] == ["Train"]  # the ready batch trains there
    t = sched.now
    queue = _answers(commands, t, lose_training=False)
    while sched.stats.train_steps < 3:
        assert queue, sched.stall()
        t += 1.0
        commands = sched.handle(dataclasses.replace(queue.pop(0), time=t))
        queue.extend(_answers(commands, t, lose_training=False))
        sched.check_invariants()
    assert sched.version == 3


def test_finished_work_is_no_stall() -> None:
    sched = _sched()
    commands = sched.handle(Started(0.0))
    load = next(c for c in commands if isinstance(c, LoadPrompts))
    sched.handle(PromptsLoaded(1.0, load.load_id, ()))  # the dataset is empty
    assert sched.stall() is None and sched.in_flight == 0
