"""Step 1 of design/gpu_pool.md: pool modes and rank layout."""

import pytest

from rlsched.pool import DeviceMode, GpuPool


def test_six_modes() -> None:
    assert {m.name for m in DeviceMode} == {
        "ROLLOUT",
        "SHRINKING",
        "TRAINING",
        "EXPANDING",
        "OFFLOADED",
        "LOST",
    }


def test_every_gpu_starts_in_rollout_except_offloaded_ones() -> None:
    pool = GpuPool(8, gpus_per_rank=2, offloaded=(6, 7))
    assert (pool.num_gpus, pool.gpus_per_rank, pool.num_ranks) == (8, 2, 4)
    assert pool.gpus_in(DeviceMode.ROLLOUT) == (0, 1, 2, 3, 4, 5)
    assert pool.gpus_in(DeviceMode.OFFLOADED) == (6, 7)
    assert pool.count(DeviceMode.ROLLOUT) == 6 and pool.count(DeviceMode.LOST) == 0
    assert pool.mode(6) is DeviceMode.OFFLOADED and pool.mode(0) is DeviceMode.ROLLOUT
    assert sum(pool.count(m) for m in DeviceMode) == 8


def test_rank_layout() -> None:
    pool = GpuPool(8, gpus_per_rank=2, offloaded=(7,))
    assert [pool.rank_of(g) for g in range(8)] == [0, 0, 1, 1, 2, 2, 3, 3]
    assert pool.gpus_of(2) == (4, 5)
    assert pool.ranks_of([7, 0, 1, 5]) == [0, 2, 3]
    assert pool.ranks_of([]) == []
    assert [pool.rank_in_rollout(r) for r in range(4)] == [True, True, True, False]


@pytest.mark.parametrize(
    ("num_gpus", "per_rank", "offloaded", "message"),
    [
        (0, 1, (), "VAL_INT_RANGE failed in GpuPool.__init__"),
        (8, 0, (), "VAL_INT_RANGE failed in GpuPool.__init__"),
        (8, 16, (), "VAL_INT_RANGE failed in GpuPool.__init__"),
        (True, 1, (), "VAL_INT_RANGE failed in GpuPool.__init__"),
        (8, 1, (8,), "VAL_INT_RANGE failed in GpuPool.__init__"),
        (8, 3, (), "not a multiple"),
    ],
)
def test_bad_shapes_are_rejected(num_gpus, per_rank, offloaded, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        GpuPool(num_gpus, per_rank, offloaded)
