"""Step 8 of design/rlsched_sim.md: completions and aborts of a rank."""

import pytest

from rlsched.sim.engine import RankModel


def _drain(rank: RankModel) -> list[tuple[float, int, int]]:
    out = []
    while (at := rank.next_time()) is not None:
        out.extend((at, rid, tokens) for rid, tokens in rank.complete(at))
    return out


def test_lone_request_takes_prefill_plus_tokens_over_cap() -> None:
    rank = RankModel(rate=100.0, cap=10.0, prefill_s=0.01)
    rank.submit(0.0, 7, 100, 50)
    assert _drain(rank) == [(pytest.approx(6.0), 7, 50)]


def test_requests_share_the_rank_rate() -> None:
    rank = RankModel(rate=30.0, cap=20.0, prefill_s=0.0)
    rank.submit(0.0, 1, 0, 30)
    rank.submit(0.0, 2, 0, 60)
    done = _drain(rank)
    # both at 15 tokens/s until request 1 finishes at t=2; then request 2 alone at the cap 20
    assert [(round(t, 6), rid, n) for t, rid, n in done] == [(2.0, 1, 30), (3.5, 2, 60)]


def test_abort_returns_tokens_made_and_frees_the_rank() -> None:
    rank = RankModel(rate=100.0, cap=10.0, prefill_s=0.0)
    rank.submit(0.0, 1, 0, 100)
    rank.submit(0.0, 2, 0, 100)
    assert rank.remove(2.5, 1) == 25
    assert rank.remove(2.5, 3) is None  # not on the rank (finished already): no answer
    assert _drain(rank) == [(pytest.approx(10.0), 2, 100)]
    prefilling = RankModel(rate=100.0, cap=10.0, prefill_s=1.0)
    prefilling.submit(0.0, 1, 5, 10)
    prefilling.submit(0.0, 2, 5, 10)
    assert prefilling.remove(1.0, 1) == 0
    assert prefilling.prefilling == (2, 10) and prefilling.prefill_end == pytest.approx(6.0)
    assert prefilling.next_time() == pytest.approx(6.0)
    prefilling.submit(1.0, 3, 5, 10)  # waits behind request 2's prefill
    assert prefilling.remove(1.0, 3) == 0 and prefilling.remove(1.0, 3) is None
