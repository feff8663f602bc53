"""Step 1 of design/rlsched_steprank.md: one batched step, by hand: who joins, what each row is
fed, what the step costs and what is kept."""

import subprocess
import sys

import pytest

from rlsched.sim.steprank import StepRank

# fixed 10 ms, 1 ms per row, 0.1 ms per padded fed token, 0.01 ms per row and context token of
# the widest row, 2 ms per joining row
TERMS = (0.01, 0.001, 1e-4, 1e-5, 0.002)


def test_the_step_cost_has_five_terms_and_one_for_a_second_pass() -> None:
    rank = StepRank(TERMS, max_batch=4, in_s=0.0, out_s=0.0, retain=2)
    # 3 rows padded to 4 tokens (12 positions), widest context 10, one joining
    assert rank.step_seconds(3, 12, 10, 1) == pytest.approx(
        0.01 + 0.003 + 1e-4 * 12 + 1e-5 * 30 + 0.002
    )
    assert rank.step_seconds(0, 0, 0, 0) == 0.01
    assert rank.step_seconds(3, 12, 10, 1, passes=2) == rank.step_seconds(3, 12, 10, 1)
    split = StepRank(TERMS, 4, 0.0, 0.0, 2, split_tokens=8, pass_s=0.004)
    assert split.step_seconds(3, 12, 10, 1, 2) == pytest.approx(
        rank.step_seconds(3, 12, 10, 1) + 0.004
    )
    with pytest.raises(ValueError, match="VAL_NON_NEGATIVE"):
        StepRank(TERMS, 4, 0.0, 0.0, 2, split_tokens=8, pass_s=-0.001)
    assert rank.load == 0 and rank.step_end is None
    with pytest.raises(ValueError, match="VAL_INT_RANGE"):
        StepRank(TERMS, max_batch=0, in_s=0.0, out_s=0.0, retain=1)
    with pytest.raises(ValueError, match="VAL_NON_NEGATIVE"):
        StepRank(TERMS, max_batch=1, in_s=-1.0, out_s=0.0, retain=1)


def test_a_step_pays_for_each_answer_leaving_while_it_runs() -> None:
    rank = StepRank(TERMS, max_batch=4, in_s=0.0, out_s=0.5, retain=2, answer_s=0.003)
    assert rank.step_seconds(3, 12, 10, 1, answers=2) == pytest.approx(
        rank.step_seconds(3, 12, 10, 1) + 0.006
    )
    with pytest.raises(ValueError, match="VAL_NON_NEGATIVE"):
        StepRank(TERMS, 4, 0.0, 0.0, 2, answer_s=-0.001)
    # rid 1 (one token) and rid 2 (two) join; the first step finishes rid 1
    rank.arriving.extend([(0.0, 1, 10, 4, 1, 0.5), (0.0, 2, 20, 4, 2, 0.5)])
    rank._start_step(0.0)
    first = rank.step_end
    assert first == pytest.approx(rank.step_seconds(2, 8, 4, 2))  # nothing leaving yet
    rank._end_step(first)
    # rid 1's answer leaves while the second step runs: that step pays for it
    rank._start_step(first)
    assert rank.step_end - first == pytest.approx(rank.step_seconds(1, 1, 5, 0) + 0.003)
    rank._end_step(rank.step_end)
    # sent off with the second step's end: the third (nothing left to run) pays for none
    assert rank.leaving == [(2, 2, 0.5)] and len(rank.answers) == 1


def test_rows_join_padded_to_the_longest_feed_and_keep_their_prefix() -> None:
    rank = StepRank(TERMS, max_batch=2, in_s=0.0, out_s=0.5, retain=1)
    # (at, rid, tid, context, gen, way back): three requests arrived, only two rows per step
    rank.arriving.extend(
        [(0.0, 1, 10, 5, 2, 0.5), (0.0, 2, 20, 3, 1, 0.5), (0.0, 3, 30, 8, 1, 0.5)]
    )
    rank._start_step(0.0)
    assert rank.batch == [1, 2] and rank.load == 3
    # both join: fed 5 and 3 tokens, padded to 5; widest context 5
    first = 0.01 + 0.002 + 1e-4 * 10 + 1e-5 * 10 + 0.004
    assert rank.step_end == pytest.approx(first)
    assert rank.prefilled == 4 + 2  # fed beyond one token per row
    rank._end_step(first)
    assert rank.step_end is None and rank.batch == []
    # rid 2 made its 1 token; its answer leaves when the next step ends
    assert rank.leaving == [(2, 1, 0.5)] and rank.answers == [] and rank.load == 3
    assert dict(rank.kept) == {20: 3} and rank.running[1].context == 6
    rank._start_step(first)
    # rid 1 feeds its last token, rid 3 joins with its whole context of 8
    assert rank.batch == [1, 3]
    second = 0.01 + 0.002 + 1e-4 * 16 + 1e-5 * 16 + 0.002
    assert rank.step_end == pytest.approx(first + second)
    assert rank.prefilled == 6 + 0 + 7
    rank._end_step(first + second)
    assert rank.answers == [(pytest.approx(first + second + 0.5), 1, 2, 1)]  # rid 2 left
    # both finished; one prefix kept, the most recently returned (rid 3's 8 cached tokens)
    assert dict(rank.kept) == {30: 8} and not rank.running
    assert rank.leaving == [(1, 2, 0.5), (3, 1, 0.5)]
    rank._answer(2.0)
    assert [a[2:] for a in sorted(rank.answers)] == [(2, 1), (1, 2), (3, 1)]
    assert rank.answers[-1][0] == 2.5 and rank.leaving == [] and rank.load == 3
    # trajectory 30's next turn (8 + 1 generated + 3 observed) is fed only what is not kept
    rank.arriving.append((1.0, 4, 30, 12, 1, 0.5))
    rank._start_step(1.0)
    assert rank.step_end == pytest.approx(1.0 + 0.01 + 0.001 + 1e-4 * 4 + 1e-5 * 12 + 0.002)
    assert rank.prefilled == 13 + 3 and 30 not in rank.kept


def test_the_positions_a_step_computes_follow_the_engine_s_split() -> None:
    one = StepRank(TERMS, 4, 0.0, 0.0, 4)
    assert one.padded([]) == (0, 1)
    assert one.padded([1, 1, 30]) == (90, 1)  # never split: every row padded to the longest
    split = StepRank(TERMS, 4, 0.0, 0.0, 4, split_tokens=10)
    # 1 + 1 + 30 + 10 < 90: the long feed apart
    assert split.padded([1, 30, 1]) == (1 + 1 + 30, 2)
    assert split.padded([1, 5, 1]) == (15, 1)  # 1 + 1 + 5 + 10 > 15: one pass
    assert split.padded([2, 30, 30, 1]) == (2 * 2 + 2 * 30, 2)  # the narrow ones at their widest
    assert split.padded([7]) == (7, 1)


def _prompt_joins(rank: StepRank) -> float:
    """Two rows join with 5 tokens; after their first step a third joins with 40: the seconds
    of that second step."""
    rank.arriving.extend([(0.0, 1, 1, 5, 3, 0.0), (0.0, 2, 2, 5, 3, 0.0)])
    rank._start_step(0.0)
    first = rank.step_end
    rank._end_step(first)
    rank.arriving.append((first, 3, 3, 40, 3, 0.0))
    rank._start_step(first)
    assert rank.prefilled == 8 + 39
    return rank.step_end - first


def test_a_joining_prompt_runs_apart_from_the_decoding_rows() -> None:
    split = StepRank(TERMS, 4, 0.0, 0.0, 4, split_tokens=10, pass_s=0.004)
    # two rows feed 1 token, the new one 40: 1 + 1 + 40 positions in two passes
    assert _prompt_joins(split) == pytest.approx(
        0.01 + 0.003 + 1e-4 * 42 + 1e-5 * 120 + 0.002 + 0.004
    )
    # the first step (5 and 5 tokens) stayed one pass; without a split all three pad to 40
    assert _prompt_joins(StepRank(TERMS, 4, 0.0, 0.0, 4)) == pytest.approx(
        0.01 + 0.003 + 1e-4 * 120 + 1e-5 * 120 + 0.002
    )


def test_the_simulator_s_step_model_imports_no_torch() -> None:
    code = "import sys, rlsched.sim.steprank; sys.exit('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def test_a_kept_prefix_never_covers_the_whole_context() -> None:
    rank = StepRank(TERMS, max_batch=4, in_s=0.0, out_s=0.0, retain=4)
    rank._keep(7, 9)
    rank.arriving.append((0.0, 1, 7, 9, 1, 0.0))  # the same context again: one token is fed
    rank._start_step(0.0)
    assert rank.running[1].cached == 9
    assert rank.step_end == pytest.approx(0.01 + 0.001 + 1e-4 + 1e-5 * 9 + 0.002)
    assert rank.prefilled == 0


def test_arrivals_not_due_wait_and_an_empty_engine_stays_idle() -> None:
    rank = StepRank(TERMS, max_batch=4, in_s=0.0, out_s=0.0, retain=4)
    rank._start_step(0.0)
    assert rank.step_end is None and rank.batch == []
    rank.arriving.append((0.3, 1, 1, 4, 1, 0.0))
    rank._start_step(0.2)
    assert rank.step_end is None and not rank.running
    rank._start_step(0.3)
    assert rank.batch == [1]


def test_without_a_cache_every_step_feeds_every_whole_context() -> None:
    rank = StepRank(TERMS, max_batch=4, in_s=0.0, out_s=0.0, retain=4, cache=False)
    assert rank.retain == 0
    rank.arriving.append((0.0, 1, 1, 6, 2, 0.0))
    rank._start_step(0.0)
    rank._end_step(rank.step_end)
    rank._start_step(1.0)  # the second step feeds all 7 tokens again, without a join
    assert rank.step_end == pytest.approx(1.0 + 0.01 + 0.001 + 1e-4 * 7 + 1e-5 * 7)
    assert rank.prefilled == 5 + 6
    rank._end_step(rank.step_end)
    assert not rank.kept  # nothing kept without a cache


def test_keeping_drops_the_least_recently_returned() -> None:
    rank = StepRank(TERMS, max_batch=4, in_s=0.0, out_s=0.0, retain=2)
    for tid, tokens in ((1, 5), (2, 6), (1, 7), (3, 8)):
        rank._keep(tid, tokens)
    assert list(rank.kept.items()) == [(1, 7), (3, 8)]
    rank._keep(4, 0)  # nothing cached: nothing kept
    assert list(rank.kept) == [1, 3]


def test_a_step_alone_on_the_machine_takes_the_alone_factor() -> None:
    busy = [True]
    rank = StepRank(TERMS, 4, 0.0, 0.0, 4, alone=lambda: not busy[0], alone_factor=0.5)
    rank.arriving.append((0.0, 1, 1, 4, 3, 0.0))
    rank._start_step(0.0)
    first = 0.01 + 0.001 + 1e-4 * 4 + 1e-5 * 4 + 0.002
    assert rank.step_end == pytest.approx(first)
    rank._end_step(first)
    busy[0] = False
    rank._start_step(first)  # nobody else busy: half as long
    assert rank.step_end == pytest.approx(first + 0.5 * (0.01 + 0.001 + 1e-4 + 1e-5 * 5))
