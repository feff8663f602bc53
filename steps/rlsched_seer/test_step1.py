"""Step 1 of design/rlsched_seer.md: the context-aware queue's priorities and memory."""

import pytest

from rlsched.core.buffer import TrajectoryBuffer, TrajState
from rlsched.core.seer import ContextAwarePlacement


def test_first_pushed_sample_is_the_probe_others_are_unknown() -> None:
    buf = TrajectoryBuffer(3, 100)
    t0, t1, t2 = (buf.trajs[t] for t in buf.admit_group(5).tids)
    queue = ContextAwarePlacement()
    for traj in (t0, t1, t2):
        queue.push(traj)
    assert len(queue) == 3
    assert queue.priority(t0) == (-2, 0)  # the probe's first turn: served first
    assert queue.priority(t1) == queue.priority(t2) == (-1, 0)  # no finished turn yet
    t0.turn = 1
    assert queue.priority(t0) == (-1, 0)  # only the probe's first turn is a probe
    queue._groups[t0.gid].bound = 25
    assert queue.priority(t1) == (-1, -25)  # unknown: by the bound, longest first
    queue._groups[t0.gid].estimate = 20
    queue._groups[t0.gid].bound = 40
    assert queue.priority(t1) == (0, -40)  # known: by the bound, longest first


def test_a_chunk_end_reports_progress_and_re_ranks_the_group() -> None:
    buf = TrajectoryBuffer(3, 10**6)
    a0, a1, a2 = (buf.trajs[t] for t in buf.admit_group(5).tids)
    b0, b1, b2 = (buf.trajs[t] for t in buf.admit_group(5).tids)
    queue = ContextAwarePlacement()
    for traj in (a0, a1, a2, b0, b1, b2):
        queue.push(traj)
    stamps = dict(queue._live)
    # b's probe comes back from a chunk with 4,096 kept tokens (the core counted them)
    queue._live.pop(b0.tid)
    b0.resume_tokens = 4096
    queue.push(b0, front=True)
    info = queue._groups[b0.gid]
    assert info.bound == 4096 and info.estimate is None
    assert queue.priority(b1) == (-1, -4096) and queue.priority(a1) == (-1, 0)
    # b's queued members got new entries; a's did not
    heap = queue._heaps[None]
    assert sum(entry[4] is b1 for entry in heap) == 2
    assert sum(entry[4] is a1 for entry in heap) == 1
    assert queue._live[b1.tid] == stamps[b1.tid]
    # a smaller report changes nothing; a pushed-back turn without kept tokens reports nothing
    size = len(heap)
    queue._live.pop(b0.tid)
    b0.resume_tokens = 100
    queue.push(b0, front=True)
    assert info.bound == 4096 and len(heap) == size + 1
    queue._live.pop(a0.tid)
    queue.push(a0, front=True)
    assert queue._groups[a0.gid].bound == 0
    # a back push (a new turn) does not report progress either
    a2.resume_tokens = 999
    queue._live.pop(a2.tid)
    queue.push(a2)
    assert queue._groups[a0.gid].bound == 0


def test_front_pushes_count_down_and_keys_get_their_own_structures() -> None:
    buf = TrajectoryBuffer(2, 100)
    t0, t1 = (buf.trajs[t] for t in buf.admit_group(5).tids)
    queue = ContextAwarePlacement()
    queue.push(t0, key=3)
    queue.push(t1, front=True, key=None)
    assert queue._live[t0.tid][1:] == (1, 3) and queue._live[t1.tid][1:] == (-1, None)
    assert set(queue._heaps) == set(queue._fifo) == {3, None}


def test_groups_whose_samples_all_left_are_forgotten() -> None:
    buf = TrajectoryBuffer(1, 100)
    queue = ContextAwarePlacement()
    first = [buf.trajs[buf.admit_group(5).tids[0]] for _ in range(64)]
    for traj in first:
        queue.push(traj)
    for traj in first[1:]:
        traj.state = TrajState.DONE
    queue.push(buf.trajs[buf.admit_group(5).tids[0]])  # the 65th group triggers a sweep
    assert set(queue._groups) == {first[0].gid, 64}


def test_fifo_share_must_be_at_least_two() -> None:
    with pytest.raises(ValueError, match="VAL_INT_RANGE failed"):
        ContextAwarePlacement(fifo_every=1)


def test_a_refiled_turn_keeps_its_rank_and_number_under_its_new_key() -> None:
    """0.5.0: `refile` (FifoPlacement's, through `_file`) moves a queued member of a started
    group under the group's version in both orders; the entries left under None go stale."""
    buf = TrajectoryBuffer(3, 100)
    a0, a1, a2 = (buf.trajs[t] for t in buf.admit_group(5).tids)
    b0, _, _ = (buf.trajs[t] for t in buf.admit_group(5).tids)
    queue = ContextAwarePlacement(fifo_every=2)
    for traj in (a0, a1, a2, b0):
        queue.push(traj)
    rank, number = queue.priority(a2), queue._live[a2.tid][1]
    assert queue.pop() is a0  # a's probe starts the group on weights 1
    for traj in (a1, a2):
        queue.refile(traj, 1)
    assert len(queue) == 3
    assert queue._live[a2.tid][1:] == (number, 1) and queue.priority(a2) == rank
    # a rank behind the trainer at version 1: a's members, FIFO pick then ranked pick
    assert queue.pop(max_key=1) is a1  # the 2nd pop is a FIFO pick: a1 waited longest
    assert queue.pop(max_key=1) is a2
    assert queue.pop(max_key=1) is None
    assert queue.pop() is b0 and queue.pop() is None and len(queue) == 0
