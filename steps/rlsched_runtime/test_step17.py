"""Step 17 of design/rlsched_runtime.md: one handler per command (the shell base's table), each
started operation a typed record in the ledger."""

import sys
from collections.abc import Iterator
from typing import Any

import pytest
import ray
import torch
from runtime_parts import make_driver, start_ray, tiny

from rlsched.core.commands import (
    Abort,
    Dispatch,
    DropStale,
    InitialLayout,
    LoadPrompts,
    Offload,
    Reload,
    StartEnvStep,
    SyncWeights,
    Train,
    TrainSample,
)
from rlsched.core.events import RequestAborted, RequestFinished
from rlsched.core.shell import (
    COMMAND_TYPES,
    PendingDeviceOp,
    PendingEnvStep,
    PendingPrompts,
    PendingTrain,
)
from rlsched.model import ModelSpec, build_model
from rlsched.runtime.driver import Commit, Driver, PromptsCall, TrainCall
from rlsched.runtime.workers import DeviceWorker, submit_train_step
from rlsched.trainer.grpo import TrainExample, TrainSpec

EXPORTED: list = []  # the training step's weights, synced by the last check


@pytest.fixture(scope="module")
def driver() -> Iterator[Driver]:
    start_ray()
    yield make_driver(tiny(run={"seed": 1}))  # prompts seeded from run.seed
    ray.shutdown()


def calls(driver: Driver, kind: type | None) -> list:
    """The outstanding calls whose record is exactly of `kind` (None: nobody waits on them),
    taken out of the driver's table."""
    found = [(r, p) for r, p in driver._pending.items() if type(p.op) is (kind or type(None))]
    for ref, _ in found:
        del driver._pending[ref]
    return found


def test_every_command_type_has_its_handler() -> None:
    assert set(COMMAND_TYPES) <= set(Driver.handlers)
    expect = {
        Dispatch: Driver._dispatch,
        StartEnvStep: Driver._start_env_step,
        Abort: Driver._abort,
        Offload: Driver._device_op,
        Reload: Driver._device_op,
        SyncWeights: Driver._sync,
        Train: Driver._train,
        LoadPrompts: Driver._load_prompts,
        DropStale: Driver._drop_stale,
        InitialLayout: Driver._initial_layout,
    }
    assert {kind: Driver.handlers[kind] for kind in expect} == expect


def test_prompt_loads_take_the_next_groups(driver: Driver) -> None:
    driver.execute(LoadPrompts(5, 2))
    driver.execute(LoadPrompts(6, 1))
    assert driver._next_gid == 3
    (ref, first), (_, second) = calls(driver, PromptsCall)
    assert first.op.gids == (0, 1) and second.op.gids == (2,) and first.device is None
    assert driver.ledger.holds(first.op) and first.op.key == (PendingPrompts, 5)
    prompts = ray.get(ref)
    assert len(prompts) == 8 and prompts[0] == prompts[3]  # one seed per group
    # run.seed * 1_000_003 + group (grid 3, goal 1 2 for group 0; goal 0 1 for group 1)
    assert prompts[0] == ray.get(driver.envpool.reset.remote([99], [1_000_003]))[0]
    assert prompts[4] == ray.get(driver.envpool.reset.remote([98], [1_000_004]))[0]
    assert prompts[0] != prompts[4]
    driver.ledger.forget(first.op)
    driver.ledger.forget(second.op)


def test_aborts_closes_and_the_initial_layout(driver: Driver) -> None:
    driver.execute(Abort(0, (3, 4)))
    [(ref, pending)] = calls(driver, None)
    assert pending.device == 0 and ray.get(ref) == 0  # nothing of those runs there
    driver.lost.add(0)
    driver.execute(Abort(0, (5,)))  # nothing is sent to a lost rank
    driver.lost.discard(0)
    assert calls(driver, None) == []
    driver.store.add_group(0, [1, 2])
    out = PendingEnvStep(0.0, StartEnvStep(2, 0, 9.0))  # trajectory 2's step is still out
    other = PendingEnvStep(0.0, StartEnvStep(7, 0, 9.0))  # another group's is not dropped
    driver.ledger.open(out)
    driver.ledger.open(other)
    driver.execute(DropStale((0,), (0, 1, 2, 3)))
    [(ref, close)] = calls(driver, None)  # one close: the environments go once
    assert close.device is None and ray.get(ref) == 4  # the prompt loads above reset them
    assert driver.dropped == {0, 1, 2, 3} and not driver.store.records
    assert not driver.ledger.holds(out)  # its answer, or the closed environment's error, is late
    assert driver.ledger.outstanding(PendingEnvStep) == [other]
    driver.ledger.forget(other)
    assert len(driver.ledger) == 0
    driver.execute(InitialLayout((0,), (1,)))  # device 1 starts asleep: waited for, drawn
    assert [(s.device, s.kind) for s in driver.recorder.spans] == [(1, "offload")]
    assert not driver._pending
    driver.execute(Reload(9, (1,)))
    [(ref, pending)] = calls(driver, PendingDeviceOp)
    assert pending.op.key == (PendingDeviceOp, (Reload, 1, 9)) and ray.get(ref).end > 0
    driver.ledger.forget(pending.op)


def test_a_training_step_is_one_record_with_its_references(driver: Driver) -> None:
    prompt = [1, 2, 3]
    driver.store.add_group(1, prompt)
    action = driver.sampling.allowed_token_ids[0]
    for tid in range(4, 8):
        driver.store.begin_turn(10 + tid, tid, 1, len(prompt), 0)
        driver.store.add_generated(10 + tid, tid, [action], [-1.0])
        driver.store.commit_turn(tid)
    samples = tuple(TrainSample(t, 1, (0,), False) for t in range(4, 8))
    driver.execute(Train(3, (1,), 0, samples))
    [(weights_ref, pending)] = calls(driver, TrainCall)
    op = pending.op
    assert pending.device == 1 and op.command.step == 3 and op.devices == (1,)
    assert op.key == (PendingTrain, 3) and driver.ledger.outstanding(PendingTrain) == [op]
    assert len(op.applied) == driver.cfg.train.updates_per_step
    assert op.figures["tokens"] == 16.0 and op.figures["mean_episode_len"] == 1.0
    assert set(ray.get(weights_ref)) == set(ray.get(op.checkpoint)["weights"])
    [(commit_ref, commit)] = calls(driver, Commit)
    assert commit.device == 1 and commit.op.command is op.command
    assert not driver.ledger.holds(commit.op)  # a commit answers nothing the core awaits
    assert ray.get(commit_ref).park.end >= ray.get(commit_ref).park.start
    assert ray.get(op.checkpoint)["version"] == 1
    EXPORTED.append(weights_ref)
    driver.ledger.forget(op)
    # the commit left the replica at version 1: the next step needs no checkpoint
    driver.execute(Train(4, (1,), 1, samples))
    [(weights_ref, pending)] = calls(driver, TrainCall)
    assert set(ray.get(weights_ref)) == set(ray.get(EXPORTED[0]))
    assert ray.get(pending.op.checkpoint)["version"] == 2
    [(commit_ref, _)] = calls(driver, Commit)
    assert driver._commits == {1: commit_ref}
    driver.ledger.forget(pending.op)
    ray.get(commit_ref)


@ray.remote
def failed_commit() -> None:
    raise RuntimeError("the previous commit failed")


def test_a_step_starts_after_the_devices_previous_commit(driver: Driver) -> None:
    """The next step's first gradients on a device wait for its previous step's commit (the
    park): a commit that failed fails them, where they would have run beside it."""
    samples = tuple(TrainSample(t, 1, (0,), False) for t in range(4, 8))
    driver._commits[1] = failed_commit.remote()
    driver.execute(Train(5, (1,), 2, samples))
    [(weights_ref, pending)] = calls(driver, TrainCall)
    with pytest.raises(ray.exceptions.RayTaskError, match="the previous commit failed"):
        ray.get(weights_ref)
    calls(driver, Commit)
    driver.ledger.forget(pending.op)


def test_a_sync_sends_the_newest_weights_to_each_device(driver: Driver) -> None:
    with pytest.raises(AssertionError, match="command.version == self._weights_version"):
        driver.execute(SyncWeights(1, (0,)))
    driver._weights, driver._weights_version = EXPORTED[0], 1  # what a step's answer keeps
    driver.execute(SyncWeights(1, (0, 1)))
    syncs = calls(driver, PendingDeviceOp)
    assert [p.op.key[1] for _, p in syncs] == [(SyncWeights, 0, 1), (SyncWeights, 1, 1)]
    assert [p.device for _, p in syncs] == [0, 1]
    assert all(driver.ledger.holds(p.op) for _, p in syncs) and len(driver.ledger) == 2
    for ref, pending in syncs:
        assert ray.get(ref).end >= ray.get(ref).start
        driver.ledger.forget(pending.op)


def test_a_device_lost_before_the_core_heard_gets_no_call(driver: Driver) -> None:
    """Device 1 lost, its WorkerLost still queued (what `_lose` leaves): a sync skips it, an
    abort, offload or reload sends it nothing, a turn dispatched to it stays unsent (the loss
    gives it back to the core), and a step on it is one failed attempt, not started: alone,
    the loss ends it; beside device 0, its answer is a failed TrainingDone behind the loss.
    Once the core was told, a dispatch or a step there is refused."""
    samples = tuple(TrainSample(t, 1, (0,), False) for t in range(4, 8))
    turn = Dispatch(99, 4, 1, 1, 1, 3, 0, 8, 1, None)  # request 99: trajectory 4 on rank 1
    driver.lost.add(1)
    driver._untold.add(1)
    try:
        driver.execute(SyncWeights(1, (0, 1)))
        [(_, sync)] = calls(driver, PendingDeviceOp)
        assert sync.device == 0
        driver.ledger.forget(sync.op)
        driver.execute(turn)
        driver.execute(Abort(1, (99,)))
        driver.execute(Offload(5, (1,)))
        driver.execute(Reload(6, (1,)))
        assert not driver._pending and not len(driver.ledger) and not driver._ready
        failures = driver.train_failures
        driver.execute(Train(6, (1,), 1, samples))
        assert not driver._pending and not driver._ready
        driver.execute(Train(7, (0, 1), 1, samples))
        assert not driver._pending and not len(driver.ledger)
        [answer] = driver._ready
        assert (answer.step, answer.version, answer.ok) == (7, 2, False)
        assert driver.train_failures == failures + 2
        driver._ready.clear()
        driver.train_failures = failures
        driver._untold.discard(1)
        with pytest.raises(AssertionError, match="self._untold"):
            driver.execute(turn)
        with pytest.raises(AssertionError, match="set\\(lost\\) <= self._untold"):
            driver.execute(Train(6, (1,), 1, samples))
    finally:
        driver.lost.discard(1)
        driver._untold.discard(1)


TRAINING_CALLS = ("train_step", "train_grads", "train_apply", "train_export", "train_commit")


def logged(name: str) -> Any:
    """`DeviceWorker`'s method `name`, its name noted in the worker's `calls` first."""

    def method(self: "CallLog", *args: Any) -> Any:
        self.calls.append(name)
        return getattr(DeviceWorker, name)(self, *args)

    method.__name__ = name
    return method


class CallLog(DeviceWorker):
    """A device worker that keeps the names of its training calls in order: a call through
    Ray, and the calls a method makes on `self`."""

    def __init__(self, *args: Any) -> None:
        self.calls: list[str] = []
        super().__init__(*args)

    def log(self) -> list[str]:
        return self.calls


for _name in TRAINING_CALLS:
    setattr(CallLog, _name, logged(_name))


def test_one_device_trains_in_one_call_and_several_by_the_graph(driver: Driver) -> None:
    """One device: one `train_step` call. Two: per round gradients and apply on each, the
    export from the first, a commit on each. One round over the same examples applies the same
    gradient either way (averaged over all tokens)."""
    spec = ModelSpec(hidden_size=16, heads=2, kv_heads=1, intermediate_size=32)
    # the workers cannot import this file: the class travels by value
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    cls = ray.remote(CallLog).options(num_gpus=0, num_cpus=0, max_concurrency=4)
    one, b, c = (cls.remote(d, spec, 20, TrainSpec(lr=0.05), 1.0, (), 0, 8) for d in range(3))
    data = [
        TrainExample((3, 4, 5), (False, False, True), (0.0, 0.0, -2.9), 1.0),
        TrainExample((3, 4, 6), (False, False, True), (0.0, 0.0, -3.1), -1.0),
    ]
    alone = submit_train_step([one], [data], 1, 0, None, [None])
    pair = submit_train_step([b, c], [data[:1], data[1:]], 1, 0, None, [None, None])
    assert (len(alone.applied), len(alone.commits), len(pair.commits)) == (1, 1, 2)
    ray.get([alone.weights, *alone.commits, pair.weights, *pair.commits])
    log = ray.get(one.log.remote())
    assert log == ["train_step", "train_grads", "train_apply", "train_export", "train_commit"]
    assert ray.get(b.log.remote()) == ["train_grads", "train_apply", "train_export", "train_commit"]
    assert ray.get(c.log.remote()) == ["train_grads", "train_apply", "train_commit"]
    assert ray.get(alone.checkpoint)["version"] == ray.get(pair.checkpoint)["version"] == 1
    # the same averaged gradient: the same loss and norm (Adam's first step is about lr times
    # each element's sign, so the weights themselves differ wherever an element is near 0)
    expect, got = ray.get(pair.applied[0]), ray.get(alone.applied[0])
    assert got["tokens"] == expect["tokens"] == 2.0 and got["grad_norm"] > 0.0
    for key in ("loss", "grad_norm", "ratio"):
        assert abs(got[key] - expect[key]) < 1e-5 * max(1.0, abs(expect[key])), key
    start = dict(build_model(spec, 20).named_parameters())  # version 0 in every worker
    weights = ray.get(alone.weights)
    assert weights.keys() == start.keys() and not all(
        torch.equal(weights[n], start[n]) for n in start
    )
    for actor in (one, b, c):
        ray.kill(actor)


def test_an_abort_sends_the_turns_still_queued_first(driver: Driver) -> None:
    """0.10.0: a turn dispatched in the same batch as its abort is sent before it, so the abort
    meets the turn (or its end) and the turn's output comes back through the collect."""
    driver.store.add_group(5, [1, 2, 3])
    driver.execute(Dispatch(50, 20, 5, 0, 0, 3, 0, 4, 0, None))
    driver.execute(Abort(0, (50,)))
    order = [(p.device, type(p.op).__name__) for p in driver._pending.values()]
    assert order == [(0, "NoneType"), (0, "CollectCall"), (0, "NoneType")]
    events = []
    for ref, pending in list(driver._pending.items()):
        del driver._pending[ref]
        ray.wait([ref], timeout=60)
        events.extend(driver._answer(ref, pending))
    [event] = events
    assert event.rid == 50 and isinstance(event, RequestFinished | RequestAborted)
    assert not driver._requests and driver.mailbox.out() == 0 and len(driver.ledger) == 0
