"""Step 11 of design/rlsched_runtime.md: answers become events, exactly one each."""

import time
from collections.abc import Iterator

import pytest
import ray
from runtime_parts import make_driver, start_ray, tiny

from rlsched.core.commands import Dispatch, Offload, StartEnvStep, Train, TrainSample
from rlsched.core.events import (
    EnvStepDone,
    EnvStepFailed,
    EnvStepTimedOut,
    OffloadDone,
    RequestAborted,
    RequestFinished,
    TrainingDone,
    WorkerLost,
    WorkerRecovered,
)
from rlsched.core.shell import (
    PendingDeviceOp,
    PendingEnvStep,
    PendingRecovery,
    PendingRequest,
    PendingTrain,
)
from rlsched.runtime.driver import CollectCall


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    start_ray()
    yield
    ray.shutdown()


def answer(driver, kind: type) -> list:
    [(ref, pending)] = [(r, p) for r, p in driver._pending.items() if type(p.op) is kind]
    del driver._pending[ref]
    ray.wait([ref], timeout=30)
    return driver._answer(ref, pending)


def collected(driver) -> list:
    """0.10.0: send the queued turn (`_flush`: a submit and its device's collect), then the
    events of the collect's answer; the submit's own answer makes none."""
    driver._flush()
    [(submit, sent)] = [(r, p) for r, p in driver._pending.items() if p.op is None]
    events = answer(driver, CollectCall)
    del driver._pending[submit]
    ray.wait([submit], timeout=30)
    assert driver._answer(submit, sent) == []
    return events


def start_group(driver) -> list[int]:
    prompts = ray.get(driver.envpool.reset.remote([0, 1, 2, 3], [9] * 4))
    ids = driver.tokenizer.encode(prompts[0]).ids
    driver.store.add_group(0, ids)
    driver._prompt_len[0] = len(ids)
    return ids


def test_answers_env_faults_and_a_lost_worker(cluster: None) -> None:
    driver = make_driver(tiny(env={"name": "faulty-grid"}), {"size": 3, "fail_prob": 0.5})
    ids = start_group(driver)
    driver._dispatch(Dispatch(0, 0, 0, 0, 0, len(ids), 0, 4, 0, None))
    [event] = collected(driver)
    assert isinstance(event, RequestFinished) and event.new_tokens == 1
    assert driver.recorder._inflight[0] == 0 and driver.gen_tokens == 1
    # environment steps: an answer, or (seeded faults) a failure ending the trajectory
    outcomes = []
    for turn in range(6):
        driver.store.add_generated(turn, 0, [driver.sampling.allowed_token_ids[0]], [-1.0])
        driver.store.records[0].rid = None
        driver._start_env_step(StartEnvStep(0, turn, driver.now() + 30.0))
        [event] = answer(driver, PendingEnvStep)
        outcomes.append(type(event))
        if isinstance(event, EnvStepFailed) or event.done:
            break
    assert EnvStepTimedOut not in outcomes  # a raising environment is no timeout (0.4.0)
    if EnvStepFailed in outcomes:
        assert driver.counters["env_failed"] == 1 and driver.store.records[0].failed
        # the environment's own error, kept for the user (not Ray's wrapper around it)
        assert driver.causes[-1].startswith("RuntimeError: ")
        assert driver.counters["env_step_timeouts"] == 0
    else:
        assert all(o is EnvStepDone for o in outcomes)
    driver._device_op(Offload(3, (1,)))
    assert answer(driver, PendingDeviceOp) == [
        OffloadDone(pytest.approx(driver.now(), abs=5), 1, 3)
    ]
    # a killed actor: a call to it becomes one WorkerLost; later answers are ignored
    ids1 = driver.store.records[1].tokens
    ray.kill(driver.workers[0], no_restart=True)
    driver._dispatch(Dispatch(1, 1, 0, 0, 0, len(ids1), 0, 4, 0, None))
    [event] = collected(driver)
    assert isinstance(event, WorkerLost) and event.device == 0 and driver.lost == {0}
    assert driver._requests == {} and driver.mailbox.out() == 0  # forgotten with the actor
    driver._device_op(Offload(4, (0,)))
    assert not [p for p in driver._pending.values() if p.device == 0]


def test_a_hanging_environment_step_times_out(cluster: None) -> None:
    cfg = tiny(env={"name": "faulty-grid", "step_timeout_s": 0.3})
    driver = make_driver(cfg, {"hang_prob": 1.0, "hang_s": 5.0})
    start_group(driver)
    driver.store.records[2].pending_ids = [driver.sampling.allowed_token_ids[0]]
    driver.store.records[2].pending_lps = [-1.0]
    driver._start_env_step(StartEnvStep(2, 0, driver.now() + 30.0))
    time.sleep(0.4)
    [event] = driver._expired_timers()
    assert isinstance(event, EnvStepTimedOut) and (event.tid, event.turn) == (2, 0)
    assert driver.counters["env_step_timeouts"] == 1 and driver.store.records[2].failed
    assert not driver._pending and driver._expired_timers() == []
    driver._observe_pool()
    assert driver._transitions.shrink_since is None


def test_a_request_past_its_session_deadline_is_aborted(cluster: None) -> None:
    """The session deadline's timer sends an abort to the request's rank (its answer still
    comes through `collect`); it makes no event of its own. A turn still queued is sent before
    its abort (0.10.0)."""
    driver = make_driver(tiny())
    ids = start_group(driver)
    driver._dispatch(Dispatch(0, 0, 0, 0, 1, len(ids), 0, 4, 0, driver.now() + 0.2))
    time.sleep(0.3)
    assert driver._expired_timers() == []
    sent = [(p.device, type(p.op).__name__) for p in driver._pending.values()]
    assert sent == [(1, "NoneType"), (1, "CollectCall"), (1, "NoneType")]  # submit, abort last
    assert driver.ledger.outstanding(PendingRequest) and driver.mailbox.out() == 1
    [event] = answer(driver, CollectCall)  # finished before the abort, or aborted by it
    assert isinstance(event, RequestFinished | RequestAborted) and event.rid == 0


def test_a_lost_device_fails_the_training_step_it_was_in(cluster: None) -> None:
    """The step in progress on a lost device ends at once, failed, at the version it would
    have made, and leaves the ledger."""
    driver = make_driver(tiny())
    start_group(driver)
    action = driver.sampling.allowed_token_ids[0]
    prompt = len(driver.store.records[0].tokens)
    for tid in range(4):
        driver.store.begin_turn(10 + tid, tid, 0, prompt, 0)
        driver.store.add_generated(10 + tid, tid, [action], [-1.0])
        driver.store.commit_turn(tid)
    samples = tuple(TrainSample(t, 0, (0,), False) for t in range(4))
    driver.execute(Train(5, (1,), 0, samples))
    assert len(driver.ledger.outstanding(PendingTrain)) == 1
    events = driver._lose(1)
    assert events == [WorkerLost(events[0].time, 1), TrainingDone(events[0].time, 5, 1, ok=False)]
    assert driver.ledger.outstanding(PendingTrain) == []


def test_an_expand_is_measured_even_when_its_device_shrinks_again_in_the_same_event(
    cluster: None,
) -> None:
    """EXPANDING -> ROLLOUT -> SHRINKING between two looks is a finished expand (the next batch
    was ready when the weights arrived); EXPANDING -> LOST is not."""
    driver = make_driver(tiny(devices={"count": 3, "train": 2}))
    pool = driver.core.pool
    for device in (1, 2):
        pool.shrink_sampler([device])
        pool.mark_offloaded(device)
        pool.expand_sampler([device])
    driver._observe_pool()
    assert driver._transitions.expanding.keys() == {1, 2} and "expand_s" not in driver._window
    pool.mark_rollout(1)
    pool.shrink_sampler([1])
    pool.mark_lost(2)
    driver._observe_pool()
    assert len(driver._window["expand_s"]) == 1 and not driver._transitions.expanding


def test_a_lost_worker_is_replaced_and_its_old_answers_are_dropped(cluster: None) -> None:
    """The replacement's first answer (its engine asleep) is the device's WorkerRecovered;
    the dead actor's calls sent before are dropped by epoch, the new actor serves."""
    driver = make_driver(tiny(run={"worker_restarts": 1}), spawn=True)
    ids = start_group(driver)
    old = driver.workers[0]
    ray.kill(old, no_restart=True)
    driver._dispatch(Dispatch(0, 0, 0, 0, 0, len(ids), 0, 4, 0, None))
    driver._flush()
    driver._device_op(Offload(7, (0,)))  # sent to the dead actor before its loss is seen
    [(ref, pending)] = [(r, p) for r, p in driver._pending.items() if type(p.op) is CollectCall]
    del driver._pending[ref]
    ray.wait([ref], timeout=30)
    lost = driver._answer(ref, pending)
    assert [type(e) for e in lost] == [WorkerLost] and driver.lost == {0}
    assert driver.ledger.outstanding(PendingRequest) == []  # its request left the ledger
    assert driver._epoch[0] == 1  # one actor generation later
    assert driver.restarts[0] == 1 and 0 in driver._respawning
    assert "ActorDiedError" in driver.causes[0] or "Actor" in driver.causes[0]
    # the offload sent to the dead actor: answered (an error) but dropped, not a second loss
    [(ref, pending)] = [(r, p) for r, p in driver._pending.items() if type(p.op) is PendingDeviceOp]
    del driver._pending[ref]
    ray.wait([ref], timeout=30)
    assert driver._answer(ref, pending) == [] and driver.counters["workers_lost"] == 1
    [event] = answer(driver, PendingRecovery)
    assert isinstance(event, WorkerRecovered) and event.device == 0
    assert driver.workers[0] is not old and driver.lost == set() and not driver._respawning
    assert len(driver.rejoin_s) == 1 and driver.rejoin_s[0] > 0
    assert [s.kind for s in driver.recorder.spans if s.device == 0] == ["rollout", "lost"]
    assert ray.get(driver.workers[0].ping.remote(), timeout=30) == 0


def test_restarts_are_bounded_and_training_failures_stop_the_run(cluster: None) -> None:
    from rlsched.runtime.errors import TrainingFailed

    driver = make_driver(tiny(run={"worker_restarts": 0, "train_retries": 1}), spawn=True)
    notes: list[str] = []
    driver.notify = notes.append
    ray.kill(driver.workers[1], no_restart=True)
    driver._device_op(Offload(3, (1,)))
    assert [type(e) for e in answer(driver, PendingDeviceOp)] == [WorkerLost]
    assert not driver._respawning and driver.restarts[1] == 0  # no restart left
    line = driver._stall_line("no device can make progress")
    assert line.startswith("run stalled: no device can make progress; device 1 lost (")
    assert "restarts used 0 of 0" in line and "\n" not in line
    driver._train_attempt_failed(4, "ValueError: bad batch")
    assert notes == ["training step 4 failed (ValueError: bad batch); retry 1 of 1"]
    with pytest.raises(TrainingFailed, match="training failed 2 times in a row"):
        driver._train_attempt_failed(4, "ValueError: bad batch")
