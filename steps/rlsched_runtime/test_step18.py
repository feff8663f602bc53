"""Step 18 of design/rlsched_runtime.md: each ready reference goes to the handler of its
record's type; the ledger recognises late answers."""

from collections.abc import Iterator

import pytest
import ray
from runtime_parts import make_driver, start_ray, tiny

from rlsched.core.commands import (
    Dispatch,
    LoadPrompts,
    Offload,
    StartEnvStep,
    SyncWeights,
    Train,
    TrainSample,
)
from rlsched.core.events import (
    EnvStepDone,
    OffloadDone,
    PromptsLoaded,
    RequestFinished,
    TrainingDone,
    WeightsSynced,
)
from rlsched.core.shell import PendingDeviceOp, PendingEnvStep, PendingRequest
from rlsched.runtime.driver import CollectCall, Commit, Driver, Pending, PromptsCall, TrainCall


@pytest.fixture(scope="module")
def driver() -> Iterator[Driver]:
    start_ray()
    yield make_driver(tiny())
    ray.shutdown()


def answers(driver: Driver, kind: type) -> list:
    """Wait for the outstanding calls of record type `kind` and answer them, in order."""
    found = [(r, p) for r, p in driver._pending.items() if type(p.op) is kind]
    events = []
    for ref, pending in found:
        del driver._pending[ref]
        ray.wait([ref], timeout=60)
        events.extend(driver._answer(ref, pending))
    return events


def sent(driver: Driver) -> list:
    """Flush the queued turns (0.10.0); wait for the submits' answers, which make no event."""
    driver._flush()
    submits = [(r, p) for r, p in driver._pending.items() if p.op is None]
    for ref, pending in submits:
        del driver._pending[ref]
        ray.wait([ref], timeout=60)
        assert driver._answer(ref, pending) == []
    return [p for p in driver._pending.values() if type(p.op) is CollectCall]


def test_a_turn_from_its_prompt_to_its_environment_step(driver: Driver) -> None:
    driver.execute(LoadPrompts(7, 1))
    [loaded] = answers(driver, PromptsCall)
    assert isinstance(loaded, PromptsLoaded) and loaded.load_id == 7
    length = driver._prompt_len[0]
    assert loaded.prompt_tokens == (length,) and length > 1 and driver.admitted == 4
    assert driver.store.records[3].tokens == driver.store.records[0].tokens
    assert len(driver.ledger) == 0
    driver.execute(Dispatch(0, 0, 0, 0, 0, length, 0, 4, 0, None))
    [collect] = sent(driver)
    assert collect.device == 0 and driver.ledger.outstanding(PendingRequest)
    [finished] = answers(driver, CollectCall)
    assert finished == RequestFinished(pytest.approx(driver.now(), abs=5), 0, 1, False)
    assert not driver._pending and not driver._requests and driver.mailbox.out() == 0
    assert driver.gen_tokens == 1 and len(driver.gen_latency_s) == 1
    assert driver.recorder._inflight[0] == 0 and len(driver.store.records[0].pending_ids) == 1
    assert len(driver.ledger) == 0
    driver.execute(StartEnvStep(0, 0, driver.now() + 30.0))
    [done] = answers(driver, PendingEnvStep)
    assert isinstance(done, EnvStepDone) and (done.tid, done.turn) == (0, 0)
    record = driver.store.records[0]
    assert len(record.tokens) == length + 1 + done.obs_tokens
    assert len(driver.ledger) == 0


def test_device_operations_are_drawn_measured_and_answered(driver: Driver) -> None:
    driver.execute(Offload(3, (1,)))
    assert answers(driver, PendingDeviceOp) == [
        OffloadDone(pytest.approx(driver.now(), abs=5), 1, 3)
    ]
    assert [(s.device, s.kind) for s in driver.recorder.spans[-1:]] == [(1, "offload")]
    assert len(driver._window["offload_s"]) == 1 and "reload_s" not in driver._window
    assert len(driver.ledger) == 0 and not driver.ledger.late


def test_a_training_step_answers_once_and_a_given_up_step_is_late(driver: Driver) -> None:
    action = driver.sampling.allowed_token_ids[0]
    for tid in range(1, 4):
        driver.store.begin_turn(10 + tid, tid, 0, driver._prompt_len[0], 0)
        driver.store.add_generated(10 + tid, tid, [action], [-1.0])
        driver.store.commit_turn(tid)
    samples = tuple(TrainSample(t, 0, (0,), False) for t in range(4))
    driver.execute(Train(1, (1,), 0, samples))
    assert answers(driver, Commit) == [] and len(driver.switches) == 1
    assert {s.kind for s in driver.recorder.spans if s.device == 1} >= {"unpark", "park"}
    [step] = [p.op for p in driver._pending.values() if type(p.op) is TrainCall]
    [trained] = answers(driver, TrainCall)
    assert trained == TrainingDone(pytest.approx(driver.now(), abs=5), 1, 1, ok=True)
    [row] = driver.recorder.rows
    assert driver._window == {}  # the next row measures the next step only
    trains = [(s.device, s.start) for s in driver.recorder.spans if s.kind == "train"]
    assert trains == [(1, step.sent)]
    [offload] = [s for s in driver.recorder.spans if s.kind == "offload"]
    assert row["offload_s"] == round(offload.end - offload.start, 4)
    assert len(driver.step_ends) == 1 and row["time_s"] == round(driver.step_ends[0], 3)
    assert row["step"] == 1 and row["version"] == 1 and row["trajectories"] == 4
    assert row["train_devices"] == 1 and row["staleness_max"] == 0
    assert row["offload_s"] is not None and row["sync_s"] is None
    assert driver._weights_version == 1 and driver.trained == {0, 1, 2, 3}
    assert not driver.store.records and len(driver.ledger) == 0 and driver._trace[0]
    # the new weights go to the rollout device
    driver.execute(SyncWeights(1, (0,)))
    assert answers(driver, PendingDeviceOp) == [
        WeightsSynced(pytest.approx(driver.now(), abs=5), 0, 1)
    ]
    assert driver.recorder.spans[-1].kind == "sync" and len(driver._window["sync_s"]) == 1
    # a step given up (its device lost) answers late: counted, no event, no row
    late = TrainCall(driver.now(), Train(2, (1,), 1, ()), (1,), None, (), {})
    ref = ray.put({})
    assert driver._answer(ref, Pending(late, 1)) == []
    assert driver.counters["late_train_answers"] == 1 and driver.ledger.late["PendingTrain"] == 1
    assert len(driver.recorder.rows) == 1 and driver._weights_version == 1


def test_a_collect_is_armed_again_while_turns_remain_out_on_its_device(driver: Driver) -> None:
    """0.10.0: the first collect came back with the one turn that had ended when a second turn
    went out; the handler arms the next collect for it, and arms none once both are back."""
    driver.execute(LoadPrompts(8, 1))
    answers(driver, PromptsCall)
    length = driver._prompt_len[1]
    driver.execute(Dispatch(20, 4, 1, 0, 0, length, 0, 4, 0, None))
    [first] = sent(driver)
    [ref] = [r for r, p in driver._pending.items() if p is first]
    ray.wait([ref], timeout=60)  # it has answered: with turn 20 alone
    driver.execute(Dispatch(21, 5, 1, 0, 0, length, 0, 4, 0, None))
    assert sent(driver) == [first]  # the second turn's submit armed no second collect
    assert driver.mailbox.out() == 2 and sorted(driver._requests) == [20, 21]
    [one] = answers(driver, CollectCall)
    assert isinstance(one, RequestFinished) and one.rid == 20
    [second] = [p for p in driver._pending.values() if type(p.op) is CollectCall]
    assert second is not first and second.device == 0 and sorted(driver._requests) == [21]
    [two] = answers(driver, CollectCall)
    assert isinstance(two, RequestFinished) and two.rid == 21
    assert not driver._pending and not driver._requests and driver.mailbox.out() == 0
    assert len(driver.ledger) == 0
