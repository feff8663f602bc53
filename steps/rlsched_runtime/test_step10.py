"""Step 10 of design/rlsched_runtime.md: commands become Ray calls that remember
what they answer."""

from collections.abc import Iterator

import pytest
import ray
from runtime_parts import start_ray, tiny

from rlsched.core.commands import Dispatch, StartEnvStep, Train, TrainSample
from rlsched.envs.base import StepLatency
from rlsched.envs.grid import GridWalk
from rlsched.model import action_token_ids, load_tokenizer
from rlsched.runtime.driver import Driver
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


def only(driver: Driver, kind: str) -> tuple:
    [(ref, pending)] = [(r, p) for r, p in driver._pending.items() if p.kind == kind]
    del driver._pending[ref]
    return ref, pending


def test_a_turn_an_environment_step_an_offload_and_a_training_step(driver: Driver) -> None:
    prompts = ray.get(driver.envpool.reset.remote([0, 1, 2, 3], [9] * 4))
    ids = driver.tokenizer.encode(prompts[0]).ids
    driver.store.add_group(0, ids)
    driver._dispatch(Dispatch(0, 0, 0, 0, 0, len(ids), 0, 4, 0, None))
    ref, pending = only(driver, "gen")
    out = ray.get(ref)
    assert pending.device == 0 and pending.data == (0, 0)
    assert len(out.token_ids) == 1 and out.token_ids[0] in driver.sampling.allowed_token_ids
    assert driver.recorder._inflight[0] == 1 and driver._live_gen == {0: 0}
    driver.store.add_generated(0, 0, out.token_ids, out.logprobs)
    driver._start_env_step(StartEnvStep(0, 0, driver.now() + 30.0))
    ref, pending = only(driver, "env")
    assert ray.get(ref).info["moves"] == 1 and driver._timers[0][2] == "env"
    driver._device_op("offload", 1, 7)
    ref, pending = only(driver, "offload")
    assert pending.data == (7,) and ray.get(ref).end >= ray.get(ref).start
    for tid in (1, 2, 3):
        driver.store.begin_turn(10 + tid, tid, 0, len(ids), 0)
        driver.store.add_generated(10 + tid, tid, out.token_ids, out.logprobs)
        driver.store.commit_turn(tid)
    driver._train(Train(0, (1,), 0, tuple(TrainSample(t, 0, (0,), False) for t in range(4))))
    weights_ref, pending = only(driver, "train")
    weights = ray.get(weights_ref)
    assert pending.data[:2] == (0, 0) and set(weights) == set(ray.get(pending.data[2])["weights"])
    assert driver._step_info["tids"] == (0, 1, 2, 3)
