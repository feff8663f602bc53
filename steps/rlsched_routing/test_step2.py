"""Step 2 of design/rlsched_routing.md: requests in flight and least-loaded placement."""

import pytest
from core_parts import CoreParts

from rlsched.core.buffer import TrajState
from rlsched.core.commands import Dispatch
from rlsched.core.routing import Request
from rlsched.pool import DeviceMode


def _parts(mode: str = "timeshare", cap: int = 2) -> CoreParts:
    devices = {"count": 4, "gpus_per_rank": 2} if mode == "colocate" else {"count": 4, "gpus_per_rank": 2, "train": 2}
    return CoreParts({"devices": devices, "scheduler": {"mode": mode, "train_batch_size": 4, "group_size": 2,
                                                        "max_tokens": 100, "max_inflight_per_rank": cap}})


def test_request_record() -> None:
    req = Request(rid=1, tid=2, rank=0, version=0, max_new_tokens=10)
    assert req.aborting is False


def test_a_constructed_router_offers_every_routable_rank() -> None:
    parts = _parts()
    assert [parts.router.routable(r) for r in range(2)] == [True, True]
    assert sorted(parts.router._heap) == [(0, 0), (0, 1)]
    assert parts.in_flight == 0 and parts.router.load == [0, 0]


def test_disaggregated_training_gpus_start_offloaded_and_unroutable() -> None:
    parts = _parts("disaggregated")
    assert parts.pool.gpus_in(DeviceMode.OFFLOADED) == (2, 3)
    assert parts.router.routable(0) and not parts.router.routable(1)
    parts.router.push_rank(1)
    assert (0, 1) not in parts.router._heap


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
    assert parts.buffer.trajs[0].state is TrajState.RUNNING and parts.buffer.groups[group.gid].min_version == 0
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
    parts.router.set_rank_version(1, 3)
    assert parts.router.rank_version == [0, 3]
