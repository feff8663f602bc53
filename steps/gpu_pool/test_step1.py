"""Step 1 of design/gpu_pool.md: pool state and rank mapping."""

import pytest

from rlsched.pool import GpuPool


def test_every_rank_starts_active() -> None:
    pool = GpuPool(8, gpus_per_rank=2)
    assert (pool.num_gpus, pool.gpus_per_rank) == (8, 2)
    assert pool.active_ranks == {0, 1, 2, 3}


def test_ranks_of_maps_gpus_to_their_ranks() -> None:
    pool = GpuPool(8, gpus_per_rank=2)
    assert pool.ranks_of([7, 0, 1, 5]) == [0, 2, 3]
    assert pool.ranks_of([]) == []


@pytest.mark.parametrize(("num_gpus", "per_rank", "message"), [
    (0, 1, "VAL_INT_RANGE failed in GpuPool.__init__"),
    (8, 0, "VAL_INT_RANGE failed in GpuPool.__init__"),
    (8, 16, "VAL_INT_RANGE failed in GpuPool.__init__"),
    (8, 3, "not a multiple"),
])
def test_bad_shapes_are_rejected(num_gpus: int, per_rank: int, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        GpuPool(num_gpus, per_rank)
