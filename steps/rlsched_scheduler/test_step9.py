"""Step 9 of design/rlsched_scheduler.md: handlers of training and devices, worker loss."""

import pytest

from rlsched.config import RlschedConfig
from rlsched.core.commands import Reload, SyncWeights
from rlsched.core.events import (
    OffloadDone,
    ReloadDone,
    TrainingDone,
    WeightsSynced,
    WorkerLost,
)
from rlsched.core.machine import Scheduler
from rlsched.pool import DeviceMode


def _trained_ready() -> Scheduler:
    """Timeshare on 4 GPUs (train = 2, 3): one complete group, training set shrunk and idle."""
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
    sched._backlog.append(10)
    sched._admit()
    sched._dispatch_queued()
    for rid in (0, 1):
        req = sched._release_request(rid, 5)
        traj = sched.buffer.trajs[req.tid]
        sched._finish_turn(traj, 5, req.version)
        sched._complete(traj)
    sched._begin_shrink((2, 3))
    sched._on_offload_done(OffloadDone(1.0, 2, sched._dev_op[2]))
    assert sched.shrinking == (2, 3)
    sched._on_offload_done(OffloadDone(1.0, 3, sched._dev_op[3]))
    assert sched.shrinking == () and sched.stats.shrinks_committed == 1
    sched._begin_training((2, 3))
    sched._out.clear()
    return sched


def test_training_done_bumps_the_version_expands_and_syncs() -> None:
    sched = _trained_ready()
    with pytest.raises(ValueError, match="VAL_INT_RANGE failed"):
        sched._on_training_done(TrainingDone(2.0, 1, 5))
    sched._on_training_done(TrainingDone(2.0, 1, 1))
    assert sched.version == 1 and sched.stats.train_steps == 1 and sched.buffer.trained_groups == 1
    op_id = sched._dev_op[2]
    assert sched._out == [Reload(op_id, (2, 3)), SyncWeights(1, (2, 3)), SyncWeights(1, (0, 1))]
    sched._on_reload_done(ReloadDone(3.0, 2, op_id - 1))  # not the outstanding Reload
    assert sched.stats.ignored_events == 1
    sched._on_reload_done(ReloadDone(3.0, 2, op_id))
    sched._on_weights_synced(WeightsSynced(3.0, 2, 1))
    assert sched.pool.mode(2) is DeviceMode.ROLLOUT and sched.pool.mode(3) is DeviceMode.EXPANDING
    sched._on_weights_synced(WeightsSynced(3.0, 3, 1))
    sched._on_reload_done(ReloadDone(3.0, 3, op_id))
    assert sched.pool.mode(3) is DeviceMode.ROLLOUT
    with pytest.raises(ValueError, match="VAL_INT_RANGE failed"):
        sched._on_weights_synced(WeightsSynced(3.0, 0, 2))  # from the future


def test_lost_training_gpu_fails_the_step_and_keeps_the_batch() -> None:
    sched = _trained_ready()
    sched._on_worker_lost(WorkerLost(2.0, 3))
    assert sched.pool.mode(3) is DeviceMode.LOST and list(sched.buffer.ready) == [0]
    sched._on_training_done(TrainingDone(3.0, 1, 1, ok=True))  # too late: the step failed
    assert sched.version == 0 and sched.stats.train_steps_failed == 1
    assert sched.pool.mode(2) is DeviceMode.OFFLOADED and not sched.training


def _one_group_admitted() -> Scheduler:
    """Timeshare on 4 GPUs (train = 2, 3): one group of 4 admitted and queued, nothing dispatched."""
    sched = Scheduler(
        RlschedConfig.model_validate(
            {
                "devices": {"count": 4, "train": 2},
                "scheduler": {"train_batch_size": 4, "group_size": 4, "max_tokens": 100},
            }
        )
    )
    sched._backlog.append(10)
    sched._admit()
    return sched


def test_lost_gpu_mid_shrink_rolls_back_and_requeues() -> None:
    sched = _one_group_admitted()
    sched._dispatch_queued()
    sched._begin_shrink((2, 3))
    sched._on_worker_lost(WorkerLost(1.0, 3))
    assert sched.stats.shrinks_rolled_back == 1 and sched.shrinking == ()
    assert sched.pool.mode(2) is DeviceMode.ROLLOUT  # undrained: straight back
    assert sched.buffer.trajs[3].rid is None  # the lost rank's request is queued again
    sched._on_worker_lost(WorkerLost(1.0, 3))
    assert sched.stats.ignored_events == 1


def test_offload_answers_must_repeat_the_outstanding_operation_id() -> None:
    """A late OffloadDone of an earlier offload (another id) neither offloads nor commits."""
    sched = _one_group_admitted()
    sched._begin_shrink((2, 3))  # nothing runs yet: both ranks are offloaded at once
    current = sched._dev_op[2]
    assert current is not None and sched._dev_op[3] != current
    sched._on_offload_done(OffloadDone(1.0, 2, current - 1))
    sched._on_offload_done(OffloadDone(1.0, 2, sched._dev_op[3]))  # another device's id
    assert sched.pool.mode(2) is DeviceMode.SHRINKING and sched.stats.ignored_events == 2
    sched._on_offload_done(OffloadDone(1.0, 2, current))
    assert sched.pool.mode(2) is DeviceMode.OFFLOADED and sched._dev_op[2] is None
    sched._on_offload_done(OffloadDone(1.0, 2, current))  # the same answer twice
    assert sched.stats.ignored_events == 3
    with pytest.raises(ValueError, match="VAL_INT_RANGE failed"):
        sched._on_offload_done(OffloadDone(1.0, 9, current))
