"""Step 4 of design/rlsched_routing.md: admission, prompt loads and the queue of turns."""

import pytest
from core_parts import core_parts

from rlsched.core.buffer import TrajState
from rlsched.core.commands import Dispatch, LoadPrompts
from rlsched.core.events import PromptsLoaded
from rlsched.core.machine import Scheduler


def _parts(cap: int = 2, max_turns: int = 100) -> Scheduler:
    return core_parts(
        {
            "devices": {"count": 2, "train": 1},
            "scheduler": {
                "train_batch_size": 2,
                "group_size": 2,
                "staleness": 1,
                "max_tokens": 100,
                "max_inflight_per_rank": cap,
                "max_turns": max_turns,
                "env_timeout_s": 10,
            },
        }
    )


def test_admission_asks_for_prompts_once() -> None:
    parts = _parts()
    parts.turns.admit()
    assert parts.ctx.out == [LoadPrompts(0, 2)]  # (staleness + 1) batches of one group
    assert parts.turns.load_pending == 0
    parts.turns.admit()
    assert parts.ctx.out == [LoadPrompts(0, 2)]  # one outstanding request at a time


def test_dispatch_fills_least_loaded_ranks_up_to_the_cap() -> None:
    parts = _parts(cap=2)
    parts.turns.backlog.extend([10, 20])
    parts.turns.admit()
    assert parts.buffer.live_groups == 2 and parts.ctx.out == []
    parts.turns.dispatch_queued()
    dispatches = [c for c in parts.ctx.out if isinstance(c, Dispatch)]
    assert [(d.rid, d.tid, d.rank) for d in dispatches] == [
        (0, 0, 0),
        (1, 1, 1),
        (2, 2, 0),
        (3, 3, 1),
    ]
    first = dispatches[0]
    assert (first.context_tokens, first.resume_tokens, first.max_new_tokens, first.version) == (
        10,
        0,
        90,
        0,
    )
    assert first.env_deadline is None  # no environment session before the first step
    assert parts.in_flight == 4 and parts.router.pick_rank() is None


def test_expired_queued_sessions_end_before_anything_is_dispatched() -> None:
    parts = _parts(cap=1)
    parts.turns.backlog.append(10)
    parts.turns.admit()
    expired, fresh = parts.buffer.trajs[0], parts.buffer.trajs[1]
    expired.env_deadline, fresh.env_deadline = 5.0, 9.0
    parts.turns.expiries.extend([(5.0, 0), (9.0, 1)])  # as the turn loop records them
    parts.ctx.now = 5.0  # the deadline is reached at exactly env_deadline
    parts.ctx.out.clear()
    parts.turns.expire_queued()
    assert expired.state.name == "DONE" and expired.timed_out and expired.rid is None
    assert fresh.state.name == "QUEUED" and list(parts.turns.expiries) == [(9.0, 1)]
    parts.turns.dispatch_queued()
    assert [(c.tid, c.env_deadline) for c in parts.ctx.out if isinstance(c, Dispatch)] == [(1, 9.0)]
    assert parts.stats.env_session_timeouts == 1 and parts.buffer.completed == 1


def test_prompts_are_validated_and_exhaustion_is_remembered() -> None:
    parts = _parts()
    parts.turns.admit()  # LoadPrompts(0, 2)
    parts.turns.on_prompts_loaded(PromptsLoaded(0.0, 0, (10,)))
    parts.turns.admit()  # one group admitted, a second load for the one still missing
    load_id = parts.turns.load_pending
    assert load_id == 1
    with pytest.raises(ValueError, match="VAL_INT_RANGE failed"):
        parts.turns.on_prompts_loaded(PromptsLoaded(0.0, load_id, (0,)))
    assert parts.turns.load_pending == load_id  # rejected: nothing changed
    parts.turns.on_prompts_loaded(PromptsLoaded(0.0, load_id, ()))
    assert parts.turns.exhausted and parts.turns.load_pending is None


def test_only_the_outstanding_prompt_load_is_applied() -> None:
    """A duplicated or unknown PromptsLoaded must not admit prompts twice."""
    parts = _parts()
    parts.turns.admit()
    parts.turns.on_prompts_loaded(PromptsLoaded(0.0, 0, (10,)))
    parts.turns.admit()
    assert parts.buffer.admitted_groups == 1 and parts.turns.load_pending == 1
    backlog = list(parts.turns.backlog)
    parts.turns.on_prompts_loaded(PromptsLoaded(0.5, 0, (10,)))  # the first answer, again
    parts.turns.on_prompts_loaded(PromptsLoaded(0.5, 7, (10,)))  # an id never sent
    assert list(parts.turns.backlog) == backlog and parts.stats.ignored_events == 2
    assert parts.turns.load_pending == 1


def test_a_rank_behind_the_trainer_never_makes_a_group_staler() -> None:
    """Group 0 runs at version 0 on both ranks; a step finishes and rank 0 syncs version 1
    while rank 1 still holds version 0. The aborted turn of group 0 may run on rank 1; group
    1, not started yet, only on rank 0 (rank 1 is then blocked for this pump)."""
    parts = _parts(cap=4)
    parts.turns.backlog.extend([10, 20])
    parts.turns.admit()
    t0, t1 = parts.placement.pop(), parts.placement.pop()
    parts.router.dispatch(t0, 1)
    parts.router.dispatch(t1, 0)
    req = parts.router.release(t0.rid, 5)
    parts.ctx.version = 1
    parts.router.set_rank_version(0, 1)
    for rank in (0, 1):
        parts.router.push_rank(rank)
    parts.turns.turn_aborted(req, 5)  # queued again at the front, keyed by version 0
    parts.ctx.out.clear()
    parts.turns.dispatch_queued()
    placed = [(c.tid, c.rank, c.version) for c in parts.ctx.out if isinstance(c, Dispatch)]
    assert placed == [(0, 1, 0), (2, 0, 1)]  # trajectory 3 waits: rank 0 holds its share
    assert len(parts.placement) == 1


def test_a_rank_behind_the_trainer_takes_a_started_groups_queued_turns() -> None:
    """0.11.0: group 0 starts on weights 0 (its first turn on rank 0); its second turn, queued
    at admission before the group had a version, is refiled under 0. Once the trainer holds 1
    and rank 1 still holds 0, rank 1 may take that turn (it cannot make group 0 staler), but
    not group 1's, which has not started."""
    parts = _parts(cap=1)
    parts.turns.backlog.extend([10, 20])
    parts.turns.admit()
    t0 = parts.placement.pop()
    parts.turns.send(t0, 0)
    assert parts.buffer.groups[t0.gid].min_version == 0
    parts.ctx.version = 1
    parts.router.set_rank_version(0, 1)
    for rank in (0, 1):
        parts.router.push_rank(rank)
    parts.ctx.out.clear()
    parts.turns.dispatch_queued()
    placed = [(c.tid, c.rank, c.version) for c in parts.ctx.out if isinstance(c, Dispatch)]
    assert placed == [(1, 1, 0)]  # rank 0 is full (one request per rank)
    assert len(parts.placement) == 2  # group 1 waits for a rank holding version 1


def _static(cap: int) -> Scheduler:
    return core_parts(
        {
            "devices": {"count": 3},
            "scheduler": {
                "mode": "colocate",
                "train_batch_size": 6,
                "group_size": 2,
                "staleness": 0,
                "max_tokens": 100,
                "max_inflight_per_rank": cap,
                "split": "static",
            },
        }
    )


def test_a_static_split_sends_group_g_to_rank_g_mod_ranks_whatever_the_load() -> None:
    """0.9.0: veRL's split (Seer's baseline), memory ignored: the engine queues what waits."""
    parts = _static(cap=4)
    parts.router.set_kv_capacity(5)  # smaller than any context: a central split would wait
    parts.turns.backlog.extend([10, 20, 30])
    parts.turns.admit()
    parts.turns.dispatch_queued()
    dispatches = [(c.tid, c.gid, c.rank) for c in parts.ctx.out if isinstance(c, Dispatch)]
    assert dispatches == [(0, 0, 0), (1, 0, 0), (2, 1, 1), (3, 1, 1), (4, 2, 2), (5, 2, 2)]


def test_a_static_split_waits_when_the_groups_rank_is_full() -> None:
    parts = _static(cap=1)
    parts.turns.backlog.extend([10, 20, 30])
    parts.turns.admit()
    parts.turns.dispatch_queued()
    dispatches = [(c.tid, c.rank) for c in parts.ctx.out if isinstance(c, Dispatch)]
    assert dispatches == [(0, 0)]  # trajectory 1 is rank 0's too: it waits, and the pump ends
    assert len(parts.placement) == 5


def test_with_memory_reported_a_turn_goes_home_or_waits_at_the_front() -> None:
    """0.6.0 (memory comes with Step 6's `set_kv_capacity`): the pump picks the roomiest rank,
    sends the turn home instead when its home may take it, and puts a turn that fits nowhere
    back at the front of the queue, ending the pump."""
    parts = _parts(cap=4)
    router = parts.router
    router.set_kv_capacity(1000)
    parts.turns.backlog.extend([50])
    parts.turns.admit()
    parts.turns.dispatch_queued()
    placed = [(c.tid, c.rank) for c in parts.ctx.out if isinstance(c, Dispatch)]
    assert placed == [(0, 0), (1, 1)]  # the roomiest rank each time
    parts.ctx.out.clear()
    req = router.release(1, 5, 800)  # trajectory 1 finished on rank 1, its home
    router.push_rank(req.rank)
    parts.turns.turn_finished(req, 5)
    req = router.release(0, 5, 950)  # trajectory 0 finished: rank 0 is now the roomiest
    router.push_rank(req.rank)
    parts.turns.turn_finished(req, 5)
    traj = parts.buffer.trajs[1]
    traj.move(TrajState.QUEUED)
    parts.placement.push(traj, key=parts.buffer.groups[traj.gid].min_version)
    parts.turns.dispatch_queued()
    placed = [(c.tid, c.rank) for c in parts.ctx.out if isinstance(c, Dispatch)]
    assert placed == [(1, 1)]  # home, not the roomiest rank 0
    parts.ctx.out.clear()
    req = router.release(2, 5, 10)  # trajectory 1 again, its home now nearly full
    router.push_rank(req.rank)
    parts.turns.turn_finished(req, 5)
    router.kv_free[0] = 20
    router.push_rank(0)
    for queued in (traj, parts.buffer.trajs[0]):
        queued.move(TrajState.QUEUED)
        parts.placement.push(queued, key=parts.buffer.groups[queued.gid].min_version)
    parts.turns.dispatch_queued()
    assert [c for c in parts.ctx.out if isinstance(c, Dispatch)] == []  # fits nowhere
    assert traj.state is TrajState.QUEUED and parts.placement.pop() is traj  # at the front
    parts.placement.push(traj, front=True, key=parts.buffer.groups[traj.gid].min_version)
    router.kv_free = [1000, 1000]
    parts.pool.shrink_sampler([0, 1])  # no rank serves: nothing is placed, nothing fails
    parts.turns.dispatch_queued()
    assert [c for c in parts.ctx.out if isinstance(c, Dispatch)] == [] and len(parts.placement) == 2
