"""Step 2 of design/rlsched_seer.md: pops, the bounded FIFO share and learned estimates."""

from rlsched.core.buffer import Trajectory, TrajectoryBuffer, TrajState
from rlsched.core.seer import ContextAwarePlacement


def _groups(buf: TrajectoryBuffer, count: int, size: int) -> list[list[Trajectory]]:
    return [[buf.trajs[t] for t in buf.admit_group(5).tids] for _ in range(count)]


def test_probes_then_unknown_then_longest_estimate_first() -> None:
    buf = TrajectoryBuffer(3, 1000)
    (a0, a1, a2), (b0, b1, b2), (c0, c1, c2) = _groups(buf, 3, 3)
    queue = ContextAwarePlacement(fifo_every=100)
    for traj in (a0, a1, a2, b0, b1, b2):
        queue.push(traj)
    assert [queue.pop(), queue.pop()] == [a0, b0]  # one probe per group first
    a0.generated_tokens, b0.generated_tokens = 30, 200
    queue.finished(a0)
    queue.finished(b0)  # b's queued samples re-rank ahead of a's
    for traj in (c0, c1, c2):
        queue.push(traj)
    order = [queue.pop() for _ in range(7)]
    assert order == [c0, c1, c2, b1, b2, a1, a2]  # probe, unknown, then 200 before 30
    assert queue.pop() is None and len(queue) == 0


def test_estimate_only_grows_and_equal_estimates_stay_fifo() -> None:
    buf = TrajectoryBuffer(3, 1000)
    (a0, a1, a2), (b0, b1, b2) = _groups(buf, 2, 3)
    queue = ContextAwarePlacement(fifo_every=100)
    for traj in (a1, a2, b1, b2):
        traj.turn = 1  # not probes: push order puts a1, b1 as probes otherwise
    queue.push(a0)
    queue.push(b0)
    assert queue.pop() is a0 and queue.pop() is b0
    a0.generated_tokens = b0.generated_tokens = 50
    queue.finished(a0)
    queue.finished(b0)
    a0.generated_tokens = 10
    queue.finished(a0)  # shorter than the estimate: ignored
    assert queue._groups[a0.gid].estimate == 50
    for traj in (a1, b1, a2, b2):
        queue.push(traj)
    assert [queue.pop() for _ in range(4)] == [a1, b1, a2, b2]


def test_version_keys_are_respected() -> None:
    buf = TrajectoryBuffer(1, 1000)
    fresh, old, older = (group[0] for group in _groups(buf, 3, 1))
    queue = ContextAwarePlacement(fifo_every=100)
    queue.push(fresh)
    queue.push(old, key=3)
    queue.push(older, key=1)
    assert queue.pop(max_key=0) is None
    assert queue.pop(max_key=2) is older
    assert queue.pop(max_key=3) is old
    assert queue.pop(max_key=5) is None and queue.pop() is fresh


def test_a_starving_turn_is_served_within_its_fifo_position_times_the_share() -> None:
    buf = TrajectoryBuffer(1, 10**6)
    queue = ContextAwarePlacement(fifo_every=4)

    def queued(length: int) -> Trajectory:
        traj = _groups(buf, 1, 1)[0][0]
        traj.turn, traj.generated_tokens = 1, length
        queue.push(traj)
        queue.finished(traj)  # its group's estimate: `length`
        return traj

    short = queued(1)  # known to be short: last by estimate
    for pops, step in enumerate(range(100), start=1):  # longer work keeps arriving
        queued(1000 + step)
        traj = queue.pop()
        traj.state = TrajState.RUNNING
        if traj is short:
            break
    assert traj is short and pops == 4  # first in FIFO order: the first FIFO pick serves it


def test_dropped_turns_are_skipped_and_counted_out() -> None:
    buf = TrajectoryBuffer(2, 1000)
    t0, t1 = _groups(buf, 1, 2)[0]
    queue = ContextAwarePlacement(fifo_every=2)
    queue.push(t0)
    queue.push(t1)
    t0.state = TrajState.DROPPED
    assert len(queue) == 2
    assert queue.pop() is t1 and queue.pop() is None and len(queue) == 0


def test_unknown_groups_run_by_progress_and_a_finish_makes_a_group_known() -> None:
    buf = TrajectoryBuffer(3, 10**6)
    (a0, a1, a2), (b0, b1, b2), (c0, c1, c2) = _groups(buf, 3, 3)
    queue = ContextAwarePlacement(fifo_every=100)
    for traj in (a0, a1, a2, b0, b1, b2, c0, c1, c2):
        queue.push(traj)
    assert [queue.pop() for _ in range(3)] == [a0, b0, c0]  # the probes
    # a's probe ran two chunks, c's one; b's has not reported yet
    for probe, kept in ((a0, 8192), (c0, 4096)):
        probe.state = TrajState.QUEUED
        probe.resume_tokens = kept
        queue.push(probe, front=True)
    assert [queue.pop(), queue.pop()] == [c0, a0]  # probes' chunks first, front order
    # unknown groups: the one known to run longest first, then the others, FIFO among equals
    assert [queue.pop() for _ in range(2)] == [a1, a2]
    # b's probe finishes short: b is known (200) and ranks after c's unknown samples
    b0.generated_tokens = 200
    queue.finished(b0)
    assert queue._groups[b0.gid].estimate == 200 and queue._groups[b0.gid].bound == 200
    assert [queue.pop() for _ in range(4)] == [c1, c2, b1, b2]
    assert queue.pop() is None


def test_a_finish_below_the_bound_still_makes_the_group_known() -> None:
    buf = TrajectoryBuffer(3, 10**6)
    (a0, a1, a2), (b0, b1, b2) = _groups(buf, 2, 3)
    queue = ContextAwarePlacement(fifo_every=100)
    for traj in (a0, a1, a2, b0, b1, b2):
        queue.push(traj)
    assert [queue.pop() for _ in range(3)] == [a0, b0, a1]
    a0.state = TrajState.QUEUED
    a0.resume_tokens = 5000
    queue.push(a0, front=True)
    assert queue.pop() is a0
    a1.generated_tokens = 300  # a's second sample finishes below what the probe reached
    queue.finished(a1)
    info = queue._groups[a0.gid]
    assert (info.estimate, info.bound) == (300, 5000)
    assert queue.priority(a2) == (0, -5000)
    assert [queue.pop(), queue.pop()] == [b1, b2]  # unknown b before known a
    assert queue.pop() is a2


def test_probes_are_served_smallest_progress_first() -> None:
    buf = TrajectoryBuffer(2, 10**6)
    (a0, a1), (b0, b1) = _groups(buf, 2, 2)
    queue = ContextAwarePlacement(fifo_every=100)
    for traj in (a0, a1, b0, b1):
        queue.push(traj)
    assert queue.pop() is a0
    # a's probe is back from a chunk; b's has generated nothing yet: b's goes first (Seer: SFS)
    a0.state = TrajState.QUEUED
    a0.resume_tokens = 4096
    queue.push(a0, front=True)
    assert queue.priority(a0) == (-2, 4096) and queue.priority(b0) == (-2, 0)
    assert queue.pop() is b0
    b0.state = TrajState.QUEUED
    b0.resume_tokens = 8192
    queue.push(b0, front=True)  # pushed to the front last, but further along
    assert [queue.pop(), queue.pop()] == [a0, b0]
    assert [queue.pop(), queue.pop()] == [b1, a1]  # unknown groups: b's probe ran further
