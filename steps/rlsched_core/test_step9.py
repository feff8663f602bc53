"""Step 9 of design/rlsched_core.md: the finished-turn seam of the placement hook."""

from rlsched.core.buffer import TrajectoryBuffer
from rlsched.core.hooks import FifoPlacement


def test_fifo_hears_of_finished_turns_and_keeps_its_order() -> None:
    buf = TrajectoryBuffer(3, 100)
    t0, t1, t2 = (buf.trajs[t] for t in buf.admit_group(5).tids)
    assert t0.generated_tokens == 0  # Seer's "generated length" starts at zero
    queue = FifoPlacement()
    for traj in (t0, t1, t2):
        queue.push(traj)
    t2.generated_tokens = 90
    assert queue.finished(t2) is None  # FIFO learns nothing from a finished turn
    assert [queue.pop(), queue.pop(), queue.pop(), queue.pop()] == [t0, t1, t2, None]
