"""Step 7 of design/rlsched_routing.md: the ranks serving, found once per pump (0.7.0)."""

from core_parts import core_parts

from rlsched.core.machine import Scheduler
from rlsched.pool import DeviceMode


def _parts() -> Scheduler:
    parts = core_parts(
        {
            "devices": {"count": 4, "gpus_per_rank": 1},
            "scheduler": {
                "mode": "colocate",
                "train_batch_size": 4,
                "group_size": 2,
                "staleness": 1,
                "max_tokens": 500,
                "max_inflight_per_rank": 2,
            },
        }
    )
    parts.router.set_kv_capacity(1000)
    return parts


def test_serving_ranks_are_in_rollout_and_fresh_enough() -> None:
    parts = _parts()
    assert parts.router.serving_ranks() == [0, 1, 2, 3]
    parts.pool.shrink_sampler([1])
    assert parts.pool.mode(1) is DeviceMode.SHRINKING
    assert parts.router.serving_ranks() == [0, 2, 3]
    parts.ctx.version = 2  # staleness 1: weights 0 are too old, weights 1 are not
    parts.router.set_rank_version(3, 1)
    assert parts.router.serving_ranks() == [3]


def test_the_pick_over_serving_ranks_checks_only_loads_the_cap_and_memory() -> None:
    parts = _parts()
    router = parts.router
    for _ in range(4):
        parts.buffer.admit_group(10)  # 8 unfinished over 4 ranks: fair share 2, cap 2
    router.kv_free = [100, 900, 800, 700]
    assert router.pick_roomiest(serving=[0, 2, 3]) == 2  # rank 1 is not serving
    assert router.pick_roomiest(serving=[]) is None
    router.load[2] = 2  # at the cap and its fair share
    assert router.pick_roomiest(serving=[0, 2, 3]) == 3
    assert router.pick_roomiest(blocked={0}, serving=[0, 2, 3]) is None  # every version 0
    router.cap = 1
    router.load[2] = 0
    router.load[3] = 1  # the cap (1) binds below the fair share (2)
    assert router.pick_roomiest(serving=[0, 2, 3]) == 2
    assert router.pick_roomiest(serving=[0, 3]) == 0
