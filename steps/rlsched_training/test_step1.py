"""Step 1 of design/rlsched_training.md: training steps and the version."""

import pytest
from core_parts import core_parts, release

from rlsched.core.commands import Train
from rlsched.core.events import TrainingDone
from rlsched.core.machine import Scheduler
from rlsched.core.training import TrainOp
from rlsched.pool import DeviceMode


def _trained_ready() -> Scheduler:
    """Timeshare on 4 GPUs (train = 2, 3): one complete group of 4, the training set offloaded."""
    parts = core_parts(
        {
            "devices": {"count": 4, "train": 2},
            "scheduler": {
                "train_batch_size": 4,
                "group_size": 4,
                "staleness": 1,
                "max_tokens": 100,
            },
        }
    )
    parts.turns.backlog.append(10)
    parts.turns.admit()
    parts.turns.dispatch_queued()
    for rid in range(4):
        req = release(parts, rid, 5)
        traj = parts.buffer.trajs[req.tid]
        parts.turns.finish_turn(traj, 5, req.version)
        parts.turns.complete(traj)
    parts.pool.shrink_sampler([2, 3])
    for gpu in (2, 3):
        parts.pool.mark_offloaded(gpu)
    parts.ctx.out.clear()
    return parts


def test_training_takes_a_batch_and_ends() -> None:
    parts = _trained_ready()
    assert TrainOp(1, (2, 3), 0, []).failed is False
    parts.trainer.begin((2, 3))
    (train,) = parts.ctx.out
    assert isinstance(train, Train) and (train.step, train.devices, train.version) == (1, (2, 3), 0)
    assert [s.tid for s in train.samples] == [0, 1, 2, 3]
    assert all(s.turn_versions == (0,) for s in train.samples) and parts.training
    parts.trainer.end(parts.trainer.op)
    assert not parts.training and parts.pool.gpus_in(DeviceMode.OFFLOADED) == (2, 3)


def test_a_successful_step_moves_the_version_a_failed_one_returns_the_batch() -> None:
    parts = _trained_ready()
    parts.trainer.begin((2, 3))
    assert parts.trainer.finish(TrainingDone(1.0, 7, 1)) is None and parts.stats.ignored_events == 1
    assert parts.trainer.finish(TrainingDone(1.0, 1, 1, ok=False)) is None
    assert (
        list(parts.buffer.ready) == [0]
        and parts.stats.train_steps_failed == 1
        and parts.ctx.version == 0
    )
    parts.trainer.begin((2, 3))
    with pytest.raises(ValueError, match="VAL_INT_RANGE failed"):
        parts.trainer.finish(TrainingDone(2.0, 2, 5))
    op = parts.trainer.finish(TrainingDone(2.0, 2, 1))
    assert op is not None and op.step == 2 and parts.ctx.version == 1
    assert parts.stats.train_steps == 1 and parts.buffer.trained_groups == 1 and not parts.training
