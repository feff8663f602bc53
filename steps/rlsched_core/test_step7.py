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
