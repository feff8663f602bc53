"""Faults in `rlsched run`: how fast a lost device rejoins, how fast a stall is named.

The bundled two-device layout (timeshare, device 1 is the only training device), shrunk to a
small batch so a trial is short. In each trial the training device's actor is killed the moment
the driver issues a command (by default the first `Train`; `--at Offload|Reload|SyncWeights`
for the other moments), on a local Ray cluster started once (loopback):

* rejoin (`run.worker_restarts` 1): kill -> loss seen (WorkerLost) -> replacement up
  (WorkerRecovered: a new actor, its engine asleep) -> the next training step done on it;
  beside it, a fresh worker actor started right after on the same cluster (to its engine
  asleep): the part of the rejoin that is process start-up, not the scheduler;
* stall (`run.worker_restarts` 0): kill -> `RunStalled` raised by the driver. Before issue 16
  the same run waited for `scheduler.env_timeout_s` (120 s in the bundled example) and ended
  in a traceback; that figure is the configured timeout, not re-measured here.

Prints one line per trial and a summary line:

    fault_bench: rejoin_s mean=... (n=...) stall_detect_s mean=... (n=...) ...
"""

from __future__ import annotations

import argparse
import copy
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")

import ray  # noqa: E402
import yaml  # noqa: E402

import rlsched.core.commands as commands  # noqa: E402
from rlsched.runtime.cluster import start_cluster, stop_cluster  # noqa: E402
from rlsched.runtime.config import RunConfig, load_run_config  # noqa: E402
from rlsched.runtime.driver import Driver  # noqa: E402
from rlsched.runtime.errors import RunStalled  # noqa: E402
from rlsched.runtime.recorder import Recorder  # noqa: E402

GRID_FILE = Path(__file__).resolve().parent.parent / "examples" / "run" / "grid.yaml"
GRID = yaml.safe_load(GRID_FILE.read_text(encoding="utf-8"))


def bench_config(restarts: int) -> RunConfig:
    """The GridWalk run (examples/run/grid.yaml) with a small batch (two devices, device 1
    trains)."""
    data = copy.deepcopy(GRID)
    data["run"].update(eval_episodes=0, worker_restarts=restarts)
    data["scheduler"].update(train_batch_size=16, group_size=4, max_turns=8, max_tokens=256)
    data["env"]["kwargs"] = {"size": 3, "max_steps": 6}
    return load_run_config(data)


def trial(restarts: int, at: str) -> dict[str, Any]:
    """One run with the training device killed at the first `at` command touching it."""
    cfg = bench_config(restarts)
    cluster = start_cluster(cfg)
    driver = Driver(
        cfg,
        cluster.workers,
        cluster.envpool,
        cluster.tokenizer,
        cluster.allowed,
        Recorder(cfg.num_devices),
        spawn=cluster.spawn,
    )
    kind = getattr(commands, at)
    killed: list[float] = []

    def on_command(command: Any) -> None:
        if not killed and isinstance(command, kind) and 1 in command.devices:
            ray.kill(driver.workers[1], no_restart=True)
            killed.append(driver.now())

    driver.on_command = on_command
    out: dict[str, Any] = {"restarts": restarts, "at": at}
    try:
        try:
            while not killed or (restarts and not driver.core.stats.devices_recovered):
                driver.run(1)
            if restarts:
                driver.run(1)  # a training step after the rejoin
        except RunStalled as exc:
            out["stall_detect_s"] = driver.now() - killed[0]
            out["line"] = str(exc)
        lost = [s for s in driver.recorder.spans if s.kind == "lost"]
        if lost:
            out["loss_seen_s"] = lost[0].start - killed[0]
            out["rejoin_s"] = lost[0].end - lost[0].start
            after = [end for end in driver.step_ends if end > lost[0].end]
            out["trained_after_s"] = after[0] - killed[0] if after else None
        out["accounting"] = driver.accounting()
        if restarts:  # the baseline: a fresh worker actor started now, to its engine asleep
            start = time.monotonic()
            spare = cluster.spawn(0)
            driver.spawned.append(spare)
            ray.get(spare.offload.remote(), timeout=600)
            out["actor_start_s"] = time.monotonic() - start
    finally:
        stop_cluster(cluster, driver.spawned)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument(
        "--at", default="Train", choices=["Train", "Offload", "Reload", "SyncWeights"]
    )
    args = parser.parse_args()
    ray.init(
        num_cpus=2,
        num_gpus=2,
        include_dashboard=False,
        logging_level="ERROR",
        _node_ip_address="127.0.0.1",
    )
    rejoin, stall, trained, seen, fresh = [], [], [], [], []
    try:
        for i in range(args.trials):
            for restarts in (1, 0):  # alternate: rejoin trial, stall trial
                start = time.monotonic()
                r = trial(restarts, args.at)
                wall = time.monotonic() - start
                shown = {k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()}
                print(f"trial {i} ({wall:.1f} s): {shown}", flush=True)
                if "rejoin_s" in r:
                    rejoin.append(r["rejoin_s"])
                    seen.append(r["loss_seen_s"])
                    fresh.append(r["actor_start_s"])
                    if r.get("trained_after_s") is not None:
                        trained.append(r["trained_after_s"])
                if "stall_detect_s" in r:
                    stall.append(r["stall_detect_s"])
    finally:
        ray.shutdown()

    def summary(xs: list[float]) -> str:
        if not xs:
            return "none"
        return f"mean={statistics.mean(xs):.2f} min={min(xs):.2f} max={max(xs):.2f} (n={len(xs)})"

    print(
        f"fault_bench: at={args.at} loss_seen_s {summary(seen)}; rejoin_s {summary(rejoin)}; "
        f"fresh actor_start_s {summary(fresh)}; "
        f"kill_to_trained_s {summary(trained)}; stall_detect_s {summary(stall)} "
        f"(before: {GRID['scheduler']['env_timeout_s']:.0f} s env_timeout_s, then a traceback)"
    )


if __name__ == "__main__":
    main()
