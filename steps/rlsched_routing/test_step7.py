"""Step 7 of design/rlsched_routing.md: the roomiest rank, from the lazy heaps (0.10.0)."""

from core_parts import core_parts, roomiest

from rlsched.core.machine import Scheduler
from rlsched.pool import DeviceMode


def _parts(cap: int = 2) -> Scheduler:
    parts = core_parts(
        {
            "devices": {"count": 4, "gpus_per_rank": 1},
            "scheduler": {
                "mode": "colocate",
                "train_batch_size": 4,
                "group_size": 2,
                "staleness": 1,
                "max_tokens": 500,
                "max_inflight_per_rank": cap,
            },
        }
    )
    parts.router.set_kv_capacity(1000)
    return parts


def _set(parts: Scheduler, free: list[int], load: list[int]) -> None:
    """Memory and loads by hand, each rank offered again as the router's callers do."""
    parts.router.kv_free[:] = free
    parts.router.load[:] = load
    for rank in range(4):
        parts.router.push_rank(rank)


def test_the_heaps_hold_one_int_per_rank_most_free_kv_first() -> None:
    parts = _parts()
    router = parts.router
    assert router._span == 3 * 4  # (cap + 1) x ranks
    assert router._heaps == {0: [r - 1000 * 12 for r in range(4)]}  # every rank empty
    _set(parts, [100, 900, 800, 700], [0, 1, 1, 0])
    keys = [0 * 4 + 0 - 100 * 12, 1 * 4 + 1 - 900 * 12, 1 * 4 + 2 - 800 * 12, 0 * 4 + 3 - 700 * 12]
    assert set(keys) <= set(router._heaps[0])  # the empty ranks' first entries are stale now
    assert sorted(range(4), key=keys.__getitem__) == [1, 2, 3, 0]  # most free KV first


def test_the_pick_skips_ranks_not_serving_or_not_fresh_enough() -> None:
    parts = _parts()
    router = parts.router
    for _ in range(4):
        parts.buffer.admit_group(10)  # 8 unfinished over 4 ranks: fair share 2, cap 2
    _set(parts, [100, 900, 800, 700], [0, 0, 0, 0])
    parts.pool.shrink_sampler([1])
    assert parts.pool.mode(1) is DeviceMode.SHRINKING
    assert roomiest(router) == 2  # rank 1 is not serving
    parts.ctx.version = 2  # staleness 1: weights 0 are too old, weights 1 are not
    router.set_rank_version(3, 1)
    router.push_rank(3)
    assert roomiest(router) == 3
    assert roomiest(router, blocked={1}) is None  # every fresh rank holds version 1


def test_a_roomier_rank_at_its_fair_share_is_parked_until_the_share_grows() -> None:
    parts = _parts(cap=8)
    router = parts.router
    for _ in range(2):
        parts.buffer.admit_group(10)  # 4 unfinished over 4 ranks: fair share 1
    _set(parts, [900, 800, 700, 600], [1, 0, 1, 0])
    assert roomiest(router) == 1  # rank 0 is roomier but holds its share
    assert [key % 4 for key in router._parked] == [0] and router._parked_fair == 1
    assert roomiest(router) == 1  # parked: not looked at again
    router.load[1] = 1
    router.push_rank(1)
    assert roomiest(router) == 3  # rank 2 (700) is parked on the way to rank 3 (600)
    assert sorted(key % 4 for key in router._parked) == [0, 1, 2]
    router.load[3] = 1
    router.push_rank(3)
    assert roomiest(router) is None  # everyone holds the share of 1
    parts.buffer.admit_group(10)  # 6 unfinished: fair share 2, the parked ranks come back
    assert roomiest(router) == 0 and router._parked == []
    router.load[0] = 2
    router.push_rank(0)
    assert roomiest(router) == 1 and [key % 4 for key in router._parked] == [0]


def test_a_parked_rank_whose_load_or_memory_changed_comes_back_through_its_push() -> None:
    parts = _parts(cap=8)
    router = parts.router
    parts.buffer.admit_group(10)  # 2 unfinished over 4 ranks: fair share 1
    _set(parts, [900, 800, 700, 600], [1, 0, 0, 0])
    assert roomiest(router) == 1 and len(router._parked) == 1
    router.load[0] = 0  # its request finished: the rank is offered with its new key
    router.push_rank(0)
    assert roomiest(router) == 0
    parts.buffer.admit_group(10)
    parts.buffer.admit_group(10)  # 6 unfinished: the share grows, the stale parked entry goes
    assert roomiest(router) == 0 and router._parked == []
    assert sorted(key % 4 for key in router._heaps[0]).count(0) == 1


def test_the_cap_binds_below_the_fair_share() -> None:
    parts = _parts(cap=1)
    router = parts.router
    for _ in range(4):
        parts.buffer.admit_group(10)  # 8 unfinished over 4 ranks: fair share 2, cap 1
    _set(parts, [100, 900, 800, 700], [0, 1, 0, 0])
    assert roomiest(router) == 2  # rank 1 is at the cap: not routable
    router.load[2] = 1
    router.push_rank(2)
    assert roomiest(router) == 3


def test_a_rebuild_takes_the_parked_entries_back() -> None:
    parts = _parts(cap=8)
    router = parts.router
    parts.buffer.admit_group(10)  # 2 unfinished over 4 ranks: fair share 1
    _set(parts, [900, 800, 700, 600], [1, 0, 0, 0])
    assert roomiest(router) == 1 and len(router._parked) == 1
    for _ in range(4 * 4 + 64):
        router.push_rank(2)  # stale entries pile up: the heaps are rebuilt
    assert router._entries <= 4 * 4 + 64 and router._parked == []
    assert {key % 4 for key in router._heaps[0]} == {0, 1, 2, 3}  # rank 0 back
    assert roomiest(router) == 1 and len(router._parked) == 1
