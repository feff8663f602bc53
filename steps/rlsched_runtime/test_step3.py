"""Step 3 of design/rlsched_runtime.md: training examples, failed trajectories, traces."""

import pytest

from rlsched.core.commands import TrainSample
from rlsched.runtime.store import TrajectoryStore


def play(store: TrajectoryStore, tid: int, gid: int, reward: float) -> None:
    rec = store.records[tid]
    store.begin_turn(tid + 100, tid, gid, len(rec.tokens), 0)
    store.add_generated(tid + 100, tid, [5], [-0.7])
    store.commit_turn(tid)
    store.add_observation(tid, [], reward, env_s=0.01)


def test_examples_normalise_within_groups_and_skip_failures() -> None:
    store = TrajectoryStore(2)
    for gid in (0, 1):
        store.add_group(gid, [1, 2])
    for tid, reward in zip(range(4), (1.0, 0.0, 1.0, 0.0), strict=True):
        play(store, tid, tid // 2, reward)
    store.mark_failed(3)
    samples = [TrainSample(t, t // 2, (0,), False) for t in range(4)]
    examples, stats = store.examples(samples)
    assert [round(e.advantage, 3) for e in examples] == [1.0, -1.0, 0.0, 0.0]
    assert examples[0].token_ids == (1, 2, 5) and examples[0].gen_mask == (False, False, True)
    assert stats["mean_reward"] == 0.5 and stats["failed"] == 1.0 and stats["tokens"] == 12.0
    timed_out = [TrainSample(t, t // 2, (0,), t == 0) for t in range(2)]
    assert [e.advantage for e in store.examples(timed_out)[0]] == [0.0, 0.0]
    with pytest.raises(ValueError, match="whole groups"):
        store.examples(samples[:3])


def test_group_trace_and_forget() -> None:
    store = TrajectoryStore(2)
    store.add_group(0, [1, 2, 3])
    play(store, 0, 0, 1.0)
    trace = store.group_trace(0, 3)
    assert trace == {"prompt_tokens": 3, "samples": [[[1, 0, 0.01]], []]}
    store.forget([0, 1, 5])
    assert store.records == {} and not store.mark_failed(0)
    with pytest.raises(ValueError, match="VAL_KEYS_PRESENT"):
        store.group_trace(0, 3)


def test_run_errors_are_one_line_and_name_their_cause() -> None:
    from rlsched.runtime.errors import RunError, RunStalled, TrainingFailed, first_line

    assert issubclass(RunStalled, RunError) and issubclass(TrainingFailed, RunError)
    assert issubclass(RunError, RuntimeError)
    exc = RuntimeError("\n\n  The actor died unexpectedly before finishing this task.\n  at x\n")
    assert (
        first_line(exc) == "RuntimeError: The actor died unexpectedly before finishing this task."
    )
    assert first_line(ValueError()) == "ValueError"
    assert len(first_line(KeyError("k" * 500))) == 200
    # an actor's error as the driver gets it: Ray's wrapper, named by the error itself
    import ray.exceptions

    raised = RuntimeError("the vault jammed\n  at step 3")
    wrapped = ray.exceptions.RayTaskError("EnvPool.step", "Traceback ...", raised)
    assert first_line(wrapped.as_instanceof_cause()) == "RuntimeError: the vault jammed"
    assert first_line(wrapped) == "RuntimeError: the vault jammed"
    # another error's `cause` is its own business
    other = ValueError("outer")
    other.cause = RuntimeError("inner")  # type: ignore[attr-defined]
    assert first_line(other) == "ValueError: outer"
