"""Step 2 of design/rlsched_transitions.md: the shrink transaction and its rollback."""

import pytest
from core_parts import core_parts, release

from rlsched.core.commands import Abort, Offload, Reload
from rlsched.core.machine import Scheduler
from rlsched.core.transitions import ShrinkOp
from rlsched.pool import DeviceMode


def _running() -> Scheduler:
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
    parts.turns.backlog.append(10)
    parts.turns.admit()
    parts.turns.dispatch_queued()
    parts.ctx.out.clear()
    return parts


def test_shrink_aborts_then_offloads_when_drained() -> None:
    parts = _running()
    parts.transitions.begin_shrink((2, 3))
    assert parts.ctx.out == [Abort(2, (2,)), Abort(3, (3,))]
    assert parts.shrinking == (2, 3) and parts.stats.shrinks == 1
    parts.ctx.out.clear()
    req = release(parts, 2, 0)
    parts.turns.requeue(parts.buffer.trajs[req.tid], req, 0)
    (offload,) = parts.ctx.out
    assert offload == Offload(offload.op_id, (2,)) and parts.transitions.dev_op[2] == offload.op_id


def test_a_drained_shrinking_rank_is_offloaded_the_moment_it_frees() -> None:
    parts = _running()
    parts.pool.shrink_sampler([1])
    parts.transitions.shrink = ShrinkOp((1,), (1,), {1})
    with pytest.raises(AssertionError, match="AST_PRECONDITION"):
        parts.transitions.offload_rank(1)  # request 1 is still on rank 1
    release(parts, 1, 0)
    op_id = parts.transitions.dev_op[1]
    assert op_id is not None and parts.ctx.out == [Offload(op_id, (1,))]
    assert parts.transitions.shrink.offload_sent == {1}


def test_rollback_returns_undrained_and_reloads_offloaded() -> None:
    parts = _running()
    parts.transitions.begin_shrink((2, 3))
    release(parts, 2, 0)  # rank 2 drained -> Offload sent
    release(parts, 3, 0)  # rank 3 drained -> Offload sent
    parts.pool.mark_offloaded(2)  # rank 2's offload finished, rank 3's still running
    parts.ctx.out.clear()
    parts.transitions.rollback_shrink()
    assert parts.shrinking == () and parts.stats.shrinks_rolled_back == 1
    (reload,) = parts.ctx.out
    assert parts.pool.mode(2) is DeviceMode.EXPANDING and reload == Reload(reload.op_id, (2,))
    assert (
        parts.transitions.dev_op[2] == reload.op_id and parts.transitions.dev_op[3] != reload.op_id
    )
    assert parts.reload_pending == frozenset({3})
