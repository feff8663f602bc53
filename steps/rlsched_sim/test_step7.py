"""Step 7 of design/rlsched_sim.md: requests enter a rank; prefill pauses decode."""

import pytest

from rlsched.sim.engine import RankModel


def test_speed_is_capped_processor_sharing() -> None:
    rank = RankModel(rate=100.0, cap=40.0, prefill_s=0.0)
    rank.submit(0.0, 1, 0, 50)
    assert rank.speed() == 40.0  # a lone request runs at the cap
    rank.submit(0.0, 2, 0, 50)
    rank.submit(0.0, 3, 0, 50)
    assert rank.speed() == pytest.approx(100.0 / 3)  # the shared rate is the limit
    assert rank.load == 3


def test_prefill_runs_first_in_first_out_and_pauses_decode() -> None:
    rank = RankModel(rate=100.0, cap=40.0, prefill_s=0.01)
    rank.submit(0.0, 1, 0, 50)  # nothing to prefill: decodes at once
    rank.submit(0.0, 2, 100, 50)  # one second of prefill
    rank.submit(0.0, 3, 100, 50)
    assert rank.prefilling == (2, 50) and rank.prefill_end == pytest.approx(1.0)
    assert rank.speed() == 0.0
    assert [item[0] for item in rank.queue] == [3]
    assert rank.load == 3


def test_first_target_is_the_smallest_live_one_and_drops_stale_entries() -> None:
    rank = RankModel(rate=100.0, cap=40.0, prefill_s=0.0)
    assert rank._first_target() is None
    rank.submit(0.0, 1, 0, 50)
    rank.submit(0.0, 2, 0, 30)
    rank.submit(0.0, 3, 0, 40)
    assert rank._first_target() == 30.0 and len(rank.heap) == 3
    del rank.targets[2]  # request 2 left the rank: its heap entry is stale
    assert rank._first_target() == 40.0 and [rid for _, rid in rank.heap] == [3, 1]
    del rank.targets[3], rank.targets[1]
    assert rank._first_target() is None and rank.heap == []
