"""Step 2 of design/gpu_pool.md: the allocation check, the checked mutation point, the audit."""

import pytest

from rlsched.pool import DeviceMode, GpuPool


@pytest.mark.parametrize(
    ("targets", "error", "message"),
    [
        ([], ValueError, r"VAL_NON_EMPTY failed .*target_gpus=\[\]"),
        ([1, 1], ValueError, r"VAL_NO_DUPLICATES failed .*duplicates=\[1\]"),
        ([0, 8], ValueError, r"VAL_INT_RANGE failed .*item=8"),
        ([-1], ValueError, r"VAL_INT_RANGE failed .*item=-1"),
        ((2.0,), ValueError, r"VAL_INT_RANGE failed .*item=2.0"),
        ({1, 2}, TypeError, r"VAL_TYPE_CHECK failed"),
        ([1, 5], ValueError, r"VAL_SUBSET failed .*extras=\[5\]"),
    ],
)
def test_bad_targets(targets, error: type[Exception], message: str) -> None:
    pool = GpuPool(8)
    with pytest.raises(error, match=message):
        pool._validate_gpu_allocation(targets, {0, 1, 2, 3})
    assert pool.gpus_in(DeviceMode.ROLLOUT) == tuple(range(8))


def test_good_targets_pass_and_change_nothing() -> None:
    pool = GpuPool(4, gpus_per_rank=2)
    # the edges of the range, as a list and as a tuple, against the GPUs of the source mode
    assert pool._validate_gpu_allocation([0, 3], {0, 1, 2, 3}) is None
    assert pool._validate_gpu_allocation((3,), {3}) is None
    assert pool.gpus_in(DeviceMode.ROLLOUT) == (0, 1, 2, 3)
    with pytest.raises(ValueError, match=r"VAL_INT_RANGE failed .*item=4"):
        pool._validate_gpu_allocation([4], {0, 1, 2, 3, 4})  # in the set, not in the pool


def test_move_follows_the_transition_table() -> None:
    pool = GpuPool(2)
    pool._move(0, DeviceMode.SHRINKING)
    pool._move(0, DeviceMode.OFFLOADED)
    pool._move(0, DeviceMode.TRAINING)
    assert pool.mode(0) is DeviceMode.TRAINING and pool.gpus_in(DeviceMode.TRAINING) == (0,)
    with pytest.raises(ValueError, match="VAL_STATE_TRANSITION failed"):
        pool._move(1, DeviceMode.TRAINING)  # ROLLOUT -> TRAINING skips the offload
    with pytest.raises(ValueError, match="VAL_INT_RANGE failed"):
        pool._move(2, DeviceMode.LOST)
    pool._move(1, DeviceMode.LOST)
    with pytest.raises(ValueError, match="VAL_STATE_TRANSITION failed"):
        pool._move(1, DeviceMode.ROLLOUT)  # LOST leads only to OFFLOADED (a replacement)
    pool.check()


def test_table_is_complete_and_lost_is_reachable_from_everywhere() -> None:
    table = GpuPool.TRANSITIONS
    assert set(table) == set(DeviceMode)
    assert all(DeviceMode.LOST in table[m] for m in DeviceMode if m is not DeviceMode.LOST)
    assert DeviceMode.ROLLOUT in table[DeviceMode.SHRINKING]  # rollback


def test_check_detects_a_corrupted_partition() -> None:
    pool = GpuPool(4)
    pool.check()
    pool._by_mode[DeviceMode.ROLLOUT].discard(3)
    with pytest.raises(AssertionError, match="AST_INVARIANT"):
        pool.check()
