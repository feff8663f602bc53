"""Step 3 of design/gpu_pool.md: shrink and expand (all or nothing) and the named transitions."""

import pytest

from rlsched.pool import DeviceMode, GpuPool


def test_shrink_takes_whole_ranks() -> None:
    pool = GpuPool(8, gpus_per_rank=2)
    assert pool.shrink_sampler([4, 6]) == [2, 3]
    assert pool.gpus_in(DeviceMode.SHRINKING) == (4, 5, 6, 7)
    assert pool.gpus_in(DeviceMode.ROLLOUT) == (0, 1, 2, 3)


def test_a_rejected_shrink_changes_nothing() -> None:
    pool = GpuPool(8)
    pool.shrink_sampler([7])
    with pytest.raises(ValueError, match="VAL_SUBSET failed"):
        pool.shrink_sampler([6, 7])  # 7 is already shrinking: 6 must stay in rollout
    assert pool.gpus_in(DeviceMode.ROLLOUT) == tuple(range(7))


def test_shrink_of_a_partly_busy_rank_is_rejected() -> None:
    pool = GpuPool(4, gpus_per_rank=2, offloaded=(3,))
    with pytest.raises(ValueError):
        pool.shrink_sampler([2])  # rank 1 is not wholly in rollout
    assert pool.mode(2) is DeviceMode.ROLLOUT


def test_full_cycle_shrink_train_expand() -> None:
    pool = GpuPool(4, gpus_per_rank=2)
    ranks = pool.shrink_sampler([2, 3])
    for gpu in (2, 3):
        pool.mark_offloaded(gpu)
    pool.start_training((2, 3))
    assert pool.gpus_in(DeviceMode.TRAINING) == (2, 3)
    for gpu in (2, 3):
        pool.finish_training(gpu)
    assert pool.expand_sampler([2, 3]) == ranks
    assert pool.gpus_in(DeviceMode.EXPANDING) == (2, 3)
    for gpu in (2, 3):
        pool.mark_rollout(gpu)
    assert pool.gpus_in(DeviceMode.ROLLOUT) == (0, 1, 2, 3)
    pool.check()


def test_rollback_and_loss() -> None:
    pool = GpuPool(4)
    pool.shrink_sampler([1, 2])
    pool.mark_rollout(1)  # rollback of an undrained GPU
    assert pool.mark_lost(2) is DeviceMode.SHRINKING
    assert pool.mode(1) is DeviceMode.ROLLOUT and pool.mode(2) is DeviceMode.LOST
    with pytest.raises(ValueError, match="VAL_STATE_TRANSITION failed"):
        pool.mark_offloaded(0)  # ROLLOUT cannot skip SHRINKING


def test_training_is_all_or_nothing_and_expand_needs_offloaded() -> None:
    pool = GpuPool(4, offloaded=(3,))
    with pytest.raises(ValueError, match="VAL_SUBSET failed"):
        pool.start_training((2, 3))
    with pytest.raises(ValueError, match="VAL_NON_EMPTY failed"):
        pool.start_training(())
    assert pool.mode(3) is DeviceMode.OFFLOADED
    with pytest.raises(ValueError, match="VAL_SUBSET failed"):
        pool.expand_sampler([0])
