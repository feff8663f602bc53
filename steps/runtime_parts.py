"""Shared by the runtime's per-step checks: a tiny run config and a loopback Ray cluster."""

import copy
import time
from typing import Any

from rlsched.envs.recall import Recall
from rlsched.runtime.config import EXAMPLE, RunConfig, load_run_config

TINY: dict[str, Any] = {
    "devices": {"count": 2, "train": 1},
    "scheduler": {
        "mode": "timeshare",
        "train_batch_size": 16,
        "group_size": 4,
        "staleness": 1,
        "shrink": {"fraction": 0.5},
        "max_turns": 8,
        "max_tokens": 256,
        "env_timeout_s": 60.0,
        "migration": "resume",
        "max_inflight_per_rank": 32,
    },
    "model": {"arch": "qwen2", "hidden_size": 32, "layers": 1, "init_std": 0.3, "seed": 0},
    "env": {"name": "grid", "kwargs": {"size": 3, "max_steps": 6}, "step_timeout_s": 10.0},
    "train": {"lr": 0.003, "clip": 0.2, "updates_per_step": 2},
    "rollout": {"temperature": 1.0, "max_turn_tokens": 1},
    "run": {"steps": 2, "seed": 0, "eval_episodes": 0},
}


def tiny(**patch: dict[str, Any]) -> RunConfig:
    """The tiny config with sections patched (merged one level deep)."""
    data = copy.deepcopy(TINY)
    for key, value in patch.items():
        data[key] = {**data.get(key, {}), **value}
    return load_run_config(data)


def start_ray(num_gpus: int = 4) -> None:
    """The runtime's own `connect`: the cluster at `RAY_ADDRESS` (the test suite's one
    cluster, which declares 4 logical GPUs), else a local one on loopback declaring `num_gpus`;
    `ray.shutdown()` leaves the one or stops the other."""
    from rlsched.runtime.cluster import connect

    connect(None, num_gpus)


assert EXAMPLE["scheduler"]["mode"] == "timeshare"


def make_driver(
    cfg: RunConfig,
    env_kwargs: dict[str, Any] | None = None,
    spawn: bool = False,
    local_env: bool = False,
) -> Any:
    """A Driver over fresh worker actors (one per device) and an environment pool: an actor,
    or with `local_env` a plain pool the driver steps itself; with `spawn`, lost workers are
    replaced by new actors for the same device."""
    import ray

    from rlsched.envs.base import StepLatency, resolve_env
    from rlsched.model import action_token_ids, load_tokenizer
    from rlsched.runtime.driver import Driver
    from rlsched.runtime.recorder import Recorder
    from rlsched.runtime.workers import DeviceWorker, EnvPool

    env_cls = resolve_env(cfg.env.name)
    tok = load_tokenizer(cfg.model, env_cls.words)
    allowed = action_token_ids(tok, env_cls.actions)
    cls = ray.remote(DeviceWorker).options(num_gpus=1, num_cpus=0, max_concurrency=40)

    def new_worker(device: int) -> Any:
        return cls.remote(device, cfg.model, tok.get_vocab_size(), cfg.train, 1.0, allowed, 0, 32)

    workers = [new_worker(d) for d in range(cfg.num_devices)]
    kwargs = cfg.env.kwargs if env_kwargs is None else env_kwargs
    pool_args = (cfg.env.name, kwargs, StepLatency("fixed", 0.0), 0)
    if local_env:
        envpool = EnvPool(*pool_args)
    else:
        envpool = ray.remote(EnvPool).options(num_cpus=0, max_concurrency=64).remote(*pool_args)
    recorder = Recorder(cfg.num_devices)
    return Driver(
        cfg, workers, envpool, tok, allowed, recorder, spawn=new_worker if spawn else None
    )


def wait_dead(actor: Any, attempts: int = 300) -> None:
    """Return once `actor` no longer answers a ping (at most `attempts` pings, 0.1 s apart:
    bounded by count, not by a clock)."""
    import ray

    for _ in range(attempts):
        try:
            ray.get(actor.ping.remote(), timeout=10.0)
        except ray.exceptions.RayActorError:
            return
        time.sleep(0.1)
    raise AssertionError(f"the killed actor still answers after {attempts} pings")


def kill_on(driver: Any, kind: type, device: int | None = None) -> list[Any]:
    """Kill a worker the moment the driver is about to execute the first command of type
    `kind` (touching `device`, if given): the device's actor for Offload, Reload and
    SyncWeights, the step's first device for Train. The driver goes on only once the actor is
    dead, so the command always reaches a dead actor (`ray.kill` alone returns before the
    actor dies, and a fast command such as an offload could still be answered). Returns the
    list the killed command is appended to (empty until it happened)."""
    import ray

    killed: list[Any] = []

    def on_command(command: Any) -> None:
        if killed or not isinstance(command, kind):
            return
        devices = getattr(command, "devices", ())
        if device is not None and device not in devices:
            return
        target = device if device is not None else devices[0]
        if target in driver.lost:
            return
        actor = driver.workers[target]
        ray.kill(actor, no_restart=True)
        wait_dead(actor)
        killed.append(command)

    driver.on_command = on_command
    return killed


class KwargsEnv(Recall):
    """A Recall whose constructor takes any keyword, as a user environment with **kwargs may
    (`runtime_parts:KwargsEnv`); it refuses `bad` and, without a message, `empty`."""

    def __init__(self, **kwargs: Any) -> None:
        if "bad" in kwargs:
            raise ValueError("bad is not a setting of this environment\nsecond line")
        if "empty" in kwargs:
            raise ValueError()
        super().__init__()


class SilentEnv:
    """A user environment that says nothing about its steps (`runtime_parts:SilentEnv`): a
    Recall inside, but no `quick_steps`, so the runtime takes it to block."""

    words = Recall.words
    actions = Recall.actions

    def __init__(self) -> None:
        self._inner = Recall()

    def reset(self, seed: int | None = None) -> Any:
        return self._inner.reset(seed=seed)

    def step(self, action: str) -> Any:
        return self._inner.step(action)
