"""Step 6 of design/rlsched_scheduler.md: the turn loop, migration and drain."""

import pytest

from rlsched.config import RlschedConfig
from rlsched.core.buffer import TrajState
from rlsched.core.commands import Offload, StartEnvStep
from rlsched.core.machine import Scheduler, ShrinkOp


def _running(migration: str = "reissue") -> Scheduler:
    sched = Scheduler(
        RlschedConfig.model_validate(
            {
                "devices": {"count": 2, "train": 1},
                "scheduler": {
                    "train_batch_size": 2,
                    "group_size": 2,
                    "max_tokens": 100,
                    "env_timeout_s": 30,
                    "migration": migration,
                },
            }
        )
    )
    sched._backlog.append(10)
    sched._admit()
    sched._dispatch_queued()
    sched._out.clear()
    return sched


def test_finish_turn_starts_the_environment() -> None:
    sched = _running()
    sched.now = 5.0
    req = sched._release_request(0, 40)
    traj = sched.buffer.trajs[req.tid]
    sched._finish_turn(traj, 40, req.version)
    assert sched._out == [StartEnvStep(traj.tid, 0, 35.0)]
    assert traj.state is TrajState.ENV and traj.context_tokens == 50 and traj.turn_versions == [0]


def test_release_validates_and_ignores_unknown_ids() -> None:
    sched = _running()
    assert sched._release_request(99, 1) is None and sched.stats.ignored_events == 1
    with pytest.raises(ValueError, match="VAL_INT_RANGE failed"):
        sched._release_request(0, 91)  # more than max_new_tokens
    assert sched.in_flight == 2


@pytest.mark.parametrize(("mode", "kept"), [("reissue", 0), ("resume", 30)])
def test_requeue_migrates_to_the_front(mode: str, kept: int) -> None:
    sched = _running(mode)
    req = sched._release_request(1, 30)
    traj = sched.buffer.trajs[req.tid]
    sched._requeue(traj, req, 30)
    assert traj.state is TrajState.QUEUED and traj.resume_tokens == kept
    assert sched.placement.pop() is traj and sched.stats.migrated == 1
    assert sched.stats.discarded_tokens == 30 - kept


def test_drained_shrinking_rank_is_offloaded() -> None:
    sched = _running()
    sched.pool.shrink_sampler([1])
    sched._shrink = ShrinkOp((1,), (1,), {1})
    with pytest.raises(AssertionError, match="AST_PRECONDITION"):
        sched._offload_rank(1)  # request 1 is still on rank 1
    sched._release_request(1, 0)
    op_id = sched._dev_op[1]
    assert op_id is not None and sched._out == [Offload(op_id, (1,))]
    assert sched._shrink.offload_sent == {1}


def test_complete_counts() -> None:
    sched = _running()
    traj = sched.buffer.trajs[0]
    sched._release_request(0, 5)
    sched._finish_turn(traj, 5, 0)
    sched._complete(traj)
    assert traj.state is TrajState.DONE and sched.stats.completed == 1


def test_a_finish_after_the_session_timed_out_closes_the_turn_without_an_env_step() -> None:
    sched = _running()
    traj = sched.buffer.trajs[0]
    traj.env_deadline = 20.0
    sched.now = 20.5
    req = sched._release_request(0, 40)
    sched._finish_turn(traj, 40, req.version)
    assert sched._out == []  # no StartEnvStep: the session is gone
    assert traj.state is TrajState.DONE and traj.timed_out
    assert traj.context_tokens == 50 and traj.turn_versions == [0] and traj.turn == 1
    assert sched.stats.env_session_timeouts == 1 and sched.stats.completed == 1


@pytest.mark.parametrize("mode", ["reissue", "resume"])
def test_an_abort_after_the_session_timed_out_ends_the_trajectory(mode: str) -> None:
    """A shell enforcing Dispatch.env_deadline aborts the request; the partial turn is dropped."""
    sched = _running(mode)
    traj = sched.buffer.trajs[1]
    traj.env_deadline = 20.0
    sched.now = 20.0
    req = sched._release_request(1, 30)
    sched._requeue(traj, req, 30)
    assert traj.state is TrajState.DONE and traj.timed_out and traj.resume_tokens == 0
    assert len(sched.placement) == 0 and sched.stats.migrated == 0
    assert sched.stats.discarded_tokens == 30 and sched.stats.resumed_tokens == 0
    assert sched.stats.env_session_timeouts == 1
