"""Step 5 of design/rlsched_routing.md: the turn loop, migration and environment answers."""

import pytest
from core_parts import core_parts, release

from rlsched.core.buffer import TrajState
from rlsched.core.commands import Dispatch, StartEnvStep
from rlsched.core.events import EnvStepDone, EnvStepTimedOut
from rlsched.core.machine import Scheduler


def _running(migration: str = "reissue", max_turns: int = 100) -> Scheduler:
    parts = core_parts(
        {
            "devices": {"count": 2, "train": 1},
            "scheduler": {
                "train_batch_size": 2,
                "group_size": 2,
                "max_tokens": 100,
                "env_timeout_s": 30,
                "migration": migration,
                "max_turns": max_turns,
            },
        }
    )
    parts.turns.backlog.append(10)
    parts.turns.admit()
    parts.turns.dispatch_queued()
    parts.ctx.out.clear()
    return parts


def test_finish_turn_starts_the_environment() -> None:
    parts = _running()
    parts.ctx.now = 5.0
    req = release(parts, 0, 40)
    parts.turns.turn_finished(req, 40)
    traj = parts.buffer.trajs[req.tid]
    assert parts.ctx.out == [StartEnvStep(traj.tid, 0, 35.0)]
    assert traj.state is TrajState.ENV and traj.context_tokens == 50 and traj.turn_versions == [0]


@pytest.mark.parametrize(("mode", "kept"), [("reissue", 0), ("resume", 30)])
def test_requeue_migrates_to_the_front(mode: str, kept: int) -> None:
    parts = _running(mode)
    req = release(parts, 1, 30)
    parts.turns.turn_aborted(req, 30)
    traj = parts.buffer.trajs[req.tid]
    assert traj.state is TrajState.QUEUED and traj.resume_tokens == kept
    assert parts.placement.pop() is traj and parts.stats.migrated == 1
    assert parts.stats.discarded_tokens == 30 - kept


def test_a_finish_or_abort_of_a_superseded_request_changes_nothing() -> None:
    parts = _running()
    req = release(parts, 0, 5)
    traj = parts.buffer.trajs[req.tid]
    traj.rid = 77  # the trajectory was dispatched again meanwhile
    parts.turns.turn_finished(req, 5)
    parts.turns.turn_aborted(req, 5)
    assert traj.turn_versions == [] and parts.stats.migrated == 0 and parts.ctx.out == []


def test_complete_counts() -> None:
    parts = _running()
    traj = parts.buffer.trajs[0]
    release(parts, 0, 5)
    parts.turns.finish_turn(traj, 5, 0)
    parts.turns.complete(traj)
    assert traj.state is TrajState.DONE and parts.stats.completed == 1


def test_a_finish_after_the_session_timed_out_closes_the_turn_without_an_env_step() -> None:
    parts = _running()
    traj = parts.buffer.trajs[0]
    traj.env_deadline = 20.0
    parts.ctx.now = 20.5
    req = release(parts, 0, 40)
    parts.turns.finish_turn(traj, 40, req.version)
    assert parts.ctx.out == []  # no StartEnvStep: the session is gone
    assert traj.state is TrajState.DONE and traj.timed_out
    assert traj.context_tokens == 50 and traj.turn_versions == [0] and traj.turn == 1
    assert parts.stats.env_session_timeouts == 1 and parts.stats.completed == 1


@pytest.mark.parametrize("mode", ["reissue", "resume"])
def test_an_abort_after_the_session_timed_out_ends_the_trajectory(mode: str) -> None:
    """A shell enforcing Dispatch.env_deadline aborts the request; the partial turn is dropped."""
    parts = _running(mode)
    traj = parts.buffer.trajs[1]
    traj.env_deadline = 20.0
    parts.ctx.now = 20.0
    req = release(parts, 1, 30)
    parts.turns.requeue(traj, req, 30)
    assert traj.state is TrajState.DONE and traj.timed_out and traj.resume_tokens == 0
    assert len(parts.placement) == 0 and parts.stats.migrated == 0
    assert parts.stats.discarded_tokens == 30 and parts.stats.resumed_tokens == 0
    assert parts.stats.env_session_timeouts == 1


def test_environment_answers_queue_the_next_turn_or_complete() -> None:
    parts = _running(max_turns=2)
    parts.turns.turn_finished(release(parts, 0, 7), 7)
    parts.turns.on_env_step_done(EnvStepDone(2.0, 0, 0, 3, False))
    traj = parts.buffer.trajs[0]
    assert traj.state is TrajState.QUEUED and traj.turn == 1 and traj.context_tokens == 20
    assert traj.env_deadline == 0.0 + 30  # the clock of the context: the session's deadline starts
    parts.turns.dispatch_queued()
    parts.turns.turn_finished(release(parts, traj.rid, 1), 1)
    parts.turns.on_env_step_done(EnvStepDone(4.0, 0, 1, 0, False))
    assert traj.state is TrajState.DONE and parts.stats.completed == 1  # the turn limit
    parts.turns.turn_finished(release(parts, 1, 2), 2)
    parts.turns.on_env_step_timed_out(EnvStepTimedOut(11.0, 1, 0))
    other = parts.buffer.trajs[1]
    assert other.state is TrajState.DONE and other.timed_out and parts.stats.env_timeouts == 1
    parts.turns.on_env_step_done(EnvStepDone(1.0, 0, 5, 1, True))  # wrong state and turn
    parts.turns.on_env_step_timed_out(EnvStepTimedOut(1.0, 77, 0))
    assert parts.stats.ignored_events == 2


def test_a_session_that_timed_out_in_the_queue_ends_before_any_dispatch() -> None:
    """Queued trajectories whose idle session reached its deadline end at the first event after
    it (`expire_queued`, before any decision), flagged; the deadline travels on Dispatch for a
    trajectory still within it."""
    parts = core_parts(
        {
            "devices": {"count": 2, "train": 1},
            "scheduler": {
                "train_batch_size": 2,
                "group_size": 2,
                "max_tokens": 100,
                "env_timeout_s": 10,
                "max_inflight_per_rank": 1,
            },
        }
    )
    parts.turns.backlog.append(10)
    parts.turns.admit()
    parts.turns.dispatch_queued()  # tid 0 on rank 0, tid 1 on rank 1
    for rid, tid, at in ((0, 0, 1.0), (1, 1, 4.0)):
        parts.ctx.now = at
        parts.turns.turn_finished(parts.router.release(rid, 5), 5)
        parts.turns.on_env_step_done(EnvStepDone(at, tid, 0, 2, False))  # deadlines 11 and 14
    expired, fresh = parts.buffer.trajs[0], parts.buffer.trajs[1]
    assert (expired.env_deadline, fresh.env_deadline) == (11.0, 14.0)
    parts.ctx.now = 11.0  # the deadline is reached at exactly env_deadline
    parts.ctx.out.clear()
    parts.turns.expire_queued()
    assert expired.state.name == "DONE" and expired.timed_out and expired.rid is None
    assert fresh.state.name == "QUEUED" and parts.stats.env_session_timeouts == 1
    parts.turns.dispatch_queued()
    dispatches = [c for c in parts.ctx.out if isinstance(c, Dispatch)]
    assert [(d.tid, d.env_deadline) for d in dispatches] == [(1, 14.0)]
    assert parts.buffer.completed == 1 and parts.stats.completed == 1
    parts.ctx.now = 20.0
    parts.turns.expire_queued()  # tid 1 runs: its session is not expired while queued
    assert fresh.state.name == "RUNNING" and parts.stats.env_session_timeouts == 1


def test_a_turn_queued_again_before_its_deadline_still_ends_at_it() -> None:
    """Deadlines are recorded once, in the order set (time order: a FIFO, not a heap); a turn
    interrupted and queued again before its deadline ends at that deadline all the same."""
    parts = _running()  # env_timeout_s 30, both trajectories running on rank 0 and rank 1
    for rid, tid, at in ((0, 0, 1.0), (1, 1, 4.0)):
        parts.ctx.now = at
        parts.turns.turn_finished(release(parts, rid, 5), 5)
        parts.turns.on_env_step_done(EnvStepDone(at, tid, 0, 2, False))  # deadlines 31, 34
    assert list(parts.turns.expiries) == [(31.0, 0), (34.0, 1)]
    parts.turns.dispatch_queued()
    first, second = parts.buffer.trajs[0], parts.buffer.trajs[1]
    parts.ctx.now = 20.0
    parts.turns.turn_aborted(release(parts, first.rid, 3), 3)  # migrated before its deadline
    assert first.state is TrajState.QUEUED and len(parts.turns.expiries) == 2
    parts.ctx.now = 31.0
    parts.turns.expire_queued()
    assert first.state is TrajState.DONE and first.timed_out
    assert second.state is TrajState.RUNNING and list(parts.turns.expiries) == [(34.0, 1)]
    parts.ctx.now = 40.0
    parts.turns.expire_queued()  # tid 1 is running: its entry leaves, it does not end
    assert second.state is TrajState.RUNNING and not parts.turns.expiries
    assert parts.stats.env_session_timeouts == 1


@pytest.mark.parametrize("stopped", [False, True])
def test_a_whole_chunk_is_a_chunk_end_unless_the_engine_stopped_the_turn(stopped: bool) -> None:
    """Divided rollout (0.4.0): a chunked request that returns exactly its chunk continues the
    turn in a next chunk, unless the engine stopped the turn on that very token: then the turn
    closes and its environment step starts (no next dispatch)."""
    parts = core_parts(
        {
            "devices": {"count": 2, "train": 1},
            "scheduler": {
                "train_batch_size": 2,
                "group_size": 2,
                "max_tokens": 100,
                "env_timeout_s": 30,
                "chunk_tokens": 10,
            },
        }
    )
    parts.turns.backlog.append(10)
    parts.turns.admit()
    parts.turns.dispatch_queued()
    parts.ctx.out.clear()
    req = release(parts, 0, 10)
    assert req.chunked and req.max_new_tokens == 10
    parts.turns.turn_finished(req, 10, stopped=stopped)
    traj = parts.buffer.trajs[req.tid]
    if stopped:
        assert parts.ctx.out == [StartEnvStep(traj.tid, 0, 30.0)]
        assert traj.state is TrajState.ENV and traj.turn_versions == [0]
        assert (traj.context_tokens, traj.generated_tokens, traj.resume_tokens) == (20, 10, 0)
        assert parts.stats.chunk_ends == 0 and len(parts.placement) == 0
    else:
        assert parts.ctx.out == []  # the turn's next chunk waits in the queue
        assert traj.state is TrajState.QUEUED and traj.turn_versions == []
        assert (traj.context_tokens, traj.generated_tokens, traj.resume_tokens) == (10, 0, 10)
        assert parts.stats.chunk_ends == 1 and parts.placement.pop() is traj
