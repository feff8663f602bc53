"""Step 2 of design/rlsched_runtime.md: the store's turns agree with the core's counts."""

import pytest

from rlsched.runtime.store import TrajectoryStore


def test_a_turn_aborted_resumed_and_committed() -> None:
    store = TrajectoryStore(2)
    assert store.add_group(3, [7, 8, 9]) == (6, 7)
    assert store.begin_turn(1, 6, 3, 3, 0) == [7, 8, 9]
    assert store.add_generated(1, 6, [4, 5], [-0.1, -0.2])
    # resume migration keeps one of the two tokens; the context grows by it
    assert store.begin_turn(2, 6, 3, 3, 1) == [7, 8, 9, 4]
    assert not store.add_generated(1, 6, [99], [0.0])  # a superseded request's answer
    assert store.add_generated(2, 6, [6], [-0.3])
    assert store.commit_turn(6) == [4, 6]
    assert store.add_observation(6, [11, 12], 0.5, env_s=0.25)
    rec = store.records[6]
    assert rec.tokens == [7, 8, 9, 4, 6, 11, 12]
    assert rec.gen_mask == [False, False, False, True, True, False, False]
    assert rec.logprobs[3:5] == [-0.1, -0.3] and rec.reward == 0.5 and rec.env_steps == 1
    assert rec.turns == [[2, 2, 0.25]]
    assert not store.add_observation(99, [1], 1.0)


def test_counts_that_disagree_with_the_core_are_errors() -> None:
    store = TrajectoryStore(2)
    store.add_group(0, [1, 2])
    with pytest.raises(AssertionError, match="len\\(rec.tokens\\) == context_tokens"):
        store.begin_turn(1, 0, 0, 5, 0)
    with pytest.raises(AssertionError, match="rec.gid == gid"):
        store.begin_turn(1, 1, 7, 2, 0)
    with pytest.raises(AssertionError, match="resume_tokens"):
        store.begin_turn(1, 0, 0, 2, 1)
    with pytest.raises(AssertionError, match="tid not in self.records"):
        store.add_group(0, [1])
    with pytest.raises(ValueError, match="VAL_IN_SET"):
        store.begin_turn(1, 42, 21, 2, 0)


def test_an_answer_closes_its_request_and_observations_accumulate() -> None:
    store = TrajectoryStore(3)
    assert store.add_group(1, [5]) == (3, 4, 5)
    rec = store.records[4]
    assert (rec.rid, rec.reward, rec.env_steps, rec.failed, rec.turns) == (None, 0.0, 0, False, [])
    assert rec.pending_ids == [] and rec.pending_lps == []
    # an observation before any turn (the environment's first answer) records no turn
    assert store.add_observation(4, [6], 0.25, env_s=1.0)
    assert rec.turns == [] and rec.tokens == [5, 6] and rec.logprobs == [0.0, 0.0]
    assert store.begin_turn(7, 4, 1, 2, 0) == [5, 6]
    assert rec.rid == 7
    assert store.add_generated(7, 4, [8, 9], [-0.5, -0.25])
    # the answer closes request 7: a second answer under the same id is not kept
    assert rec.rid is None
    assert not store.add_generated(7, 4, [10], [-1.0])
    assert rec.pending_ids == [8, 9] and rec.pending_lps == [-0.5, -0.25]
    assert store.commit_turn(4) == [8, 9]
    assert rec.pending_ids == [] and rec.pending_lps == []  # committed, nothing pending
    assert store.add_observation(4, [11, 12, 13], 0.5, env_s=0.1234567)
    assert rec.turns == [[2, 3, 0.123457]]
    assert rec.tokens == [5, 6, 8, 9, 11, 12, 13]
    assert rec.gen_mask == [False, False, True, True, False, False, False]
    assert rec.logprobs == [0.0, 0.0, -0.5, -0.25, 0.0, 0.0, 0.0]
    assert rec.reward == 0.75 and rec.env_steps == 2
    # the other trajectories of the group are untouched
    assert store.records[3].tokens == [5] and store.records[5].env_steps == 0
