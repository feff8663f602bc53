"""Step 2 of design/rlsched_steprank.md: requests in and answers out, by hand."""

import pytest

from rlsched.sim.steprank import StepRank

TERMS = (0.01, 0.0, 0.0, 0.0, 0.0)  # every step takes 10 ms


def _drain(rank: StepRank, until: float = float("inf")) -> list[tuple[float, int, int]]:
    out = []
    while (at := rank.next_time()) is not None and at <= until:
        out.extend((at, rid, tokens) for rid, tokens in rank.complete(at))
    return out


def test_a_request_arrives_joins_steps_and_answers_later() -> None:
    rank = StepRank(TERMS, max_batch=4, in_s=0.005, out_s=0.003, retain=4)
    assert rank.next_time() is None and rank.complete(0.0) == []
    rank.submit(0.0, 1, 7, 10, 3)
    assert rank.load == 1 and rank.next_time() == pytest.approx(0.005)
    # arrives at 5 ms; steps end at 15, 25, 35 ms; answered 3 ms later
    assert _drain(rank) == [(pytest.approx(0.038), 1, 3)]
    assert rank.load == 0 and dict(rank.kept) == {7: 12}


def test_an_arrival_during_a_step_joins_the_next_one() -> None:
    rank = StepRank(TERMS, max_batch=4, in_s=0.0, out_s=0.0, retain=4)
    rank.submit(0.0, 1, 1, 4, 2)
    rank.complete(0.0)
    rank.submit(0.004, 2, 2, 4, 1)  # the step in progress ends at 10 ms
    assert rank.next_time() == pytest.approx(0.01)
    assert _drain(rank) == [(pytest.approx(0.02), 1, 2), (pytest.approx(0.02), 2, 1)]


def test_the_batch_is_the_oldest_max_batch_rows() -> None:
    rank = StepRank(TERMS, max_batch=1, in_s=0.0, out_s=0.0, retain=4)
    rank.submit(0.0, 1, 1, 4, 2)
    rank.submit(0.0, 2, 2, 4, 1)
    # rid 1 finishes at 20 ms and leaves when rid 2's step ends, at 30 ms
    assert _drain(rank) == [(pytest.approx(0.03), 1, 2), (pytest.approx(0.03), 2, 1)]


def test_aborts_on_the_way_running_and_answered() -> None:
    rank = StepRank(TERMS, max_batch=4, in_s=0.005, out_s=0.1, retain=4)
    rank.submit(0.0, 1, 1, 4, 1)
    rank.submit(0.0, 2, 2, 4, 5)
    rank.submit(0.0, 3, 3, 4, 5)
    assert rank.remove(0.001, 3) == 0  # still on its way
    assert _drain(rank, until=0.02) == []  # rid 1 finished at 15 ms: leaving
    assert rank.leaving == [(1, 1, 0.1)] and rank.remove(0.02, 1) is None and rank.load == 2
    assert _drain(rank, until=0.05) == []  # left at 25 ms, answers at 125 ms
    assert rank.remove(0.05, 1) is None  # its answer is on its way
    assert rank.remove(0.05, 2) == 4  # steps ended at 15, 25, 35, 45 ms
    assert rank.kept[2] == 8 and rank.remove(0.05, 99) is None
    assert _drain(rank) == [(pytest.approx(0.125), 1, 1)]
    assert rank.load == 0


def test_nothing_to_generate_is_answered_after_the_round_trip() -> None:
    rank = StepRank(TERMS, max_batch=4, in_s=0.005, out_s=0.003, retain=4)
    rank.submit(1.0, 1, 1, 4, 0)
    rank.submit(1.0, 2, 2, 4, 0, trip=(0.1, 0.2))
    assert rank.load == 2
    assert _drain(rank) == [(pytest.approx(1.008), 1, 0), (pytest.approx(1.3), 2, 0)]


def test_a_request_may_bring_its_own_way_in_and_back() -> None:
    rank = StepRank(TERMS, max_batch=4, in_s=0.005, out_s=0.003, retain=4)
    rank.submit(0.0, 1, 1, 4, 1, trip=(0.05, 0.1))
    rank.submit(0.01, 2, 2, 4, 1)  # arrives at 15 ms, before the first: put first
    assert [item[1] for item in rank.arriving] == [2, 1]
    # rid 2 steps 15-25 ms, answers 3 ms later; rid 1 arrives at 50 ms, steps to 60, 100 ms back
    assert _drain(rank) == [(pytest.approx(0.028), 2, 1), (pytest.approx(0.16), 1, 1)]


def test_clear_forgets_prefixes_and_running_rows_feed_everything() -> None:
    terms = (0.0, 0.0, 0.001, 0.0, 0.0)  # 1 ms per padded fed token
    rank = StepRank(terms, max_batch=4, in_s=0.0, out_s=0.0, retain=4)
    rank._keep(9, 5)
    rank.submit(0.0, 1, 1, 10, 3)
    rank.complete(0.0)  # fed 10 tokens: 10 ms
    assert rank.next_time() == pytest.approx(0.01)
    rank.clear()
    assert not rank.kept
    rank.complete(0.01)  # the row's slot is forgotten: 11 tokens fed again
    assert rank.next_time() == pytest.approx(0.021)
    rank.complete(0.021)  # back to one token a step
    assert rank.next_time() == pytest.approx(0.022)
    assert rank.prefilled == 9 + 10
