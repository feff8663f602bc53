"""Step 1 of design/rlsched_memory.md: the KV a rank's requests hold and the step time."""

import pytest

from rlsched.sim.memory import MemoryRank


def test_an_idle_rank_holds_nothing() -> None:
    rank = MemoryRank(rate=100.0, step_s=0.1, kv_s=0.001, prefill_s=0.01, budget=10, capacity=1000)
    assert rank.load == 0 and rank.used() == 0 and rank.speed() == 0.0
    assert rank.prefill_speed() == 0.0
    assert rank.step_time() == pytest.approx(0.1)


def test_running_sums_follow_the_shared_counter() -> None:
    rank = MemoryRank(rate=100.0, step_s=0.1, kv_s=0.001, prefill_s=0.01, budget=10, capacity=1000)
    rank._start_decode(1, 100, 50)
    rank._start_decode(2, 200, 50)
    assert rank.running_kv() == 300
    # step = 0.1 + 300 x 0.001 = 0.4 s: 2.5 tokens/s each (the shared 100 / 2 does not bind)
    assert rank.step_time() == pytest.approx(0.4)
    assert rank.speed() == pytest.approx(2.5)
    rank._advance(2.0)  # 5 tokens each
    assert rank.progress == pytest.approx(5.0)
    assert rank.running_kv() == pytest.approx(310.0)
    assert rank.kv_area == pytest.approx(2.0 * (300 + 310) / 2)
    assert rank.busy_s == pytest.approx(2.0)
    assert rank.targets == {1: 50.0, 2: 50.0}


def test_the_shared_rate_caps_a_full_rank() -> None:
    rank = MemoryRank(rate=10.0, step_s=0.01, kv_s=0.0, prefill_s=0.01, budget=10, capacity=10**6)
    for rid in range(4):
        rank._start_decode(rid, 0, 100)
    assert rank.speed() == pytest.approx(2.5)  # 10 / 4 < 1 / 0.01
