"""Step 2 of design/rlsched_training.md: stale drops and lost training devices."""

from core_parts import core_parts, release

from rlsched.core.commands import Abort, DropStale
from rlsched.core.events import TrainingDone
from rlsched.core.machine import Scheduler
from rlsched.pool import DeviceMode


def _running() -> Scheduler:
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
    parts.ctx.out.clear()
    return parts


def test_drop_stale_aborts_and_forgets() -> None:
    parts = _running()
    parts.ctx.version = 2  # the group (version 0) is now beyond staleness 1
    parts.trainer.drop_stale()
    assert parts.ctx.out[:4] == [Abort(0, (0,)), Abort(1, (1,)), Abort(2, (2,)), Abort(3, (3,))]
    assert parts.ctx.out[-1] == DropStale((0,), (0, 1, 2, 3))
    assert parts.stats.stale_groups_dropped == 1 and parts.stats.stale_requests_aborted == 4
    assert parts.buffer.live_groups == 0 and parts.in_flight == 4  # answers still expected


def test_a_lost_training_device_fails_the_step_and_the_last_one_ends_it() -> None:
    parts = _running()
    for rid in range(4):
        req = release(parts, rid, 5)
        traj = parts.buffer.trajs[req.tid]
        parts.turns.finish_turn(traj, 5, req.version)
        parts.turns.complete(traj)
    parts.pool.shrink_sampler([2, 3])
    for gpu in (2, 3):
        parts.pool.mark_offloaded(gpu)
    parts.trainer.begin((2, 3))
    parts.pool.mark_lost(3)
    parts.trainer.lose_device()
    assert list(parts.buffer.ready) == [0] and parts.trainer.op.failed and parts.training
    assert parts.trainer.finish(TrainingDone(3.0, 1, 1)) is None  # too late: the step failed
    assert parts.ctx.version == 0 and parts.pool.mode(2) is DeviceMode.OFFLOADED
    parts.trainer.begin((2,))
    parts.pool.mark_lost(2)
    parts.trainer.lose_device()
    assert not parts.training and parts.stats.train_steps_failed == 2
