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


def test_a_new_rank_keeps_its_figures_and_starts_empty() -> None:
    rank = MemoryRank(rate=100.0, step_s=0.1, kv_s=0.001, prefill_s=0.01, budget=10, capacity=1000)
    assert (rank.rate, rank.step_s, rank.kv_s, rank.prefill_s) == (100.0, 0.1, 0.001, 0.01)
    assert (rank.budget, rank.capacity) == (10, 1000)
    assert (rank.clock, rank.progress, rank.prefill_left) == (0.0, 0.0, 0.0)
    assert (rank.base_sum, rank.start_sum, rank.cache_sum) == (0, 0.0, 0)
    assert (rank.prefilled, rank.preemptions, rank.kv_area, rank.busy_s) == (0, 0, 0.0, 0.0)
    assert rank.targets == rank.starts == rank.bases == rank.tids == rank.earlier == {}
    assert rank.heap == [] and list(rank.queue) == [] and list(rank.cache) == []
    assert rank.prefilling is None
    assert (rank.fetch_s, rank.host_capacity, rank.host_s, rank.move_s) == (0.0, 0, 0.0, 0.0)
    assert (rank.fetched, rank.loaded, rank.moved, rank.host_sum) == (0, 0, 0, 0)
    assert rank.transfer_left == 0.0
    assert rank.pooled == rank.moving == {} and list(rank.host) == []
    rank._advance(3.0)  # idle: the clock moves, nothing is busy or held
    assert (rank.clock, rank.busy_s, rank.kv_area, rank.progress) == (3.0, 0.0, 0.0, 0.0)


def test_a_prefill_holds_its_context_and_adds_a_chunk_to_each_step() -> None:
    rank = MemoryRank(rate=100.0, step_s=0.1, kv_s=0.001, prefill_s=0.01, budget=10, capacity=1000)
    rank._start_decode(1, 100, 50)
    rank.prefilling = (2, 7, 120, 30)  # request 2 of trajectory 7: 120 tokens of context
    rank.prefill_left = 120.0
    assert rank.load == 2
    assert rank.running_kv() == 100 + 120
    rank.cache[5] = 40
    rank.cache_sum = 40
    assert rank.used() == 100 + 120 + 40
    # a step: 0.1 fixed + 100 decoding KV tokens x 0.001 + a chunk of 10 x 0.01
    assert rank.step_time() == pytest.approx(0.1 + 0.1 + 0.1)
    assert rank.prefill_speed() == pytest.approx(10 / 0.3)
    assert rank.speed() == pytest.approx(1 / 0.3)
    rank._advance(0.6)  # two steps: 20 tokens prefilled, 2 decoded
    assert rank.prefill_left == pytest.approx(100.0)
    assert rank.progress == pytest.approx(2.0)
    assert rank.busy_s == pytest.approx(0.6) and rank.clock == 0.6
    assert rank.kv_area == pytest.approx(0.6 * (220 + 222) / 2)


def test_a_transfer_holds_the_context_without_a_prefill_chunk() -> None:
    rank = MemoryRank(rate=100.0, step_s=0.1, kv_s=0.001, prefill_s=0.01, budget=10, capacity=1000)
    rank._start_decode(1, 100, 50)
    rank.prefilling = (2, 7, 120, 30)
    rank.prefill_left = 20.0
    rank.transfer_left = 0.5  # copying 100 tokens in before prefilling the last 20
    assert rank.running_kv() == 100 + 120
    assert rank.step_time() == pytest.approx(0.1 + 0.1)  # no prefill chunk while copying
    assert rank.prefill_speed() == 0.0 and rank.speed() == pytest.approx(5.0)
    rank._advance(0.4)
    assert rank.transfer_left == pytest.approx(0.1) and rank.prefill_left == 20.0
    assert rank.progress == pytest.approx(2.0)
    rank._advance(0.5)  # the copy is done; the prefill starts with a chunk per step
    assert rank.transfer_left == 0.0 and rank.prefill_left == 20.0
    progress = 2.0 + 0.1 / (0.1 + 0.102)  # decoded on at 1 / (0.1 + 102 x 0.001) tokens/s
    assert rank.progress == pytest.approx(progress)
    assert rank.step_time() == pytest.approx(0.1 + (100 + progress) * 0.001 + 0.1)
    rank._advance(0.5 + 1e-10)
    assert rank.transfer_left == 0.0
    rank._start_decode(3, 0, 5)
    rank.pooled[4] = 10
    rank.moving[4] = 20
    rank._start_decode(4, 0, 5)  # what was offered to a request is forgotten once it decodes
    assert rank.pooled == rank.moving == {}
