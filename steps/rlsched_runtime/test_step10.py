"""Step 10 of design/rlsched_runtime.md: commands become Ray calls that remember the typed
record of what they answer (the training step's calls: Step 17)."""

from collections.abc import Iterator

import pytest
import ray
from runtime_parts import start_ray, tiny

from rlsched.core.commands import Dispatch, Offload, StartEnvStep
from rlsched.core.shell import PendingDeviceOp, PendingEnvStep, PendingRequest
from rlsched.envs.base import StepLatency
from rlsched.envs.grid import GridWalk
from rlsched.model import action_token_ids, load_tokenizer
from rlsched.runtime.driver import CollectCall, Driver
from rlsched.runtime.recorder import Recorder
from rlsched.runtime.workers import DeviceWorker, EnvPool


@pytest.fixture(scope="module")
def driver() -> Iterator[Driver]:
    start_ray()
    cfg = tiny()
    tok = load_tokenizer(cfg.model, GridWalk.words)
    allowed = action_token_ids(tok, GridWalk.actions)
    cls = ray.remote(DeviceWorker).options(num_gpus=1, num_cpus=0, max_concurrency=8)
    workers = [
        cls.remote(d, cfg.model, tok.get_vocab_size(), cfg.train, 1.0, allowed, 0, 8)
        for d in range(2)
    ]
    envpool = (
        ray.remote(EnvPool)
        .options(num_cpus=0, max_concurrency=8)
        .remote("grid", {"size": 3}, StepLatency("fixed", 0.0), 0)
    )
    yield Driver(cfg, workers, envpool, tok, allowed, Recorder(2))
    ray.shutdown()


def only(driver: Driver, kind: type) -> tuple:
    [(ref, pending)] = [(r, p) for r, p in driver._pending.items() if type(p.op) is kind]
    del driver._pending[ref]
    return ref, pending


def test_a_new_driver_holds_its_parts_and_starts_idle(driver: Driver) -> None:
    """Before its loop runs: not looping, nothing measured, no replacement workers (none can be
    spawned without `spawn`), no step ended yet."""
    assert driver.spawn is None and driver.spawned == [] and driver.looping is False
    assert driver._last_step_end == 0.0 and driver._window == {} and not driver._pending
    assert driver._transitions.shrink_since is None and driver._transitions.expanding == {}
    assert len(driver.workers) == driver.cfg.num_devices == 2


def test_a_turn_an_environment_step_and_an_offload(driver: Driver) -> None:
    prompts = ray.get(driver.envpool.reset.remote([0, 1, 2, 3], [9] * 4))
    ids = driver.tokenizer.encode(prompts[0]).ids
    driver.store.add_group(0, ids)
    driver._dispatch(Dispatch(0, 0, 0, 0, 0, len(ids), 0, 4, 0, None))
    # 0.10.0: the turn waits in the mailbox until the flush, which sends it with a collect
    assert not driver._pending and driver.mailbox.out() == 1
    pending = driver._requests[0]
    assert pending.device == 0 and (pending.op.command.rid, pending.op.command.tid) == (0, 0)
    assert driver.ledger.outstanding(PendingRequest) == [pending.op]
    assert driver.recorder._inflight[0] == 1
    driver._flush()
    assert sorted(type(p.op).__name__ for p in driver._pending.values()) == [
        "CollectCall",
        "NoneType",
    ]
    ref, collect = only(driver, CollectCall)
    submit, sent = next(iter(driver._pending.items()))
    del driver._pending[submit]
    assert (collect.device, collect.op.device, sent.device, sent.op) == (0, 0, 0, None)
    assert ray.get(submit) == 1
    [out] = ray.get(ref)
    assert out.rid == 0 and len(out.token_ids) == 1
    assert out.token_ids[0] in driver.sampling.allowed_token_ids
    driver._flush()
    assert not driver._pending  # nothing queued: no call
    driver.store.add_generated(0, 0, out.token_ids, out.logprobs)
    driver._start_env_step(StartEnvStep(0, 0, driver.now() + 30.0))
    ref, pending = only(driver, PendingEnvStep)
    assert ray.get(ref).info["moves"] == 1 and driver._timers[0][2:] == (pending.op, ref)
    assert driver.ledger.holds(pending.op)
    driver._device_op(Offload(7, (1,)))
    ref, pending = only(driver, PendingDeviceOp)
    assert pending.op.key == (PendingDeviceOp, (Offload, 1, 7)) and pending.device == 1
    assert ray.get(ref).end >= ray.get(ref).start
