"""Step 5 of design/rlsched_scheduler.md: admission and dispatch."""

import pytest

from rlsched.config import RlschedConfig
from rlsched.core.commands import Dispatch, LoadPrompts
from rlsched.core.machine import Scheduler


def _sched(cap: int = 2) -> Scheduler:
    return Scheduler(
        RlschedConfig.model_validate(
            {
                "devices": {"count": 2, "train": 1},
                "scheduler": {
                    "train_batch_size": 2,
                    "group_size": 2,
                    "staleness": 1,
                    "max_tokens": 100,
                    "max_inflight_per_rank": cap,
                },
            }
        )
    )


def test_admission_asks_for_prompts_once() -> None:
    sched = _sched()
    sched._admit()
    assert sched._out == [LoadPrompts(0, 2)]  # (staleness + 1) batches of one group
    assert sched._load_pending == 0
    sched._admit()
    assert sched._out == [LoadPrompts(0, 2)]  # one outstanding request at a time


def test_dispatch_fills_least_loaded_ranks_up_to_the_cap() -> None:
    sched = _sched(cap=2)
    sched._backlog.extend([10, 20])
    sched._admit()
    assert sched.buffer.live_groups == 2 and sched._out == []
    sched._dispatch_queued()
    dispatches = [c for c in sched._out if isinstance(c, Dispatch)]
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
    assert sched.in_flight == 4 and sched._pick_rank() is None
    assert sched.buffer.groups[0].min_version == 0


def test_dispatch_only_to_rollout_ranks() -> None:
    sched = _sched()
    sched._backlog.append(10)
    sched._admit()
    sched.pool.shrink_sampler([1])
    traj = sched.placement.pop()
    with pytest.raises(AssertionError, match="AST_PRECONDITION"):
        sched._dispatch(traj, 1)


def test_a_session_that_timed_out_in_the_queue_ends_instead_of_dispatching() -> None:
    """Checked when the trajectory is taken from the queue: ended flagged, not dispatched;
    the deadline travels on Dispatch for a trajectory still within it."""
    sched = _sched(cap=1)
    sched._backlog.append(10)
    sched._admit()
    expired, fresh = sched.buffer.trajs[0], sched.buffer.trajs[1]
    expired.env_deadline, fresh.env_deadline = 5.0, 9.0
    expired.resume_tokens, expired.resume_version = 7, 0
    sched.now = 5.0  # the deadline is reached at exactly env_deadline
    sched._out.clear()
    sched._dispatch_queued()
    dispatches = [c for c in sched._out if isinstance(c, Dispatch)]
    assert [(d.tid, d.env_deadline) for d in dispatches] == [(1, 9.0)]
    assert expired.state.name == "DONE" and expired.timed_out and expired.rid is None
    assert (expired.resume_tokens, expired.resume_version) == (0, None)
    assert sched.stats.env_session_timeouts == 1 and sched.stats.completed == 1
    assert sched.buffer.completed == 1 and sched.stats.dispatched == 1
