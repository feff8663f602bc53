"""Step 19 of design/rlsched_runtime.md: an environment whose class declares quick steps is
reset, stepped and closed in the driver's process, with the same records and events as through
the pool actor, and a whole run starts no pool actor."""

from collections.abc import Iterator

import pytest
import ray
from runtime_parts import make_driver, start_ray, tiny

from rlsched.core.commands import DropStale, LoadPrompts, StartEnvStep
from rlsched.core.events import EnvStepDone, EnvStepFailed, PromptsLoaded
from rlsched.core.shell import PendingEnvStep, PendingPrompts
from rlsched.envs.base import StepLatency, make_env
from rlsched.runtime.cluster import run_training
from rlsched.runtime.driver import Driver, PromptsCall
from rlsched.runtime.workers import EnvPool

KWARGS = {"size": 3, "max_steps": 6}


@pytest.fixture(scope="module")
def driver() -> Iterator[Driver]:
    start_ray()
    yield make_driver(tiny(run={"seed": 1}), local_env=True)
    ray.shutdown()


def taken(driver: Driver) -> list:
    """The events queued for the loop's next turn, taken out."""
    events, driver._ready = driver._ready, []
    return events


def test_prompts_are_reset_in_this_process(driver: Driver) -> None:
    assert driver._here and driver._envpool_id is None
    driver.execute(LoadPrompts(5, 2))
    assert not driver._pending and not driver._timers  # no Ray call, nothing to time out
    [loaded] = taken(driver)
    assert type(loaded) is PromptsLoaded and loaded.load_id == 5
    assert not driver.ledger.holds(PromptsCall(0.0, LoadPrompts(5, 2), (0, 1)))
    assert driver.ledger.outstanding(PendingPrompts) == [] and driver._next_gid == 2
    assert sorted(driver.envpool._envs) == list(range(8))  # groups 0 and 1, four each
    # run.seed * 1_000_003 + group, as through the actor
    for gid in (0, 1):
        twin = make_env("grid", KWARGS)
        prompt = driver.tokenizer.encode(twin.reset(seed=1_000_003 + gid)[0]).ids
        assert driver.store.records[gid * 4].tokens == prompt
        assert loaded.prompt_tokens[gid] == len(prompt)
    assert driver.admitted == 8


def test_a_step_is_answered_by_the_loops_next_turn(driver: Driver) -> None:
    action = driver.sampling.allowed_token_ids[0]
    text = driver.tokenizer.decode([action])
    twin = make_env("grid", KWARGS)
    twin.reset(seed=1_000_003)
    expected = twin.step(text)
    for tid in (0, 1):
        driver.store.begin_turn(20 + tid, tid, 0, len(driver.store.records[tid].tokens), 0)
        driver.store.add_generated(20 + tid, tid, [action], [-0.5])
        driver.execute(StartEnvStep(tid, 0, 50.0))
    assert not driver._pending and not driver._timers
    events = taken(driver)
    assert [type(e) for e in events] == [EnvStepDone, EnvStepDone]
    assert [(e.tid, e.turn, e.done) for e in events] == [(t, 0, expected.done) for t in (0, 1)]
    obs = [] if expected.done else driver.tokenizer.encode(expected.observation).ids
    assert events[0].obs_tokens == len(obs)
    assert driver.ledger.outstanding(PendingEnvStep) == []
    record = driver.store.records[0]
    assert record.tokens[-len(obs) - 1 :] == [action, *obs]
    assert record.reward == expected.reward and driver.counters["env_failed"] == 0
    [(generated, observed, seconds)] = record.turns
    assert (generated, observed) == (1, len(obs)) and seconds >= 0.0  # no timer was armed


def test_a_raising_step_fails_its_trajectory(driver: Driver) -> None:
    driver.store.add_group(9, [1, 2])
    action = driver.sampling.allowed_token_ids[0]
    driver.store.begin_turn(40, 36, 9, 2, 0)  # trajectory 36: no environment was reset for it
    driver.store.add_generated(40, 36, [action], [-0.5])
    driver.execute(StartEnvStep(36, 0, 50.0))
    [failed] = taken(driver)
    assert type(failed) is EnvStepFailed and (failed.tid, failed.turn) == (36, 0)
    assert driver.counters["env_failed"] == 1 and driver.store.records[36].failed
    assert "36" in driver.causes[-1]  # the environment's own error, first line
    assert driver.ledger.outstanding(PendingEnvStep) == []


def test_other_errors_propagate_and_closes_are_immediate(driver: Driver) -> None:
    op = PromptsCall(0.0, LoadPrompts(7, 1), (5,))
    driver.ledger.open(op)

    def broken() -> list[str]:
        raise ValueError("no prompts")

    with pytest.raises(ValueError, match="no prompts"):
        driver._answer_here(op, broken)
    assert taken(driver) == [] and driver.ledger.holds(op)
    driver.ledger.forget(op)
    driver.execute(DropStale((1,), (4, 5, 6, 7)))
    assert not driver._pending and sorted(driver.envpool._envs) == [0, 1, 2, 3]


def test_a_whole_run_starts_no_pool_actor() -> None:
    seen: list[Driver] = []
    driver = run_training(tiny(), 2, on_ready=seen.append)
    assert seen == [driver] and isinstance(driver.envpool, EnvPool) and driver._here
    assert driver._envpool_id is None  # no pool actor to watch for
    acct = driver.accounting()
    assert acct["trained"] == 32 and acct["dropped"] + acct["live"] == acct["admitted"] - 32
    assert driver.counters["env_failed"] == 0 and len(driver.recorder.rows) == 2
    # every finished turn's environment answered in the loop: none timed out, none came late
    lines = driver.trace_lines()
    env_s = [turn[2] for line in lines for sample in line["samples"] for turn in sample]
    assert env_s and min(env_s) >= 0.0
    assert driver.counters["env_step_timeouts"] == 0 and driver.counters["late_env_answers"] == 0


def test_the_pool_class_is_the_same_in_both_places() -> None:
    pool = EnvPool("grid", KWARGS, StepLatency(), 0)
    assert pool.reset([3], [1_000_003]) == [make_env("grid", KWARGS).reset(seed=1_000_003)[0]]
    assert pool.close([3, 4]) == 1
