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
    # fetch at 1e-4 s per token: a tenth of a prefill token's 1 ms, i.e. 10 fetched tokens
    # occupy the prefill slot like 1 prefilled token
    rank = MemoryRank(
        rate=1e6, step_s=0.1, kv_s=0.0, prefill_s=0.001, budget=100, capacity=10_000, fetch_s=1e-4
    )
    # 1,000 tokens of context, 800 of them computed on another rank: fetch 800 (worth 80
    # prefill tokens) and prefill 200: 280 tokens of prefill work at 500/s = 0.56 s, then
    # 10 tokens at 10/s
    rank.submit(0.0, 1, 7, 1000, 10, pooled=800)
    assert rank.prefill_left == pytest.approx(280.0)
    assert _drain(rank) == [(pytest.approx(1.56), 1, 10)]
    assert (rank.prefilled, rank.fetched) == (200, 800) and rank.pooled == {}
    # the rank's own prefix comes first: 1,010 cached, the pool adds nothing beyond it
    rank.submit(2.0, 2, 7, 1100, 10, pooled=1010)
    assert rank.prefill_left == pytest.approx(90.0)
    _drain(rank)
    assert (rank.prefilled, rank.fetched) == (290, 800)
    # a pooled context longer than what the rank caches: only the difference is fetched
    rank.submit(5.0, 3, 7, 2000, 10, pooled=1500)
    assert rank.prefill_left == pytest.approx(500 + 390 * 0.1)
    _drain(rank)
    assert (rank.prefilled, rank.fetched) == (790, 1190)


def test_without_a_pool_everything_missing_is_prefilled_and_a_removed_request_forgets_it() -> None:
    rank = _rank(capacity=10_000)
    rank.submit(0.0, 1, 7, 1000, 10, pooled=0)
    assert rank.prefill_left == pytest.approx(1000.0) and rank.fetched == 0
    rank.submit(0.0, 2, 8, 500, 10, pooled=500)  # waits behind the prefill
    assert rank.pooled == {2: 500}
    assert rank.remove(0.1, 2) == 0
    assert rank.pooled == {}
