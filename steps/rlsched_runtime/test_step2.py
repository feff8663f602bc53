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
