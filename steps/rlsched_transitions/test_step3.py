"""Step 3 of design/rlsched_transitions.md: device answers by operation id, and lost ranks."""

import pytest
from core_parts import core_parts

from rlsched.core.events import OffloadDone, ReloadDone, WeightsSynced
from rlsched.core.machine import Scheduler
from rlsched.pool import DeviceMode


def _one_group_admitted() -> Scheduler:
    """Timeshare on 4 GPUs (train = 2, 3): one group of 4 admitted, queued, nothing dispatched."""
    parts = core_parts(
        {
            "devices": {"count": 4, "train": 2},
            "scheduler": {"train_batch_size": 4, "group_size": 4, "max_tokens": 100},
        }
    )
    parts.turns.backlog.append(10)
    parts.turns.admit()
    return parts


def test_offload_answers_must_repeat_the_outstanding_operation_id() -> None:
    """A late OffloadDone of an earlier offload (another id) neither offloads nor commits."""
    parts = _one_group_admitted()
    parts.transitions.begin_shrink((2, 3))  # nothing runs yet: both ranks are offloaded at once
    current = parts.transitions.dev_op[2]
    assert current is not None and parts.transitions.dev_op[3] != current
    parts.transitions.on_offload_done(OffloadDone(1.0, 2, current - 1))
    parts.transitions.on_offload_done(
        OffloadDone(1.0, 2, parts.transitions.dev_op[3])
    )  # another device's id
    assert parts.pool.mode(2) is DeviceMode.SHRINKING and parts.stats.ignored_events == 2
    parts.transitions.on_offload_done(OffloadDone(1.0, 2, current))
    assert parts.pool.mode(2) is DeviceMode.OFFLOADED and parts.transitions.dev_op[2] is None
    parts.transitions.on_offload_done(OffloadDone(1.0, 2, current))  # the same answer twice
    assert parts.stats.ignored_events == 3
    parts.transitions.on_offload_done(OffloadDone(1.0, 3, parts.transitions.dev_op[3]))
    assert parts.shrinking == () and parts.stats.shrinks_committed == 1
    with pytest.raises(ValueError, match="VAL_INT_RANGE failed"):
        parts.transitions.on_offload_done(OffloadDone(1.0, 9, current))


def test_reload_and_sync_answers_in_either_order() -> None:
    parts = _one_group_admitted()
    parts.transitions.begin_shrink((2, 3))
    for device in (2, 3):
        parts.transitions.on_offload_done(
            OffloadDone(1.0, device, parts.transitions.dev_op[device])
        )
    parts.ctx.version = 1
    parts.transitions.begin_expand((2, 3))
    op_id = parts.transitions.dev_op[2]
    parts.transitions.on_reload_done(ReloadDone(2.0, 2, op_id - 1))  # not the outstanding Reload
    assert parts.stats.ignored_events == 1
    parts.transitions.on_reload_done(ReloadDone(2.0, 2, op_id))
    parts.transitions.on_weights_synced(WeightsSynced(2.0, 2, 1))
    parts.transitions.on_weights_synced(WeightsSynced(2.0, 3, 1))
    assert parts.pool.mode(2) is DeviceMode.ROLLOUT and parts.pool.mode(3) is DeviceMode.EXPANDING
    parts.transitions.on_reload_done(ReloadDone(2.0, 3, op_id))
    assert parts.pool.mode(3) is DeviceMode.ROLLOUT and parts.router.rank_version == [0, 0, 1, 1]
    parts.transitions.on_weights_synced(WeightsSynced(2.0, 3, 1))  # already held
    assert parts.stats.ignored_events == 2
    with pytest.raises(ValueError, match="VAL_INT_RANGE failed"):
        parts.transitions.on_weights_synced(WeightsSynced(3.0, 0, 2))  # from the future


def test_losing_a_rank_forgets_its_operations() -> None:
    parts = _one_group_admitted()
    parts.transitions.begin_shrink((2, 3))
    assert parts.transitions.lose_rank(2) is False
    assert parts.pool.mode(2) is DeviceMode.LOST and parts.transitions.dev_op[2] is None
