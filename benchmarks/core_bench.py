"""Decision throughput of the scheduler core: events per second for one training step.

Setup (the seed's experiment shape): 160 devices in timeshare mode, 128 of them train;
batch 512 trajectories (64 GRPO groups of 8), every trajectory runs up to 100 turns
(64K-token budget), async ratio 1, shrink when half the batch is complete. A minimal
discrete-event shell plays ranks, environments and trainer with seeded random latencies;
only the time spent inside `Scheduler.handle` is measured. Prints one results line:

    core_bench: events=... decisions/s median=... (runs: ...) ...
"""

from __future__ import annotations

import argparse
import heapq
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout

from rlsched.config import RlschedConfig
from rlsched.core.commands import (
    Abort,
    Dispatch,
    LoadPrompts,
    Offload,
    Reload,
    StartEnvStep,
    SyncWeights,
    Train,
)
from rlsched.core.events import (
    EnvStepDone,
    OffloadDone,
    PromptsLoaded,
    ReloadDone,
    RequestAborted,
    RequestFinished,
    Started,
    TrainingDone,
    WeightsSynced,
)
from rlsched.core.machine import Scheduler
from rlsched.pool import DeviceMode

CONFIG = {
    "devices": {"count": 160, "train": 128},
    "scheduler": {
        "mode": "timeshare",
        "train_batch_size": 512,
        "group_size": 8,
        "staleness": 1,
        "shrink": {"fraction": 0.5},
        "max_turns": 100,
        "max_tokens": 65536,
        "env_timeout_s": 600.0,
        "migration": "reissue",
        "max_inflight_per_rank": 64,
    },
}


def run_step(seed: int) -> tuple[int, float, dict[str, int]]:
    """Simulate until the first training step finished and the pool expanded again.

    Returns (events handled, seconds inside handle, a few counters)."""
    rng = random.Random(seed)
    cfg = RlschedConfig.model_validate(CONFIG)
    sched = Scheduler(cfg)
    # (time, seq, rid or None, event factory taking the delivery time)
    queue: list[tuple[float, int, int | None, object]] = []
    seq = 0
    live: dict[int, tuple[float, int, float]] = {}  # rid -> (start, planned tokens, end)
    prompts_left = cfg.groups_per_batch  # exactly one batch of prompts: 512 trajectories
    handled = 0
    spent = 0.0

    def later(at: float, make: object, rid: int | None = None) -> None:
        nonlocal seq
        seq += 1
        heapq.heappush(queue, (at, seq, rid, make))

    def execute(now: float, commands: list) -> None:
        nonlocal prompts_left
        for c in commands:
            if isinstance(c, Dispatch):
                tokens = rng.randint(20, 400)
                end = now + 0.05 + c.context_tokens * 2e-6 + tokens * 0.02
                live[c.rid] = (now, min(tokens, c.max_new_tokens), end)
                later(end, RequestFinished, c.rid)
            elif isinstance(c, Abort):
                for rid in c.rids:
                    start, tokens, end = live[rid]
                    done = int(tokens * min(1.0, (now - start) / max(end - start, 1e-9)))
                    live[rid] = (start, done, now + 0.1)
                    later(now + 0.1, RequestAborted, rid)
            elif isinstance(c, StartEnvStep):
                obs = rng.randint(10, 200)
                make = lambda t, c=c, obs=obs: EnvStepDone(t, c.tid, c.turn, obs, False)
                later(now + rng.uniform(0.5, 5.0), make)
            elif isinstance(c, LoadPrompts):
                count = min(c.count, prompts_left)
                prompts_left -= count
                lens = tuple(rng.randint(500, 4000) for _ in range(count))
                later(now, lambda t, c=c, lens=lens: PromptsLoaded(t, c.load_id, lens))
            elif isinstance(c, Offload):
                for d in c.devices:
                    later(now + 3.0, lambda t, d=d, op=c.op_id: OffloadDone(t, d, op))
            elif isinstance(c, Reload):
                for d in c.devices:
                    later(now + 3.0, lambda t, d=d, op=c.op_id: ReloadDone(t, d, op))
            elif isinstance(c, SyncWeights):
                for d in c.devices:
                    later(now + 5.0, lambda t, d=d, v=c.version: WeightsSynced(t, d, v))
            elif isinstance(c, Train):
                later(now + 300.0, lambda t, c=c: TrainingDone(t, c.step, c.version + 1))

    execute(0.0, sched.handle(Started(0.0)))
    handled += 1
    while queue:
        at, _, rid, make = heapq.heappop(queue)
        if rid is not None:
            entry = live.get(rid)
            if entry is None or entry[2] != at:
                continue  # a finish superseded by an abort
            del live[rid]
            event = make(at, rid, entry[1])
        else:
            event = make(at)
        t0 = time.perf_counter()
        commands = sched.handle(event)
        spent += time.perf_counter() - t0
        handled += 1
        execute(at, commands)
        if sched.stats.train_steps >= 1 and not sched.pool.count(DeviceMode.EXPANDING):
            break  # trained once and every device is back in rollout
    s = sched.stats
    counters = {
        "turns": s.finished,
        "trajectories": s.completed,
        "migrated": s.migrated,
        "train_steps": s.train_steps,
        "session_timeouts": s.env_session_timeouts,
        "sim_seconds": int(sched.now),
    }
    return handled, spent, counters


def main() -> None:
    """Run the step `--runs` times and print the median decision rate."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rates: list[float] = []
    events = 0
    counters: dict[str, int] = {}
    for i in range(args.runs):
        events, spent, counters = run_step(args.seed + i)
        rates.append(events / spent)
    median = statistics.median(rates)
    extra = " ".join(f"{k}={v}" for k, v in counters.items())
    runs = ", ".join(f"{r:,.0f}" for r in rates)
    print(
        f"core_bench: events={events} events/s median={median:,.0f} "
        f"(runs: {runs}) us/event={1e6 / median:.1f} devices=160 batch=512 max_turns=100 {extra}"
    )


if __name__ == "__main__":
    main()
