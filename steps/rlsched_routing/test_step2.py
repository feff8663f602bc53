"""Step 2 of design/rlsched_routing.md: requests in flight and least-loaded placement."""

import pytest
from core_parts import core_parts

from rlsched.core.buffer import TrajState
from rlsched.core.commands import Dispatch
from rlsched.core.machine import Scheduler
from rlsched.core.routing import Request
from rlsched.pool import DeviceMode


def _parts(mode: str = "timeshare", cap: int = 2) -> Scheduler:
    devices = (
        {"count": 4, "gpus_per_rank": 2}
        if mode == "colocate"
        else {"count": 4, "gpus_per_rank": 2, "train": 2}
    )
    return core_parts(
        {
            "devices": devices,
            "scheduler": {
                "mode": mode,
                "train_batch_size": 4,
                "group_size": 2,
                "max_tokens": 100,
                "max_inflight_per_rank": cap,
            },
        }
    )


def test_request_record() -> None:
    req = Request(rid=1, tid=2, rank=0, version=0, max_new_tokens=10)
    assert req.aborting is False


def test_a_constructed_router_offers_every_routable_rank() -> None:
    parts = _parts()
    assert [parts.router.routable(r) for r in range(2)] == [True, True]
    assert parts.router._heaps == {0: [0, 1]}  # keys load x ranks + rank: (0, 0), (0, 1)
    assert parts.in_flight == 0 and parts.router.load == [0, 0]


def test_disaggregated_training_gpus_start_offloaded_and_unroutable() -> None:
    parts = _parts("disaggregated")
    assert parts.pool.gpus_in(DeviceMode.OFFLOADED) == (2, 3)
    assert parts.router.routable(0) and not parts.router.routable(1)
    parts.router.push_rank(1)
    assert parts.router._heaps == {0: [0]}


def test_dispatch_fills_the_least_loaded_rank_up_to_the_cap() -> None:
    parts = _parts(cap=2)
    group = parts.buffer.admit_group(10)
    parts.buffer.admit_group(10)
    placed = []
    for tid in range(4):
        rank = parts.router.pick_rank()
        parts.router.dispatch(parts.buffer.trajs[tid], rank)
        placed.append(rank)
    assert placed == [0, 1, 0, 1] and parts.router.pick_rank() is None
    first = parts.ctx.out[0]
    assert first == Dispatch(0, 0, 0, 0, 0, 10, 0, 90, 0, None)
    assert (
        parts.buffer.trajs[0].state is TrajState.RUNNING
        and parts.buffer.groups[group.gid].min_version == 0
    )
    assert parts.in_flight == 4 and parts.stats.dispatched == 4


def test_dispatch_only_to_rollout_ranks() -> None:
    parts = _parts()
    parts.buffer.admit_group(10)
    parts.pool.shrink_sampler([2, 3])
    assert not parts.router.routable(1)
    with pytest.raises(AssertionError, match="AST_PRECONDITION"):
        parts.router.dispatch(parts.buffer.trajs[0], 1)


def test_release_validates_and_ignores_unknown_ids() -> None:
    parts = _parts()
    parts.buffer.admit_group(10)
    parts.router.dispatch(parts.buffer.trajs[0], 0)
    assert parts.router.release(99, 1) is None and parts.stats.ignored_events == 1
    with pytest.raises(ValueError, match="VAL_INT_RANGE failed"):
        parts.router.release(0, 91)  # more than max_new_tokens
    assert parts.in_flight == 1
    req = parts.router.release(0, 90)
    assert req.tid == 0 and parts.in_flight == 0 and parts.router.load == [0, 0]


def test_a_rank_takes_no_more_than_its_fair_share() -> None:
    """Fair share: unfinished trajectories over the ranks in rollout or expanding, rounded up."""
    parts = _parts(cap=8)
    parts.buffer.admit_group(10)  # 2 unfinished over 2 ranks: one each
    for tid in (0, 1):
        rank = parts.router.pick_rank()
        parts.router.dispatch(parts.buffer.trajs[tid], rank)
    assert parts.router.load == [1, 1] and parts.router.pick_rank() is None
    parts.buffer.admit_group(10)  # 4 over 2: two each
    assert parts.router.pick_rank() == 0
    parts.router.dispatch(parts.buffer.trajs[2], 0)
    assert parts.router.pick_rank() == 1
    parts.router.dispatch(parts.buffer.trajs[3], 1)
    assert parts.router.pick_rank() is None
    parts.buffer.admit_group(10)
    parts.pool.shrink_sampler([2, 3])  # rank 1 leaves rollout: rank 0 may take all 6
    assert parts.router.pick_rank() == 0
    for gpu in (2, 3):
        parts.pool.mark_offloaded(gpu)
    parts.pool.expand_sampler([2, 3])  # an expanding rank counts: 6 over 2 leaves rank 0 at 3
    parts.router.dispatch(parts.buffer.trajs[4], 0)
    assert parts.router.load == [3, 2] and parts.router.pick_rank() is None


def test_stale_heap_entries_are_dropped_by_a_rebuild() -> None:
    parts = _parts(cap=100)
    for _ in range(200):
        parts.router.push_rank(0)
    heap = parts.router._heaps[0]
    assert len(heap) == parts.router._entries <= 4 * 2 + 64  # rebuilt, not 202 entries
    assert set(heap) == {0, 1} and parts.router.pick_rank() == 0
