"""Step 3 of design/gpu_pool.md: shrink and expand are inverse, all-or-nothing operations."""

import pytest

from rlsched.pool import GpuPool


def test_shrink_returns_the_ranks_owning_the_targets() -> None:
    pool = GpuPool(8, gpus_per_rank=2)
    assert pool.shrink_sampler([4, 5, 6]) == [2, 3]
    assert pool.active_ranks == {0, 1}


def test_expand_is_the_inverse_of_shrink() -> None:
    pool = GpuPool(8, gpus_per_rank=2)
    offloaded = pool.shrink_sampler([4, 6])
    assert pool.expand_sampler([4, 5, 6, 7]) == offloaded
    assert pool.active_ranks == {0, 1, 2, 3}


def test_a_rejected_shrink_changes_nothing() -> None:
    pool = GpuPool(8)
    pool.shrink_sampler([7])
    with pytest.raises(ValueError, match="offloaded ranks"):
        pool.shrink_sampler([6, 7])  # 7 is already offloaded: all or nothing, 6 stays active
    assert pool.active_ranks == set(range(7))


def test_expand_of_active_gpus_is_rejected() -> None:
    with pytest.raises(ValueError, match="active ranks"):
        GpuPool(8).expand_sampler([0])
