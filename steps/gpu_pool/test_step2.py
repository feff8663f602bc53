"""Step 2 of design/gpu_pool.md: the allocation check rejects bad targets and changes nothing."""

import pytest

from rlsched.pool import GpuPool


@pytest.mark.parametrize(("targets", "error", "message"), [
    ([], ValueError, r"VAL_NON_EMPTY failed .*target_gpus=\[\]"),
    ([1, 1], ValueError, r"VAL_NO_DUPLICATES failed .*duplicates=\[1\]"),
    ([0, 8], ValueError, r"VAL_INT_RANGE failed .*item=8"),
    ([-1], ValueError, r"VAL_INT_RANGE failed .*item=-1"),
    ((2.0,), ValueError, r"VAL_INT_RANGE failed .*item=2.0"),
    ({1, 2}, TypeError, r"VAL_TYPE_CHECK failed"),
])
def test_bad_targets(targets, error: type[Exception], message: str) -> None:
    pool = GpuPool(8)
    with pytest.raises(error, match=message):
        pool._validate_gpu_allocation(targets, pool.active_ranks, expect_active=True)
    assert pool.active_ranks == set(range(8))


def test_targets_must_be_in_the_expected_state() -> None:
    pool = GpuPool(4, gpus_per_rank=2)
    pool._validate_gpu_allocation([0, 3], {0, 1}, expect_active=True)
    with pytest.raises(ValueError, match=r"GPUs \[2, 3\] are on offloaded ranks"):
        pool._validate_gpu_allocation([0, 2, 3], {0}, expect_active=True)
    with pytest.raises(ValueError, match=r"GPUs \[0\] are on active ranks"):
        pool._validate_gpu_allocation([0, 2], {0}, expect_active=False)
