"""Step 7 of design/rlsched_scheduler.md: shrink (and rollback), expand, training, stale drops."""

from rlsched.config import RlschedConfig
from rlsched.core.commands import Abort, DropStale, Offload, Reload, SyncWeights, Train
from rlsched.core.machine import Scheduler
from rlsched.pool import DeviceMode


def _running() -> Scheduler:
    """4 GPUs (timeshare, train = GPUs 2 and 3), one group of 4 trajectories on ranks 0..3."""
    sched = Scheduler(
        RlschedConfig.model_validate(
            {
                "devices": {"count": 4, "train": 2},
                "scheduler": {
                    "train_batch_size": 4,
                    "group_size": 4,
                    "staleness": 1,
                    "max_tokens": 100,
                },
            }
        )
    )
    sched._backlog.append(10)
    sched._admit()
    sched._dispatch_queued()
    sched._out.clear()
    return sched


def test_shrink_aborts_then_offloads_when_drained() -> None:
    sched = _running()
    sched._begin_shrink((2, 3))
    assert sched._out == [Abort(2, (2,)), Abort(3, (3,))]
    assert sched.shrinking == (2, 3) and sched.stats.shrinks == 1
    sched._out.clear()
    req = sched._release_request(2, 0)
    sched._requeue(sched.buffer.trajs[req.tid], req, 0)
    (offload,) = sched._out
    assert offload == Offload(offload.op_id, (2,)) and sched._dev_op[2] == offload.op_id


def test_rollback_returns_undrained_and_reloads_offloaded() -> None:
    sched = _running()
    sched._begin_shrink((2, 3))
    sched._release_request(2, 0)  # rank 2 drained -> Offload sent
    sched._release_request(3, 0)  # rank 3 drained -> Offload sent
    sched.pool.mark_offloaded(2)  # rank 2's offload finished, rank 3's still running
    sched._out.clear()
    sched._rollback_shrink()
    assert sched.shrinking == () and sched.stats.shrinks_rolled_back == 1
    (reload,) = sched._out
    assert sched.pool.mode(2) is DeviceMode.EXPANDING and reload == Reload(reload.op_id, (2,))
    assert sched._dev_op[2] == reload.op_id and sched._dev_op[3] != reload.op_id
    assert sched.reload_pending == frozenset({3})


def test_expand_syncs_when_behind_and_finishes_when_both_done() -> None:
    sched = _running()
    sched._begin_shrink((3,))
    sched._release_request(3, 0)
    sched.pool.mark_offloaded(3)
    sched._shrink = None
    sched.version = 1
    sched._out.clear()
    sched._begin_expand((3,))
    op_id = sched._dev_op[3]
    assert sched._out == [Reload(op_id, (3,)), SyncWeights(1, (3,))]
    sched._reloaded[3] = True
    sched._try_finish_expand(3)
    assert sched.pool.mode(3) is DeviceMode.EXPANDING  # weights still old
    sched._dev_version[3] = 1
    sched._try_finish_expand(3)
    assert sched.pool.mode(3) is DeviceMode.ROLLOUT


def test_training_takes_a_batch_and_ends() -> None:
    sched = _running()
    for rid in range(4):
        req = sched._release_request(rid, 5)
        traj = sched.buffer.trajs[req.tid]
        sched._finish_turn(traj, 5, req.version)
        sched._complete(traj)
    sched._begin_shrink((2, 3))
    for gpu in (2, 3):
        sched.pool.mark_offloaded(gpu)
    sched._shrink = None
    sched._out.clear()
    sched._begin_training((2, 3))
    (train,) = sched._out
    assert isinstance(train, Train) and (train.step, train.devices, train.version) == (1, (2, 3), 0)
    assert [s.tid for s in train.samples] == [0, 1, 2, 3]
    assert all(s.turn_versions == (0,) for s in train.samples) and sched.training
    sched._end_training(sched._training)
    assert not sched.training and sched.pool.gpus_in(DeviceMode.OFFLOADED) == (2, 3)


def test_drop_stale_aborts_and_forgets() -> None:
    sched = _running()
    sched.version = 2  # the group (version 0) is now beyond staleness 1
    sched._drop_stale()
    assert sched._out[:2] == [Abort(0, (0,)), Abort(1, (1,))]
    assert sched._out[-1] == DropStale((0,), (0, 1, 2, 3))
    assert sched.stats.stale_groups_dropped == 1 and sched.stats.stale_requests_aborted == 4
    assert sched.buffer.live_groups == 0 and sched.in_flight == 4  # answers still expected
