"""Step 3 of design/rlsched_routing.md: aborting requests, forgetting a lost rank, versions."""

from core_parts import core_parts

from rlsched.core.commands import Abort
from rlsched.core.machine import Scheduler


def _running() -> Scheduler:
    parts = core_parts(
        {
            "devices": {"count": 2, "train": 1},
            "scheduler": {"train_batch_size": 4, "group_size": 4, "max_inflight_per_rank": 4},
        }
    )
    parts.buffer.admit_group(10)
    for tid in range(4):
        parts.router.dispatch(parts.buffer.trajs[tid], tid % 2)
    parts.ctx.out.clear()
    return parts


def test_abort_rank_aborts_each_request_once() -> None:
    parts = _running()
    parts.router.abort_rank(1)
    parts.router.abort_rank(1)
    assert parts.ctx.out == [Abort(1, (1, 3))]
    assert [parts.router.requests[r].aborting for r in range(4)] == [False, True, False, True]


def test_abort_requests_groups_by_rank_in_rank_order_and_counts() -> None:
    parts = _running()
    parts.router.abort_rank(0)  # requests 0 and 2 are already being aborted
    parts.ctx.out.clear()
    assert parts.router.abort_requests([3, 2, 1, 0, 99]) == 2
    assert parts.ctx.out == [Abort(1, (3, 1))]


def test_lose_rank_returns_its_requests_in_id_order() -> None:
    parts = _running()
    lost = parts.router.lose_rank(1)
    assert [r.rid for r in lost] == [1, 3]
    assert parts.router.inflight[1] == set() and parts.router.load == [2, 0]
    assert sorted(parts.router.requests) == [0, 2]


def test_ranks_are_picked_by_weights_version() -> None:
    """A rank's new version moves it to that version's heap; blocked versions are skipped."""
    parts = core_parts(
        {
            "devices": {"count": 3, "train": 1},
            "scheduler": {
                "mode": "timeshare",
                "train_batch_size": 4,
                "group_size": 4,
                "staleness": 3,
                "max_inflight_per_rank": 4,
            },
        }
    )
    parts.buffer.admit_group(10)
    parts.router.set_rank_version(1, 3)
    parts.router.push_rank(1)
    assert parts.router.rank_version == [0, 3, 0]
    assert parts.router.pick_rank() == 0
    assert parts.router.pick_rank(blocked={0}) == 1
    assert parts.router.pick_rank(blocked={3}) == 0
    assert parts.router.pick_rank(blocked={0, 3}) is None
    assert 3 in parts.router._heaps and 1 in parts.router._heaps[3]  # key of (load 0, rank 1)
