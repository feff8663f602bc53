"""Step 4 of design/gpu_pool.md: a LOST GPU whose worker was replaced rejoins, OFFLOADED."""

import pytest

from rlsched.pool import DeviceMode, GpuPool


def test_a_recovered_gpu_rejoins_asleep_and_may_expand_or_train() -> None:
    pool = GpuPool(4, gpus_per_rank=2)
    pool.mark_lost(2)
    pool.mark_lost(3)
    pool.mark_recovered(2)
    assert pool.mode(2) is DeviceMode.OFFLOADED and pool.count(DeviceMode.LOST) == 1
    pool.mark_recovered(3)
    assert pool.gpus_in(DeviceMode.OFFLOADED) == (2, 3) and not pool.rank_in_rollout(1)
    assert pool.expand_sampler([2, 3]) == [1]
    pool.mark_rollout(2)
    pool.mark_rollout(3)
    assert pool.rank_in_rollout(1)
    pool.check()


def test_only_a_lost_gpu_recovers() -> None:
    pool = GpuPool(2)
    for gpu in (0, 5):
        with pytest.raises(ValueError):
            pool.mark_recovered(gpu)  # ROLLOUT -> OFFLOADED skips the offload; 5 is no GPU
    pool.mark_lost(1)
    with pytest.raises(ValueError, match="VAL_STATE_TRANSITION failed"):
        pool._move(1, DeviceMode.TRAINING)  # a replacement trains only after it rejoined
    assert pool.mode(0) is DeviceMode.ROLLOUT and pool.mode(1) is DeviceMode.LOST
    pool.check()
