"""Step 2 of design/rlsched_memory.md: admission, the prefix cache and preemption, by hand."""

import pytest

from rlsched.sim.memory import MemoryRank


def _drain(rank: MemoryRank, until: float = float("inf")) -> list[tuple[float, int, int]]:
    out = []
    while (at := rank.next_time()) is not None and at <= until:
        out.extend((at, rid, tokens) for rid, tokens in rank.complete(at))
        assert rank.used() <= rank.capacity or len(rank.targets) <= 1
    return out


def _rank(capacity: int = 1000, kv_s: float = 0.0) -> MemoryRank:
    # step 0.1 s (10 tokens/s per request), chunks of 100 prefill tokens at 1 ms each:
    # a prefill step takes 0.1 + 0.1 s, i.e. 500 prefill tokens/s
    return MemoryRank(
        rate=1e6, step_s=0.1, kv_s=kv_s, prefill_s=0.001, budget=100, capacity=capacity
    )


def test_prefill_then_decode_then_the_prefix_is_reused() -> None:
    rank = _rank()
    rank.submit(0.0, 1, 7, 200, 10)
    assert rank.prefill_speed() == pytest.approx(500.0)
    assert rank.next_time() == pytest.approx(0.4)
    assert _drain(rank) == [(pytest.approx(1.4), 1, 10)]
    assert rank.prefilled == 200 and dict(rank.cache) == {7: 210}
    rank.submit(2.0, 2, 7, 260, 10)  # 210 cached: 50 to prefill (0.1 s), then 1 s of decode
    assert _drain(rank) == [(pytest.approx(3.1), 2, 10)]
    assert rank.prefilled == 250 and dict(rank.cache) == {7: 270}


def test_decode_slows_with_the_kv_it_reads() -> None:
    rank = _rank(capacity=10_000, kv_s=1e-4)
    rank.submit(0.0, 1, 1, 0, 5)  # nothing to prefill
    assert rank.step_time() == pytest.approx(0.1)
    rank.complete(0.0)
    other = _rank(capacity=10_000, kv_s=1e-4)
    other.cache[2] = 1000
    other.cache_sum = 1000
    other.submit(0.0, 1, 2, 1000, 5)  # all cached: decodes over 1,000 tokens of KV
    assert other.step_time() == pytest.approx(0.1 + 1000 * 1e-4)
    assert other.speed() == pytest.approx(5.0)


def test_least_recently_used_prefixes_make_room() -> None:
    rank = _rank(capacity=1000)
    for tid, at in ((1, 0.0), (2, 10.0), (3, 20.0)):
        rank.submit(at, tid, tid, 300, 0)
        _drain(rank)
    assert list(rank.cache) == [1, 2, 3] and rank.cache_sum == 900
    rank.submit(30.0, 4, 4, 400, 0)  # needs 400: tid 1 and 2 leave, oldest first
    assert list(rank.cache) == [3]
    _drain(rank)
    assert list(rank.cache) == [3, 4] and rank.cache_sum == 700


def test_a_request_that_does_not_fit_waits() -> None:
    rank = _rank(capacity=1000)
    rank.submit(0.0, 1, 1, 0, 100)
    rank.submit(1.0, 2, 2, 995, 10)  # 995 + the 10 tokens request 1 holds do not fit
    assert [item[0] for item in rank.queue] == [2] and rank.prefilling is None
    done = _drain(rank)
    # request 1 alone: 100 tokens at 10/s; then its prefix is evicted for request 2, which
    # prefills 995 tokens at 500/s and decodes 10 at 10/s
    assert done == [(pytest.approx(10.0), 1, 100), (pytest.approx(10.0 + 1.99 + 1.0), 2, 10)]
    assert rank.preemptions == 0 and not rank.cache  # 1,005 tokens never fit: evicted at once


def test_growth_preempts_the_newest_and_every_token_is_counted() -> None:
    rank = _rank(capacity=1000)
    rank.submit(0.0, 1, 1, 0, 1000)
    rank.submit(0.0, 2, 2, 0, 1000)
    # both grow at 10 tokens/s: the memory is full at (1000 - 0.5) / 20 s
    assert rank.next_time() == pytest.approx(999.5 / 20)
    rank.complete(rank.next_time())
    assert rank.preemptions == 1 and list(rank.targets) == [1]
    assert rank.earlier == {2: 499}
    done = dict((rid, tokens) for _, rid, tokens in _drain(rank))
    assert done == {1: 1000, 2: 1000}
    assert rank.prefilled >= 499  # the victim's context came back by recomputation
    assert rank.load == 0


def test_a_lone_request_is_never_preempted() -> None:
    rank = _rank(capacity=100)
    rank.submit(0.0, 1, 1, 0, 500)
    assert _drain(rank) == [(pytest.approx(50.0), 1, 500)]
    assert rank.preemptions == 0


def test_remove_keeps_the_prefix_and_answers_what_was_generated() -> None:
    rank = _rank()
    rank.submit(0.0, 1, 1, 0, 100)
    rank.submit(0.0, 2, 2, 995, 10)  # above the 1% watermark: waits for memory
    assert rank.remove(2.0, 2) == 0
    assert rank.remove(2.0, 1) == 20
    assert dict(rank.cache) == {1: 20}
    assert rank.remove(2.0, 1) is None and rank.load == 0
    rank.clear()
    assert not rank.cache and rank.cache_sum == 0


def test_a_global_pool_fetches_what_the_rank_lacks_instead_of_prefilling_it() -> None:
    # fetch at 1e-4 s per token, beside decode (0.3.0): the copy takes its own seconds before
    # the prefill of the rest
    rank = MemoryRank(
        rate=1e6, step_s=0.1, kv_s=0.0, prefill_s=0.001, budget=100, capacity=10_000, fetch_s=1e-4
    )
    # 1,000 tokens of context, 800 of them computed on another rank: fetch 800 (0.08 s), then
    # prefill 200 at 500/s (0.4 s), then 10 tokens at 10/s
    rank.submit(0.0, 1, 7, 1000, 10, pooled=800)
    assert rank.transfer_left == pytest.approx(0.08) and rank.prefill_left == pytest.approx(200.0)
    assert rank.next_time() == pytest.approx(0.08)
    assert _drain(rank) == [(pytest.approx(1.48), 1, 10)]
    assert (rank.prefilled, rank.fetched) == (200, 800) and rank.pooled == {}
    # the rank's own prefix comes first: 1,010 cached, the pool adds nothing beyond it
    rank.submit(2.0, 2, 7, 1100, 10, pooled=1010)
    assert rank.transfer_left == 0.0 and rank.prefill_left == pytest.approx(90.0)
    _drain(rank)
    assert (rank.prefilled, rank.fetched) == (290, 800)
    # a pooled context longer than what the rank caches: only the difference is fetched
    rank.submit(5.0, 3, 7, 2000, 10, pooled=1500)
    assert rank.transfer_left == pytest.approx(390 * 1e-4)
    assert rank.prefill_left == pytest.approx(500.0)
    assert _drain(rank) == [(pytest.approx(5.0 + 0.039 + 1.0 + 1.0), 3, 10)]
    assert (rank.prefilled, rank.fetched) == (790, 1190)


def test_a_transfer_does_not_slow_decode() -> None:
    rank = MemoryRank(
        rate=1e6, step_s=0.1, kv_s=0.0, prefill_s=0.001, budget=100, capacity=10_000, fetch_s=1e-3
    )
    rank.submit(0.0, 1, 1, 0, 100)  # decodes at 10 tokens/s
    rank.submit(0.0, 2, 2, 1000, 20, pooled=1000)  # 1 s of copying, nothing to prefill
    assert rank.step_time() == pytest.approx(0.1) and rank.speed() == pytest.approx(10.0)
    assert rank.prefill_speed() == 0.0 and rank.next_time() == pytest.approx(1.0)
    assert rank.complete(1.0) == []
    assert rank.progress == pytest.approx(10.0) and set(rank.targets) == {1, 2}
    # request 2 decodes 20 tokens at 10/s from t = 1 s
    assert _drain(rank) == [(pytest.approx(3.0), 2, 20), (pytest.approx(10.0), 1, 100)]
    assert rank.prefilled == 0 and rank.fetched == 1000


def test_a_host_tier_keeps_what_the_rank_computed_and_loads_it_back() -> None:
    rank = MemoryRank(
        rate=1e6, step_s=0.1, kv_s=0.0, prefill_s=0.001, budget=100, capacity=1000,
        host_capacity=500, host_s=1e-4,
    )
    rank.submit(0.0, 1, 7, 200, 10)
    assert _drain(rank) == [(pytest.approx(1.4), 1, 10)]
    assert dict(rank.cache) == {7: 210} and dict(rank.host) == {7: 210}
    rank.clear()  # an offload empties HBM, not the host tier
    assert not rank.cache and dict(rank.host) == {7: 210} and rank.host_sum == 210
    # 210 tokens loaded at 1e-4 s each (0.021 s), 50 prefilled (0.1 s), 10 decoded (1 s)
    rank.submit(2.0, 2, 7, 260, 10)
    assert rank.transfer_left == pytest.approx(0.021) and rank.prefill_left == pytest.approx(50.0)
    assert _drain(rank) == [(pytest.approx(3.121), 2, 10)]
    assert (rank.loaded, rank.prefilled) == (210, 250) and dict(rank.host) == {7: 270}
    # least recently used entries leave the tier; a prefix larger than the tier is not kept
    rank.submit(5.0, 3, 8, 300, 0)
    _drain(rank)
    assert dict(rank.host) == {8: 300} and rank.host_sum == 300
    rank.submit(9.0, 4, 9, 600, 0)
    _drain(rank)
    assert dict(rank.host) == {8: 300} and 9 in rank.cache


def test_a_rank_without_a_host_tier_keeps_nothing_there() -> None:
    rank = _rank()
    rank.submit(0.0, 1, 7, 200, 10)
    _drain(rank)
    rank.clear()
    assert not rank.host and rank.host_sum == 0
    rank.submit(2.0, 2, 7, 260, 10)
    assert rank.transfer_left == 0.0 and rank.prefill_left == pytest.approx(260.0)


def test_a_preempted_request_is_loaded_back_from_the_host_tier() -> None:
    rank = MemoryRank(
        rate=1e6, step_s=0.1, kv_s=0.0, prefill_s=0.001, budget=100, capacity=1000,
        host_capacity=10_000, host_s=1e-4,
    )
    rank.submit(0.0, 1, 1, 0, 1000)
    rank.submit(0.0, 2, 2, 0, 1000)
    rank.complete(rank.next_time())  # memory full: request 2 (the newest) is preempted
    assert rank.preemptions == 1 and rank.host[2] == 499 and 2 not in rank.cache
    done = dict((rid, tokens) for _, rid, tokens in _drain(rank))
    assert done == {1: 1000, 2: 1000}
    assert rank.prefilled == 0 and rank.loaded == 499  # nothing recomputed


def test_kv_a_migration_brings_is_moved_not_prefilled() -> None:
    rank = MemoryRank(
        rate=1e6, step_s=0.1, kv_s=0.0, prefill_s=0.001, budget=100, capacity=10_000,
        host_capacity=10_000, host_s=1e-4, move_s=1e-3,
    )
    rank.submit(0.0, 1, 7, 1000, 10, moved=600)  # 0.6 s of copying, 400 prefilled (0.8 s)
    assert rank.transfer_left == pytest.approx(0.6)
    assert _drain(rank) == [(pytest.approx(2.4), 1, 10)]
    assert (rank.moved, rank.prefilled) == (600, 400) and rank.moving == {}
    rank.clear()
    # the host holds 1,010 tokens: the migration adds only what lies beyond, the pool beyond that
    rank.submit(3.0, 2, 7, 1500, 10, moved=1200, pooled=1400)
    assert (rank.loaded, rank.moved, rank.fetched) == (1010, 790, 200)
    assert rank.transfer_left == pytest.approx(1010 * 1e-4 + 190 * 1e-3)
    assert rank.prefill_left == pytest.approx(100.0)


def test_a_request_aborted_during_its_transfer_keeps_nothing() -> None:
    rank = MemoryRank(
        rate=1e6, step_s=0.1, kv_s=0.0, prefill_s=0.001, budget=100, capacity=10_000, fetch_s=1e-3
    )
    rank.submit(0.0, 1, 7, 1000, 10, pooled=800)
    assert rank.remove(0.5, 1) == 0
    assert not rank.cache and rank.transfer_left == 0.0 and rank.pooled == {}
    assert rank.load == 0 and rank.next_time() is None


def test_without_a_pool_everything_missing_is_prefilled_and_a_removed_request_forgets_it() -> None:
    rank = _rank(capacity=10_000)
    rank.submit(0.0, 1, 7, 1000, 10, pooled=0)
    assert rank.prefill_left == pytest.approx(1000.0) and rank.fetched == 0
    rank.submit(0.0, 2, 8, 500, 10, pooled=500)  # waits behind the prefill
    assert rank.pooled == {2: 500}
    assert rank.remove(0.1, 2) == 0
    assert rank.pooled == {}


def test_an_empty_rank_holds_exactly_nothing() -> None:
    """Progress values that do not add up exactly (1/3 s steps) leave no residue once the last
    request is gone: an empty rank reports its whole capacity (a residue of -2e-13 once made a
    rank report one token less, and a turn of exactly the capacity waited for ever)."""
    rank = MemoryRank(rate=1e6, step_s=0.3, kv_s=1e-7, prefill_s=0.0, budget=100, capacity=10**6)
    for rid, (at, gen) in enumerate(((0.0, 700), (0.1, 921), (1.7, 333), (2.3, 1001))):
        rank.submit(at, rid, rid, 123 * (rid + 1), gen)
    _drain(rank)
    assert rank.load == 0 and not rank.targets
    assert rank.start_sum == 0.0 and rank.base_sum == 0 and rank.running_kv() == 0.0
