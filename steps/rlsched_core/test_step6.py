"""Step 6 of design/rlsched_core.md: batches, retirement and stale groups."""

import pytest

from rlsched.core.buffer import TrajectoryBuffer, TrajState


def _buffer_with_ready_groups(n: int, versions: list[int]) -> TrajectoryBuffer:
    buf = TrajectoryBuffer(2, 100)
    for i in range(n):
        group = buf.admit_group(5)
        for tid in group.tids:
            buf.note_version(buf.trajs[tid], versions[i])
            buf.complete(buf.trajs[tid])
    return buf


def test_take_batch_oldest_first_and_return_it() -> None:
    buf = _buffer_with_ready_groups(3, [0, 0, 1])
    batch = buf.take_batch(2)
    assert [g.gid for g in batch] == [0, 1] and all(g.training for g in batch)
    assert buf.trajs[0].state is TrajState.TRAINING and buf.completed == 2
    assert buf.stale_groups(5) == [buf.groups[2]]  # training groups are never stale candidates
    buf.return_batch(batch)
    assert list(buf.ready) == [0, 1, 2] and buf.completed == 6
    assert buf.trajs[0].state is TrajState.DONE
    with pytest.raises(ValueError, match="VAL_INT_RANGE failed"):
        buf.take_batch(4)


def test_mark_trained_forgets_groups() -> None:
    buf = _buffer_with_ready_groups(2, [0, 0])
    batch = buf.take_batch(1)
    buf.mark_trained(batch)
    assert 0 not in buf.groups and 0 not in buf.trajs and buf.trained_groups == 1
    assert buf.live_groups == 1
    with pytest.raises(AssertionError, match="AST_PRECONDITION"):
        buf.mark_trained([buf.groups[1]])  # not in a batch


def test_stale_groups_and_drop() -> None:
    buf = _buffer_with_ready_groups(2, [0, 2])
    running = buf.admit_group(5)
    buf.note_version(buf.trajs[running.tids[0]], 1)
    stale = buf.stale_groups(2)
    assert [g.gid for g in stale] == [0, 2]
    trajs = buf.drop_group(stale[0])
    assert all(t.state is TrajState.DROPPED for t in trajs)
    assert 0 not in buf.groups and list(buf.ready) == [1] and buf.completed == 2
    buf.drop_group(stale[1])
    assert buf.dropped_groups == 2 and buf.stale_groups(2) == []
    assert buf.admitted_groups == buf.trained_groups + buf.dropped_groups + buf.live_groups


def test_the_ready_groups_with_the_oldest_weights_train_first() -> None:
    """Earliest deadline first: the staleness bound drops the oldest groups first, so they
    train first; equal versions keep their completion order."""
    buf = _buffer_with_ready_groups(4, [2, 1, 2, 1])
    assert [g.gid for g in buf.take_batch(3)] == [1, 3, 0]
    assert list(buf.ready) == [2]
