"""Step 7 of design/rlsched_core.md: the placement (ordering) hook."""

from rlsched.core.buffer import TrajectoryBuffer, TrajState
from rlsched.core.hooks import FifoPlacement


def test_fifo_with_migrated_turns_first_and_lazy_skips() -> None:
    buf = TrajectoryBuffer(4, 100)
    group = buf.admit_group(5)
    t0, t1, t2, t3 = (buf.trajs[t] for t in group.tids)
    queue = FifoPlacement()
    assert queue.pop() is None and len(queue) == 0
    for t in (t0, t1, t2):
        queue.push(t)
    queue.push(t3, front=True)
    t1.state = TrajState.DROPPED
    assert len(queue) == 4
    assert [queue.pop(), queue.pop(), queue.pop(), queue.pop()] == [t3, t0, t2, None]


def test_keys_limit_what_a_rank_behind_the_trainer_may_take() -> None:
    """Turns are keyed by their group's oldest version (None: not started). `pop(max_key)`
    returns the oldest-keyed turn with a key <= max_key; `pop()` any, groups not started last."""
    buf = TrajectoryBuffer(1, 100)
    fresh, old, older, migrated = (buf.trajs[buf.admit_group(5).tids[0]] for _ in range(4))
    queue = FifoPlacement()
    queue.push(fresh)
    queue.push(old, key=3)
    queue.push(older, key=1)
    queue.push(migrated, front=True, key=3)
    assert len(queue) == 4
    assert queue.pop(max_key=0) is None  # nothing started at version 0 or older
    assert queue.pop(max_key=2) is older
    assert queue.pop(max_key=3) is migrated  # the front push waited longest
    assert queue.pop() is old and queue.pop() is fresh and queue.pop() is None
    assert len(queue) == 0 and queue._queues == {}


def test_the_oldest_group_version_goes_first_and_fifo_within_it() -> None:
    """v0.9.0: a turn of a group that started on older weights goes before turns that waited
    longer under newer keys, and a group not started yet (None) after every started one."""
    buf = TrajectoryBuffer(1, 100)
    trajs = [buf.trajs[buf.admit_group(5).tids[0]] for _ in range(6)]
    queue = FifoPlacement()
    for traj, key in zip(trajs, (None, 4, 2, None, 2, 3)):
        queue.push(traj, key=key)
    migrated = buf.trajs[buf.admit_group(5).tids[0]]
    queue.push(migrated, front=True, key=3)
    order = [queue.pop() for _ in range(8)]
    assert order == [trajs[2], trajs[4], migrated, trajs[5], trajs[1], trajs[0], trajs[3], None]
    for traj, key in zip(trajs, (None, 4, 2, None, 2, 3)):
        queue.push(traj, key=key)
    # a rank behind the trainer at version 3: the oldest first among keys <= 3, never None
    assert [queue.pop(max_key=3) for _ in range(4)] == [trajs[2], trajs[4], trajs[5], None]
