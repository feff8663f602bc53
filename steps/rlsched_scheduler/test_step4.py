"""Step 4 of design/rlsched_scheduler.md: the lifecycles wired, and the handlers that span them."""

import pytest

from rlsched.config import RlschedConfig
from rlsched.core.buffer import TrajState
from rlsched.core.commands import Dispatch, InitialLayout, Reload, StartEnvStep, SyncWeights
from rlsched.core.events import (
    EnvStepDone,
    EnvStepFailed,
    EnvStepTimedOut,
    OffloadDone,
    PromptsLoaded,
    RequestAborted,
    RequestFinished,
    Started,
    TrainingDone,
    WorkerLost,
    WorkerRecovered,
)
from rlsched.core.machine import Scheduler
from rlsched.pool import DeviceMode


def _sched(max_turns: int = 2) -> Scheduler:
    sched = Scheduler(
        RlschedConfig.model_validate(
            {
                "devices": {"count": 2, "train": 1},
                "scheduler": {
                    "train_batch_size": 2,
                    "group_size": 2,
                    "max_turns": max_turns,
                    "max_tokens": 100,
                    "env_timeout_s": 10,
                },
            }
        )
    )
    sched._on_started(Started(0.0))
    sched.turns.admit()  # asks for prompts: LoadPrompts(0, 2)
    sched.turns.on_prompts_loaded(PromptsLoaded(0.0, 0, (10,)))
    sched.turns.admit()
    sched.turns.dispatch_queued()
    sched.ctx.out.clear()
    return sched


def test_the_lifecycles_share_one_context() -> None:
    sched = _sched()
    parts = (sched.router, sched.turns, sched.transitions, sched.trainer)
    assert all(part.ctx is sched.ctx for part in parts)
    assert sched.ctx.pool is sched.pool and sched.ctx.buffer is sched.buffer
    assert sched.turns.placement is sched.placement and sched.ctx.staleness is sched.staleness


def test_started_announces_the_layout_once() -> None:
    sched = Scheduler(
        RlschedConfig.model_validate(
            {"devices": {"count": 4, "train": 2}, "scheduler": {"mode": "disaggregated"}}
        )
    )
    sched._on_started(Started(0.0))
    assert sched.ctx.out == [InitialLayout((0, 1), (2, 3))]
    sched._on_started(Started(0.0))
    assert sched.ctx.out == [InitialLayout((0, 1), (2, 3))] and sched.ctx.stats.ignored_events == 1


def test_finished_and_aborted_requests_free_the_slot_and_move_the_turn() -> None:
    sched = _sched()
    sched._on_request_finished(RequestFinished(1.0, 0, 7))
    assert sched.ctx.out == [StartEnvStep(0, 0, 10.0)]  # clock 0: handlers called directly
    assert sched.router.load == [0, 1] and sched.ctx.stats.finished == 1
    sched._on_request_aborted(RequestAborted(1.0, 1, 4))
    assert sched.buffer.trajs[1].state is TrajState.QUEUED and sched.ctx.stats.aborted == 1
    sched.turns.on_env_step_timed_out(EnvStepTimedOut(11.0, 0, 0))
    assert sched.buffer.trajs[0].timed_out and sched.ctx.stats.env_timeouts == 1
    sched._on_request_finished(RequestFinished(1.0, 42, 1))  # unknown: ignored, counted
    assert sched.ctx.stats.ignored_events == 1


def _trained_ready() -> Scheduler:
    """Timeshare on 4 GPUs (train = 2, 3): one complete group, training set shrunk and training."""
    sched = Scheduler(
        RlschedConfig.model_validate(
            {
                "devices": {"count": 4, "train": 2},
                "scheduler": {
                    "train_batch_size": 2,
                    "group_size": 2,
                    "staleness": 1,
                    "max_tokens": 100,
                },
            }
        )
    )
    sched.turns.backlog.append(10)
    sched.turns.admit()
    sched.turns.dispatch_queued()
    for rid in (0, 1):
        sched._on_request_finished(RequestFinished(0.0, rid, 5))
        sched.turns.complete(sched.buffer.trajs[rid])
    sched.transitions.begin_shrink((2, 3))
    for device in (2, 3):
        sched.transitions.on_offload_done(
            OffloadDone(1.0, device, sched.transitions.dev_op[device])
        )
    assert sched.transitions.shrink is None and sched.ctx.stats.shrinks_committed == 1
    sched.trainer.begin((2, 3))
    sched.ctx.out.clear()
    return sched


def test_training_done_bumps_the_version_expands_and_syncs() -> None:
    sched = _trained_ready()
    with pytest.raises(ValueError, match="VAL_INT_RANGE failed"):
        sched._on_training_done(TrainingDone(2.0, 1, 5))
    sched._on_training_done(TrainingDone(2.0, 1, 1))
    assert (
        sched.ctx.version == 1
        and sched.ctx.stats.train_steps == 1
        and sched.buffer.trained_groups == 1
    )
    op_id = sched.transitions.dev_op[2]
    assert sched.ctx.out == [Reload(op_id, (2, 3)), SyncWeights(1, (2, 3)), SyncWeights(1, (0, 1))]


def test_lost_training_gpu_fails_the_step_and_keeps_the_batch() -> None:
    sched = _trained_ready()
    sched._on_worker_lost(WorkerLost(2.0, 3))
    assert sched.pool.mode(3) is DeviceMode.LOST and list(sched.buffer.ready) == [0]
    sched._on_training_done(TrainingDone(3.0, 1, 1, ok=True))  # too late: the step failed
    assert sched.ctx.version == 0 and sched.ctx.stats.train_steps_failed == 1
    assert sched.pool.mode(2) is DeviceMode.OFFLOADED and sched.trainer.op is None


def test_lost_gpu_mid_shrink_rolls_back_and_requeues() -> None:
    sched = Scheduler(
        RlschedConfig.model_validate(
            {
                "devices": {"count": 4, "train": 2},
                "scheduler": {"train_batch_size": 4, "group_size": 4, "max_tokens": 100},
            }
        )
    )
    sched.turns.backlog.append(10)
    sched.turns.admit()
    sched.turns.dispatch_queued()
    sched.transitions.begin_shrink((2, 3))
    sched._on_worker_lost(WorkerLost(1.0, 3))
    assert sched.ctx.stats.shrinks_rolled_back == 1 and sched.transitions.shrink is None
    assert sched.pool.mode(2) is DeviceMode.ROLLOUT  # undrained: straight back
    assert sched.buffer.trajs[3].rid is None  # the lost rank's request is queued again
    sched._on_worker_lost(WorkerLost(1.0, 3))
    assert sched.ctx.stats.ignored_events == 1


@pytest.mark.parametrize("stopped", [False, True])
def test_a_whole_chunk_the_engine_stopped_closes_the_turn(stopped: bool) -> None:
    """`_on_request_finished` passes the engine's stop reason on (0.6.0): a chunked request that
    generated exactly its chunk and stopped goes to its environment step; one that did not stop
    is continued by a next chunk, dispatched in the same event."""
    sched = Scheduler(
        RlschedConfig.model_validate(
            {
                "devices": {"count": 2, "train": 1},
                "scheduler": {
                    "train_batch_size": 1,
                    "group_size": 1,
                    "max_tokens": 100,
                    "env_timeout_s": 10,
                    "chunk_tokens": 8,
                    "max_inflight_per_rank": 1,
                },
            }
        )
    )
    sched.handle(Started(0.0))
    (first,) = [c for c in sched.handle(PromptsLoaded(0.0, 0, (10,))) if isinstance(c, Dispatch)]
    assert first.max_new_tokens == 8
    out = sched.handle(RequestFinished(1.0, first.rid, 8, stopped=stopped))
    traj = sched.buffer.trajs[first.tid]
    if stopped:
        assert [c for c in out if isinstance(c, (Dispatch, StartEnvStep))] == [
            StartEnvStep(first.tid, 0, 11.0)
        ]
        assert traj.state is TrajState.ENV and traj.context_tokens == 18
        assert sched.ctx.stats.chunk_ends == 0
    else:
        (second,) = [c for c in out if isinstance(c, Dispatch)]
        assert not any(isinstance(c, StartEnvStep) for c in out)
        assert (second.tid, second.turn, second.resume_tokens, second.context_tokens) == (
            first.tid,
            0,
            8,
            10,
        )
        assert sched.ctx.stats.chunk_ends == 1


def test_a_failed_environment_ends_its_trajectory_counted_apart_from_timeouts() -> None:
    sched = _sched()
    sched._on_request_finished(RequestFinished(1.0, 0, 7))
    sched._on_request_finished(RequestFinished(1.0, 1, 7))
    sched._on_env_step_failed(EnvStepFailed(2.0, 0, 0))
    traj = sched.buffer.trajs[0]
    assert traj.state is TrajState.DONE and traj.timed_out
    assert (sched.ctx.stats.env_failures, sched.ctx.stats.env_timeouts) == (1, 0)
    sched._on_env_step_failed(EnvStepFailed(2.0, 0, 0))  # again: not in ENV any more
    sched._on_env_step_failed(EnvStepFailed(2.0, 1, 3))  # another turn
    assert sched.ctx.stats.ignored_events == 2 and sched.ctx.stats.env_failures == 1
    sched.turns.on_env_step_timed_out(EnvStepTimedOut(3.0, 1, 0))
    assert (sched.ctx.stats.env_failures, sched.ctx.stats.env_timeouts) == (1, 1)


def test_the_only_training_gpu_recovered_trains_the_ready_batch() -> None:
    """Two GPUs, the training one lost mid-step: the batch is ready again, and the replacement
    rejoins asleep so the pump can train on it (no reload, no shrink)."""
    sched = _sched(max_turns=1)
    for rid in (0, 1):
        sched._on_request_finished(RequestFinished(1.0, rid, 7))
    for tid in (0, 1):
        sched.turns.on_env_step_done(EnvStepDone(2.0, tid, 0, 3, True))
    sched.transitions.begin_shrink((1,))
    sched.transitions.on_offload_done(OffloadDone(2.0, 1, sched.transitions.dev_op[1]))
    sched.trainer.begin((1,))
    sched._on_worker_lost(WorkerLost(3.0, 1))
    assert sched.trainer.op is None and list(sched.buffer.ready) == [0]
    sched.ctx.out.clear()
    sched._on_worker_recovered(WorkerRecovered(4.0, 1))
    assert sched.pool.mode(1) is DeviceMode.OFFLOADED and sched.ctx.out == []
    assert sched.ctx.stats.devices_recovered == 1
    sched._on_worker_recovered(WorkerRecovered(4.0, 1))  # not LOST any more: ignored
    assert sched.ctx.stats.ignored_events == 1
    with pytest.raises(ValueError, match="VAL_INT_RANGE failed"):
        sched._on_worker_recovered(WorkerRecovered(4.0, 2))


def test_a_recovered_rollout_gpu_reloads_and_is_synced() -> None:
    sched = _trained_ready()
    sched._on_training_done(TrainingDone(2.0, 1, 1))
    sched._on_worker_lost(WorkerLost(3.0, 0))
    sched.ctx.out.clear()
    sched._on_worker_recovered(WorkerRecovered(4.0, 0))
    op_id = sched.transitions.dev_op[0]
    assert sched.ctx.out == [Reload(op_id, (0,)), SyncWeights(1, (0,))]
    assert sched.pool.mode(0) is DeviceMode.EXPANDING


def test_memory_reported_by_the_shell_reaches_the_router() -> None:
    """0.8.0 (issue 15 item 2): `Started.kv_tokens` sets every rank's capacity; each answer's
    `kv_free` replaces its rank's account; a shell reporting nothing leaves placement as it was."""
    quiet = _sched()
    assert quiet.router.kv_cap is None
    cfg = RlschedConfig.model_validate(
        {
            "devices": {"count": 3},
            "scheduler": {
                "mode": "colocate",
                "train_batch_size": 2,
                "group_size": 2,
                "max_tokens": 100,
                "env_timeout_s": 10,
            },
        }
    )
    sched = Scheduler(cfg)
    sched.handle(Started(0.0, kv_tokens=500))
    assert sched.router.kv_cap == 500
    out = sched.handle(PromptsLoaded(0.0, 0, (10, 20)))
    dispatched = [(c.rid, c.tid, c.rank) for c in out if isinstance(c, Dispatch)]
    assert dispatched == [(0, 0, 0), (1, 1, 1), (2, 2, 2), (3, 3, 0)]
    assert sched.router.kv_free == [500 - 10 - 20, 490, 480]
    sched.handle(RequestFinished(1.0, 1, 5, kv_free=485))
    sched.handle(RequestAborted(1.0, 2, 0, kv_free=499))
    assert sched.router.kv_free == [470, 485, 499 - 20]  # the aborted turn went back to rank 2
    assert sched.buffer.trajs[1].home == 1 and sched.buffer.trajs[2].home == -1
