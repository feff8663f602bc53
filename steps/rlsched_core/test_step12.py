"""Step 12 of design/rlsched_core.md: a queued turn refiled under its group's new version."""

from rlsched.core.buffer import TrajectoryBuffer
from rlsched.core.hooks import FifoPlacement


def test_a_refiled_turn_keeps_its_place_and_leaves_nothing_behind() -> None:
    """Three turns of groups not started; the middle one's group starts on weights 2: a rank
    behind the trainer at version 2 may now take it, and only it; pop order elsewhere is
    unchanged and the entry it left under None is never served again."""
    buf = TrajectoryBuffer(1, 100)
    first, middle, last = (buf.trajs[buf.admit_group(5).tids[0]] for _ in range(3))
    early = buf.trajs[buf.admit_group(5).tids[0]]
    queue = FifoPlacement()
    queue.push(first)
    queue.push(middle)
    queue.push(last)
    queue.push(early, key=2)  # queued after them, but its group already ran on weights 2
    assert queue.pop(max_key=2) is early
    queue.push(early, key=2)
    queue.refile(middle, None)  # refiled where it is: its place in line does not change
    queue.refile(middle, 2)
    assert len(queue) == 4  # a move, not a new entry
    # under key 2 the refiled turn waited longer than `early`, pushed after it
    assert queue.pop(max_key=2) is middle and queue.pop(max_key=2) is early
    assert queue.pop(max_key=2) is None
    assert [queue.pop(), queue.pop(), queue.pop()] == [first, last, None]
    assert len(queue) == 0 and queue._queues == {}


def test_refiling_twice_and_refiling_what_is_not_queued() -> None:
    """A turn refiled twice is served once, from its last key; refiling a popped turn or one
    never pushed changes nothing; a turn pushed again after a pop is served again."""
    buf = TrajectoryBuffer(1, 100)
    a, b, c = (buf.trajs[buf.admit_group(5).tids[0]] for _ in range(3))
    queue = FifoPlacement()
    queue.push(a, front=True)
    queue.push(b)
    queue.refile(a, 3)
    queue.refile(a, 1)
    queue.refile(c, 1)  # never pushed
    assert len(queue) == 2
    assert queue.pop(max_key=2) is a
    queue.refile(a, 0)  # popped: not queued here any more
    assert queue.pop(max_key=3) is None
    queue.push(a, key=3)
    assert [queue.pop(), queue.pop(), queue.pop()] == [a, b, None]


def test_an_entry_a_refile_left_behind_is_never_served() -> None:
    """The entry left under the old key stays in its heap but is stale (its stamp is no longer
    the trajectory's live one): a pop that reaches it first skips it."""
    buf = TrajectoryBuffer(1, 100)
    a = buf.trajs[buf.admit_group(5).tids[0]]
    queue = FifoPlacement()
    queue.push(a, key=1)
    queue.refile(a, 3)  # the hook does not care in which direction a key moves
    assert queue.pop(max_key=2) is None  # only the stale entry under 1 is eligible
    assert queue.pop() is a and queue.pop() is None
