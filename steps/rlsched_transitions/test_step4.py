"""Step 4 of design/rlsched_transitions.md: a replaced rank rejoins at version 0."""

from core_parts import core_parts

from rlsched.core.events import WeightsSynced
from rlsched.pool import DeviceMode


def test_a_recovered_rank_rejoins_asleep_at_version_zero_and_is_synced_on_expand() -> None:
    parts = core_parts({"devices": {"count": 4, "gpus_per_rank": 2, "train": 2}})
    tr = parts.transitions
    parts.ctx.version = 3
    tr.dev_version[2] = tr.dev_version[3] = tr.sync_sent[2] = tr.sync_sent[3] = 3
    parts.router.set_rank_version(1, 3)
    assert tr.lose_rank(1) is False
    assert tr.recover_rank(1) == (2, 3)
    assert parts.pool.gpus_in(DeviceMode.OFFLOADED) == (2, 3)
    assert tr.dev_version[2:] == [0, 0] and tr.sync_sent[2:] == [0, 0]
    assert parts.router.rank_version[1] == 0 and tr.dev_op[2:] == [None, None]
    parts.ctx.out = []
    tr.begin_expand((2, 3))
    kinds = [type(c).__name__ for c in parts.ctx.out]
    assert kinds == ["Reload", "SyncWeights"] and parts.ctx.out[1].version == 3
    tr.on_weights_synced(WeightsSynced(1.0, 2, 3))
    assert tr.dev_version[2] == 3 and parts.pool.mode(2) is DeviceMode.EXPANDING


def test_recovery_at_version_zero_needs_no_sync() -> None:
    parts = core_parts({"devices": {"count": 2, "train": 1}})
    tr = parts.transitions
    tr.lose_rank(1)
    tr.recover_rank(1)
    parts.ctx.out = []
    tr.begin_expand((1,))
    assert [type(c).__name__ for c in parts.ctx.out] == ["Reload"]
