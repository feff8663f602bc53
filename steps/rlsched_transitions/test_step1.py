"""Step 1 of design/rlsched_transitions.md: expand and weight sync."""

from core_parts import core_parts, release

from rlsched.core.commands import Reload, SyncWeights
from rlsched.core.machine import Scheduler
from rlsched.core.transitions import ShrinkOp
from rlsched.pool import DeviceMode


def _parts() -> Scheduler:
    """4 GPUs (timeshare, train = GPUs 2 and 3), one group of 4 trajectories on ranks 0..3."""
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
    parts.buffer.admit_group(10)
    for tid in range(4):
        parts.router.dispatch(parts.buffer.trajs[tid], tid)
    parts.ctx.out.clear()
    return parts


def test_shrink_record() -> None:
    op = ShrinkOp((1,), (2, 3), {2, 3})
    assert op.offload_sent == set()


def test_expand_syncs_when_behind_and_finishes_when_both_done() -> None:
    parts = _parts()
    parts.router.abort_rank(3)
    release(parts, 3, 0)
    parts.pool.shrink_sampler([3])
    parts.pool.mark_offloaded(3)
    parts.ctx.version = 1
    parts.ctx.out.clear()
    parts.transitions.begin_expand((3,))
    op_id = parts.transitions.dev_op[3]
    assert parts.ctx.out == [Reload(op_id, (3,)), SyncWeights(1, (3,))]
    parts.transitions.reloaded[3] = True
    parts.transitions.try_finish_expand(3)
    assert parts.pool.mode(3) is DeviceMode.EXPANDING  # weights still old
    parts.transitions.dev_version[3] = 1
    parts.transitions.try_finish_expand(3)
    assert parts.pool.mode(3) is DeviceMode.ROLLOUT and parts.router.routable(3)


def test_rollout_devices_are_synced_in_place_once_per_version() -> None:
    parts = _parts()
    parts.ctx.version = 1
    parts.transitions.sync_rollout()
    parts.transitions.sync_rollout()
    assert parts.ctx.out == [SyncWeights(1, (0, 1, 2, 3))]
    assert parts.in_flight == 4  # nothing drained
