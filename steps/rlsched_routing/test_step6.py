"""Step 6 of design/rlsched_routing.md: prefix affinity under reported memory (issue 15 item 2).

Hand-computed worlds: three single-GPU ranks in rollout, memory reported as the shell would
(`set_kv_capacity` for `Started.kv_tokens`, `release(..., kv_free)` for the answers).
"""

import pytest
from core_parts import core_parts, roomiest

from rlsched.core.buffer import Trajectory, TrajState
from rlsched.core.commands import Dispatch
from rlsched.core.machine import Scheduler
from rlsched.core.routing import Router
from rlsched.pool import DeviceMode

CAP = 1000


def _place(router: Router, traj: Trajectory, rank: int) -> int | None:
    """Where the pump sends the turn of `traj` when `rank` was the pick."""
    return router.place(traj, rank, router.fair_share())


def _parts(memory: bool = True, cap: int = 8, batch: int = 6) -> Scheduler:
    parts = core_parts(
        {
            "devices": {"count": 3},
            "scheduler": {
                "mode": "colocate",
                "train_batch_size": batch,
                "group_size": 2,
                "staleness": 1,
                "max_tokens": 500,
                "env_timeout_s": 30,
                "max_inflight_per_rank": cap,
            },
        }
    )
    if memory:
        parts.router.set_kv_capacity(CAP)
    return parts


def _dispatches(parts: Scheduler) -> list[tuple[int, int]]:
    """(tid, rank) of the dispatches collected so far; the collection is emptied."""
    out = [(c.tid, c.rank) for c in parts.ctx.out if isinstance(c, Dispatch)]
    parts.ctx.out.clear()
    return out


def _finish(parts: Scheduler, rid: int, new_tokens: int, kv_free: int | None) -> None:
    """What the scheduler does with a finished request: free the slot, close the turn."""
    req = parts.router.release(rid, new_tokens, kv_free)
    parts.router.push_rank(req.rank)
    parts.turns.turn_finished(req, new_tokens)


def _offer(parts: Scheduler) -> None:
    """Offer every rank again after a test set loads or memory by hand (the router's callers
    offer a rank after every change: its heap entries carry its memory and load, 0.10.0)."""
    for rank in range(3):
        parts.router.push_rank(rank)


def _back(parts: Scheduler, tid: int) -> None:
    """The environment answered: the trajectory's next turn waits in the queue."""
    traj = parts.buffer.trajs[tid]
    traj.state = TrajState.QUEUED
    parts.placement.push(traj, key=parts.buffer.groups[traj.gid].min_version)


def test_capacity_starts_every_rank_empty_and_dispatch_plans_the_turns_kv() -> None:
    parts = _parts()
    assert parts.router.kv_cap == CAP and parts.router.kv_free == [CAP] * 3
    with pytest.raises(ValueError, match="VAL_INT_RANGE"):
        parts.router.set_kv_capacity(0)
    parts.buffer.admit_group(100)
    traj = parts.buffer.trajs[0]
    traj.resume_tokens = 20
    parts.router.dispatch(traj, 2)
    assert parts.router.kv_free == [CAP, CAP, CAP - 120]  # context and kept tokens


def test_an_answer_replaces_the_account_and_a_rejected_one_changes_nothing() -> None:
    parts = _parts()
    parts.buffer.admit_group(100)
    parts.router.dispatch(parts.buffer.trajs[0], 1)
    parts.router.dispatch(parts.buffer.trajs[1], 1)
    assert parts.router.kv_free[1] == CAP - 200
    parts.router.release(0, 10, 870)
    assert parts.router.kv_free == [CAP, 870, CAP]
    assert parts.router.release(0, 10, 5) is None  # already answered: ignored, counted
    assert parts.router.kv_free == [CAP, 870, CAP] and parts.stats.ignored_events == 1
    parts.router.release(1, 10)  # an answer without a figure keeps the account
    assert parts.router.kv_free == [CAP, 870, CAP]
    parts.buffer.trajs[0].move(TrajState.QUEUED)  # queued again, as the turn loop would
    parts.router.dispatch(parts.buffer.trajs[0], 0)
    with pytest.raises(ValueError, match="VAL_INT_RANGE"):
        parts.router.release(2, 1, CAP + 1)  # more free than the rank has: refused


def test_without_a_capacity_answers_carry_no_account() -> None:
    parts = _parts(memory=False)
    parts.buffer.admit_group(100)
    parts.router.dispatch(parts.buffer.trajs[0], 0)
    parts.router.release(0, 10, 5)
    assert parts.router.kv_cap is None and parts.router.kv_free == [0, 0, 0]


def test_the_roomiest_rank_below_its_fair_share_is_picked() -> None:
    parts = _parts()
    parts.buffer.admit_group(10)  # 2 unfinished over 3 ranks: fair share 1
    router = parts.router
    router.kv_free = [500, 900, 900]
    _offer(parts)
    assert roomiest(router) == 1  # ties on memory: lowest id
    router.load[1] = 1
    _offer(parts)
    assert roomiest(router) == 2  # rank 1 holds its fair share
    parts.buffer.admit_group(10)
    parts.buffer.admit_group(10)  # 6 unfinished: fair share 2
    assert roomiest(router) == 2  # same memory, less loaded
    router.kv_free[1] = 901
    _offer(parts)
    assert roomiest(router) == 1  # more memory beats the load
    router.set_rank_version(1, 4)
    _offer(parts)
    assert roomiest(router, blocked={4}) == 2
    router.load[2] = router.cap
    _offer(parts)
    assert roomiest(router, blocked={4}) == 0  # rank 2 is not routable at its cap
    router.load[0] = 2
    _offer(parts)
    assert roomiest(router, blocked={4}) is None


def test_a_turn_goes_home_while_the_home_holds_its_prefix_and_has_room() -> None:
    parts = _parts()
    parts.turns.backlog.extend([100, 100, 100])
    parts.turns.admit()
    parts.turns.dispatch_queued()
    # Roomiest first: each dispatch takes 100 from its rank, so the six first turns alternate.
    assert _dispatches(parts) == [(0, 0), (1, 1), (2, 2), (3, 0), (4, 1), (5, 2)]
    _finish(parts, 4, 50, 880)  # trajectory 4 finished on rank 1: its home
    traj = parts.buffer.trajs[4]
    assert (traj.home, traj.home_epoch) == (1, 0)
    _finish(parts, 0, 50, 950)  # rank 0 is now the roomiest
    _back(parts, 4)
    parts.turns.dispatch_queued()
    assert _dispatches(parts) == [(4, 1)]  # home, not the roomiest rank 0
    assert parts.router.kv_free == [950, 880 - 150, 800]
    _back(parts, 0)
    parts.turns.dispatch_queued()
    assert _dispatches(parts) == [(0, 0)]  # trajectory 0's home is also the roomiest


def test_a_full_home_or_a_moved_epoch_spills_to_the_roomiest_rank() -> None:
    parts = _parts()
    parts.turns.backlog.extend([100, 100, 100])
    parts.turns.admit()
    parts.turns.dispatch_queued()
    _dispatches(parts)
    _finish(parts, 3, 50, 800)  # rank 0 drops below its fair share (6 unfinished: 2 a rank)
    _finish(parts, 4, 50, 120)  # home rank 1 reports 120 free: trajectory 4 needs 150
    _back(parts, 4)
    parts.turns.dispatch_queued()
    assert _dispatches(parts) == [(4, 0)]  # the roomiest rank below its share: rank 0
    _finish(parts, 0, 50, 950)
    _finish(parts, 5, 50, 900)  # trajectory 5's home: rank 2
    parts.router.epoch[2] += 1  # ... until its cache is lost (a shrink or a loss)
    _back(parts, 5)
    parts.turns.dispatch_queued()
    assert _dispatches(parts) == [(5, 0)]
    parts.buffer.trajs[5].home_epoch = parts.router.epoch[2]  # the same world, epoch current
    parts.router.release(6, 10, 950)
    parts.router.push_rank(0)
    parts.buffer.trajs[5].state = TrajState.QUEUED
    parts.buffer.trajs[5].rid = None
    _back(parts, 5)
    parts.turns.dispatch_queued()
    assert _dispatches(parts) == [(5, 2)]


def test_a_home_over_its_fair_share_or_on_staler_weights_is_passed_over() -> None:
    parts = _parts(batch=2)
    parts.turns.backlog.extend([100, 100])
    parts.turns.admit()
    parts.turns.dispatch_queued()
    assert _dispatches(parts) == [(0, 0), (1, 1), (2, 2), (3, 0)]
    _finish(parts, 1, 50, 900)  # trajectory 1's home is rank 1 (empty now)
    parts.router.load[1] = 2  # fair share: 4 unfinished over 3 ranks = 2
    _back(parts, 1)
    parts.turns.dispatch_queued()
    assert _dispatches(parts) == [(1, 2)]  # rank 2 (900 free) beats rank 0 (800 free)
    parts.router.load[1] = 0
    _finish(parts, 2, 50, 900)
    parts.router.set_rank_version(2, 0)
    parts.ctx.version = 1  # trajectory 2's home (weights 0) is one behind, its group is not
    parts.buffer.groups[1].min_version = 1
    parts.router.set_rank_version(0, 1)
    parts.router.set_rank_version(1, 1)
    for rank in range(3):
        parts.router.push_rank(rank)
    _back(parts, 2)
    parts.turns.dispatch_queued()
    assert _dispatches(parts) == [(2, 1)]  # not home on staler weights


def test_a_turn_that_fits_nowhere_waits_at_the_front_and_ends_the_pump() -> None:
    parts = _parts()
    parts.router.kv_free = [50, 60, 40]
    _offer(parts)
    parts.turns.backlog.extend([100, 10])
    parts.turns.admit()
    parts.turns.dispatch_queued()
    assert _dispatches(parts) == []  # trajectory 0 needs 100, the roomiest has 60
    assert parts.buffer.trajs[0].state is TrajState.QUEUED and len(parts.placement) == 4
    parts.router.kv_free[1] = 300
    parts.router.push_rank(1)
    parts.turns.dispatch_queued()
    # First come first served: trajectory 0, then the rest; rank 1 then holds its fair share
    # (4 unfinished over 3 ranks: 2), and the last two go to the roomiest of the others (a tie
    # on 40 free tokens goes to the less loaded rank 2).
    assert _dispatches(parts) == [(0, 1), (1, 1), (2, 0), (3, 2)]
    assert parts.router.kv_free == [40, 100, 30]


def test_a_finish_on_a_rank_leaving_rollout_sets_no_home() -> None:
    parts = _parts()
    parts.turns.backlog.extend([100])
    parts.turns.admit()
    parts.turns.dispatch_queued()
    _dispatches(parts)
    parts.pool.shrink_sampler([1])
    assert parts.pool.mode(1) is DeviceMode.SHRINKING
    _finish(parts, 1, 50, 900)
    assert parts.buffer.trajs[1].home == -1
    _finish(parts, 0, 50, 900)
    assert parts.buffer.trajs[0].home == 0


def test_a_shrink_or_a_loss_moves_the_epoch_and_a_loss_empties_the_rank() -> None:
    parts = _parts()
    parts.buffer.admit_group(100)
    parts.router.dispatch(parts.buffer.trajs[0], 2)
    parts.router.kv_free[1] = 10
    parts.router.abort_rank(1)  # 0.6.1: a shrinking rank is accounted empty
    assert parts.router.epoch == [0, 1, 0] and parts.router.kv_free == [CAP, CAP, CAP - 100]
    lost = parts.router.lose_rank(2)
    assert [r.rid for r in lost] == [0]
    assert parts.router.epoch == [0, 1, 1] and parts.router.kv_free == [CAP, CAP, CAP]


def test_without_memory_a_turn_ignores_its_home() -> None:
    parts = _parts(memory=False)
    parts.turns.backlog.extend([100, 100, 100])
    parts.turns.admit()
    parts.turns.dispatch_queued()
    assert _dispatches(parts) == [(0, 0), (1, 1), (2, 2), (3, 0), (4, 1), (5, 2)]
    req = parts.router.release(4, 50)
    parts.router.push_rank(req.rank)
    parts.turns.turn_finished(req, 50)
    assert parts.buffer.trajs[4].home == -1
    req = parts.router.release(0, 50)
    parts.router.push_rank(req.rank)
    _back(parts, 4)
    parts.turns.dispatch_queued()
    assert _dispatches(parts) == [(4, 0)]  # least loaded, as in 0.5.0


def test_the_fair_share_counts_serving_ranks_and_is_at_least_one() -> None:
    parts = _parts()
    assert parts.router.fair_share() == 1  # nothing unfinished
    for _ in range(4):
        parts.buffer.admit_group(10)
    assert parts.router.fair_share() == 3  # 8 unfinished over 3 ranks, rounded up
    parts.pool.shrink_sampler([0, 1])
    assert parts.router.fair_share() == 8  # one rank still serves


def test_home_takes_a_turn_that_exactly_fits_and_weights_as_old_as_its_group() -> None:
    parts = _parts()
    parts.buffer.admit_group(100)
    traj = parts.buffer.trajs[0]
    parts.router.dispatch(traj, 0)
    _finish(parts, 0, 50, 150)  # home: rank 0 with exactly the 150 tokens the turn needs
    _back(parts, 0)
    assert (traj.home, parts.router.kv_free) == (0, [150, CAP, CAP])
    assert _place(parts.router, traj, 2) == 0
    parts.ctx.version = 1  # the trainer moved on; rank 0 and the group are on weights 0
    parts.router.set_rank_version(1, 1)
    parts.router.set_rank_version(2, 1)
    assert _place(parts.router, traj, 2) == 0
    parts.buffer.groups[0].min_version = 1  # a group fresher than the home: not home
    assert _place(parts.router, traj, 2) == 2
    parts.router.kv_free[2] = 150  # the roomiest rank also fits exactly
    parts.router.kv_free[0] = 149
    parts.buffer.groups[0].min_version = 0
    assert _place(parts.router, traj, 2) == 2
    parts.router.kv_free[2] = 149
    assert _place(parts.router, traj, 2) is None


def test_a_turn_larger_than_the_capacity_runs_alone_on_a_wholly_free_rank() -> None:
    """0.6.2: an engine runs a lone request past its cache; the core must not wait for ever."""
    parts = _parts()
    parts.buffer.admit_group(100)
    traj = parts.buffer.trajs[0]
    traj.context_tokens = CAP + 300
    parts.router.kv_free = [CAP - 1, CAP, CAP]
    assert _place(parts.router, traj, 0) is None
    assert _place(parts.router, traj, 1) == 1


def test_under_divided_rollout_a_chunk_plans_its_new_tokens_too() -> None:
    """0.8.0: a chunk's footprint (context, kept tokens, the chunk) must fit, as in Seer's
    Algorithm 2, and the account takes all of it; the last chunk plans only what is left."""
    parts = core_parts(
        {
            "devices": {"count": 3},
            "scheduler": {
                "mode": "colocate",
                "train_batch_size": 6,
                "group_size": 2,
                "max_tokens": 500,
                "chunk_tokens": 200,
            },
        }
    )
    parts.router.set_kv_capacity(CAP)
    parts.buffer.admit_group(100)
    first, last = parts.buffer.trajs[0], parts.buffer.trajs[1]
    last.resume_tokens = 250  # 150 tokens left of the turn's budget: less than a chunk
    parts.router.kv_free = [299, 300, CAP]
    assert _place(parts.router, first, 0) is None  # 100 of context fit, 300 do not
    assert _place(parts.router, first, 1) == 1
    parts.router.dispatch(first, 1)
    parts.router.dispatch(last, 2)
    assert parts.router.kv_free == [299, 0, CAP - 500]  # 100 + 200, and 100 + 250 + 150


def test_a_home_at_the_ranks_cap_is_passed_over_below_its_fair_share() -> None:
    """0.14.0: the home's routable test, inline in `place`, holds the cap even where the fair
    share is above it."""
    parts = _parts(cap=1)
    for _ in range(3):
        parts.buffer.admit_group(100)  # 6 unfinished over 3 ranks: fair share 2, cap 1
    traj = parts.buffer.trajs[0]
    traj.home, traj.home_epoch = 1, parts.router.epoch[1]
    assert _place(parts.router, traj, 2) == 1  # home: below the cap and its share
    parts.router.load[1] = 1
    assert parts.router.fair_share() == 2 and _place(parts.router, traj, 2) == 2
