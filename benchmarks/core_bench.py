"""Decision throughput of the scheduler core: events per second for one training step.

Setup (the seed's experiment shape): 160 devices in timeshare mode, 128 of them train;
batch 512 trajectories (64 GRPO groups of 8), every trajectory runs up to 100 turns
(64K-token budget), async ratio 1, shrink when half the batch is complete. A minimal
discrete-event shell plays ranks, environments and trainer with seeded random latencies;
only the time spent inside `Scheduler.handle` is measured, as CPU time (`time.process_time`;
`--wall` for `time.perf_counter`): on a shared machine wall time mostly measures the neighbours.

Memory (`--memory on`, the default where the core has it): the shell reports a rank's KV
capacity on `Started.kv_tokens` and the rank's free KV on every answer (`kv_free`), as the
simulator does (design/rlsched_core.md 0.7.0): the capacity less what the requests still on the
rank hold (their context, kept tokens and the tokens generated so far). The core then routes by
memory (a turn goes back to the rank holding its prefix, else to the roomiest rank;
design/rlsched_routing.md 0.6.0). `--memory off` reports nothing (the core places least-loaded,
as before 0.7.0); `--memory both` runs the two. Prints one results line per mode:

    core_bench: memory=on events=... events/s median=... (runs: ...) ...

`--replay` times the core alone: each run's events are recorded as the shell feeds them, then
fed again to a fresh `Scheduler`, back to back, under one clock reading (the same decisions: the
core is deterministic). Without it each `handle` is timed inside the shell's loop, so the shell's
own work between events cools the caches and branch predictors the core runs on, and two
clock reads per event are added to both sides. The shell keeps each rank's held KV as two
running sums (a request holds its context plus its tokens so far, growing linearly until it
ends), so an answer's `kv_free` is O(1); earlier versions summed the rank's requests (up to
64) for every answer (benchmarks/RESULTS.md, "The shell's own bookkeeping made O(1)").

`--vs REV` checks REV out into a temporary git worktree and runs this same shell against its
core (each run a new process importing that tree's rlsched), alternating with this tree for
`--pairs` pairs, then prints a Markdown table with the ratios. A core without memory events runs
without memory on both sides of its column.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
KV_TOKENS = 262_144
"""A rank's KV capacity for the memory runs: 256K tokens, within the 200-470K a TP8 rank of the
235B model keeps (issue 15), about 8 contexts at the batch's late turns (~30K tokens), so
memory binds once the shrink has halved the ranks and never at the start."""

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


def run_step(
    seed: int, memory: bool, clock, record: list | None = None
) -> tuple[int, float, dict[str, int]]:
    """Simulate until the first training step finished and the pool expanded again; every event
    handled is appended to `record` when given.

    Returns (events handled, seconds inside handle by `clock`, a few counters)."""
    import heapq
    import random

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

    rng = random.Random(seed)
    cfg = RlschedConfig.model_validate(CONFIG)
    sched = Scheduler(cfg)
    # (time, seq, rid or None, event factory taking the delivery time)
    queue: list[tuple[float, int, int | None, object]] = []
    seq = 0
    # rid -> [start, planned tokens, end, rank, KV held at start, growth rate, offset]: the
    # request holds `base + rate * now - offset` KV tokens until it ends
    live: dict[int, list] = {}
    # rank -> [sum of base - offset, sum of rate]: what its requests hold is `a + b * now`,
    # kept as requests come and go, so an answer's `kv_free` costs O(1), not O(requests)
    held: dict[int, list[float]] = {}
    prompts_left = cfg.groups_per_batch  # exactly one batch of prompts: 512 trajectories
    handled = 0
    spent = 0.0

    def later(at: float, make: object, rid: int | None = None) -> None:
        nonlocal seq
        seq += 1
        heapq.heappush(queue, (at, seq, rid, make))

    def hold(rank: int, entry: list, sign: int) -> None:
        """Add (`sign` 1) or remove (-1) what `entry` holds to its rank's sums."""
        sums = held.setdefault(rank, [0.0, 0.0])
        sums[0] += sign * (entry[4] - entry[6])
        sums[1] += sign * entry[5]

    def kv_free(rank: int, now: float) -> int:
        """The rank's capacity less what its requests hold now (they grow as they decode)."""
        a, b = held.get(rank, (0.0, 0.0))
        return max(0, KV_TOKENS - int(a + b * now))

    def execute(now: float, commands: list) -> None:
        nonlocal prompts_left
        for c in commands:
            if isinstance(c, Dispatch):
                tokens = rng.randint(20, 400)
                end = now + 0.05 + c.context_tokens * 2e-6 + tokens * 0.02
                kept = c.context_tokens + c.resume_tokens
                planned = min(tokens, c.max_new_tokens)
                rate = planned / max(end - now, 1e-9)
                live[c.rid] = entry = [now, planned, end, c.rank, kept, rate, rate * now]
                hold(c.rank, entry, 1)
                later(end, RequestFinished, c.rid)
            elif isinstance(c, Abort):
                for rid in c.rids:
                    entry = live[rid]
                    start, tokens, end = entry[0], entry[1], entry[2]
                    done = int(tokens * min(1.0, (now - start) / max(end - start, 1e-9)))
                    hold(entry[3], entry, -1)
                    entry[1], entry[2], entry[5], entry[6] = done, now + 0.1, 0.0, -done
                    hold(entry[3], entry, 1)
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

    started = Started(0.0, KV_TOKENS) if memory else Started(0.0)
    if record is not None:
        handle = sched.handle
        sched.handle = lambda event: record.append(event) or handle(event)
    t0 = clock()
    commands = sched.handle(started)
    spent += clock() - t0
    handled += 1
    execute(0.0, commands)
    while queue:
        at, _, rid, make = heapq.heappop(queue)
        if rid is not None:
            entry = live.get(rid)
            if entry is None or entry[2] != at:
                continue  # a finish superseded by an abort
            del live[rid]
            rank = entry[3]
            hold(rank, entry, -1)
            if memory:
                event = make(at, rid, entry[1], kv_free=kv_free(rank, at))
            else:
                event = make(at, rid, entry[1])
        else:
            event = make(at)
        t0 = clock()
        commands = sched.handle(event)
        spent += clock() - t0
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


def has_memory() -> bool:
    """True when the imported core takes memory reports (design/rlsched_core.md 0.7.0)."""
    from rlsched.core.events import Started

    return "kv_tokens" in Started.__dataclass_fields__


def replay(events: list, clock) -> float:
    """Seconds by `clock` a fresh Scheduler takes to handle `events` back to back."""
    from rlsched.config import RlschedConfig
    from rlsched.core.machine import Scheduler

    handle = Scheduler(RlschedConfig.model_validate(CONFIG)).handle
    t0 = clock()
    for event in events:
        handle(event)
    return clock() - t0


def bench(runs: int, seed: int, memory: bool, wall: bool, replayed: bool = False) -> dict:
    """Run the step `runs` times (seeds seed, seed+1, ...); the rates and counters. With
    `replayed`, each run's events are timed again through a fresh core, without the shell."""
    clock = time.perf_counter if wall else time.process_time
    rates: list[float] = []
    events = 0
    counters: dict[str, int] = {}
    for i in range(runs):
        record: list | None = [] if replayed else None
        events, spent, counters = run_step(seed + i, memory, clock, record)
        if record is not None:
            spent = replay(record, clock)
        rates.append(events / spent)
    return {"events": events, "rates": rates, "counters": counters, "memory": memory}


def line(result: dict) -> str:
    """The one results line of a `bench` result."""
    rates = result["rates"]
    median = statistics.median(rates)
    extra = " ".join(f"{k}={v}" for k, v in result["counters"].items())
    runs = ", ".join(f"{r:,.0f}" for r in rates)
    memory = f"on kv_tokens={KV_TOKENS}" if result["memory"] else "off"
    return (
        f"core_bench: memory={memory} events={result['events']} events/s median={median:,.0f} "
        f"(runs: {runs}) us/event={1e6 / median:.1f} devices=160 batch=512 max_turns=100 {extra}"
    )


def modes(choice: str) -> list[bool]:
    """The memory settings `--memory` asks for, those the imported core supports."""
    wanted = {"on": [True], "off": [False], "both": [True, False]}[choice]
    if not has_memory():
        wanted = [False]
    return wanted


def child(tree: Path, args: argparse.Namespace, memory: str, seed: int) -> list[dict]:
    """Run this file in a new process against `tree`'s rlsched; its results."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--json", "--tree", str(tree)]
    cmd += ["--runs", str(args.runs), "--seed", str(seed), "--memory", memory]
    if args.wall:
        cmd.append("--wall")
    if args.replay:
        cmd.append("--replay")
    env = dict(os.environ, PYTHONPATH=str(tree))
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{tree}: core_bench failed:\n{proc.stdout}{proc.stderr}")
    return [json.loads(text) for text in proc.stdout.splitlines() if text.startswith("{")]


def worktree(rev: str, into: Path) -> tuple[Path, str]:
    """REV checked out (detached) under `into`; returns the path and the full commit hash."""
    commit = subprocess.run(
        ["git", "rev-parse", "--verify", f"{rev}^{{commit}}"],
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    path = into / f"core-{commit[:10]}"
    subprocess.run(
        ["git", "worktree", "add", "--detach", "-q", str(path), commit], cwd=REPO, check=True
    )
    return path, commit


def versus(args: argparse.Namespace) -> None:
    """Alternate this tree and REV, pair by pair; print the Markdown table."""
    clock = ("wall" if args.wall else "CPU") + (", replayed" if args.replay else "")
    load = os.getloadavg()
    print(
        f"core_bench --vs {args.vs}: {args.pairs} alternating pairs, each the median of "
        f"{args.runs} runs (seeds {args.seed}..{args.seed + args.runs - 1}), {clock} time; "
        f"{os.cpu_count()} cores, Python {platform.python_version()}; "
        f"load average at start {load[0]:.1f}, {load[1]:.1f}, {load[2]:.1f}"
    )
    rows = []
    with tempfile.TemporaryDirectory(prefix="core-bench-") as tmp:
        other, commit = worktree(args.vs, Path(tmp))
        try:
            for _ in range(args.pairs):
                base = child(other, args, "both", args.seed)
                mine = child(REPO, args, "both", args.seed)
                rows.append((base, mine))
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(other)], cwd=REPO)
    end = os.getloadavg()
    print(f"load average at end {end[0]:.1f}, {end[1]:.1f}, {end[2]:.1f}\n")

    def median(results: list[dict], memory: bool) -> float | None:
        found = [r for r in results if r["memory"] is memory]
        return statistics.median(found[0]["rates"]) if found else None

    short = commit[:7]
    print(
        f"| pair | {short} no memory | {short} memory | this tree no memory | this tree memory "
        f"| ratio no memory | ratio memory (vs {short}'s best) |"
    )
    print("|---|---|---|---|---|---|---|")
    ratios: list[tuple[float, float]] = []
    for i, (base, mine) in enumerate(rows, 1):
        b_off, b_on = median(base, False), median(base, True)
        m_off, m_on = median(mine, False), median(mine, True)
        b_best = b_on if b_on is not None else b_off
        r_off, r_on = m_off / b_off, m_on / b_best
        ratios.append((r_off, r_on))
        b_on_text = f"{b_on:,.0f}" if b_on is not None else "(none)"
        print(
            f"| {i} | {b_off:,.0f} | {b_on_text} | {m_off:,.0f} | {m_on:,.0f} "
            f"| {r_off:.2f} | {r_on:.2f} |"
        )
    off = statistics.median(r for r, _ in ratios)
    on = statistics.median(r for _, r in ratios)
    print(f"\nmedian ratio: no memory {off:.2f}, memory {on:.2f}")
    for label, results in (("this tree", rows[-1][1]), (short, rows[-1][0])):
        for result in results:
            print(f"{label}: {line(result)}")


def main() -> None:
    """Run the step `--runs` times per memory mode and print the median decision rates."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--memory", choices=("on", "off", "both"), default="both")
    parser.add_argument("--wall", action="store_true", help="wall time instead of CPU time")
    parser.add_argument("--replay", action="store_true", help="time the core without the shell")
    parser.add_argument("--vs", metavar="REV", help="alternate with REV (a git revision)")
    parser.add_argument("--pairs", type=int, default=3, help="alternating pairs with --vs")
    parser.add_argument("--tree", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.vs:
        versus(args)
        return
    tree = args.tree.resolve() if args.tree else REPO
    sys.path.insert(0, str(tree))
    import rlsched

    if not Path(rlsched.__file__).resolve().is_relative_to(tree):
        raise SystemExit(f"core_bench: imported {rlsched.__file__}, not {tree}'s rlsched")
    for memory in modes(args.memory):
        result = bench(args.runs, args.seed, memory, args.wall, args.replay)
        print(json.dumps(result) if args.json else line(result), flush=True)


if __name__ == "__main__":
    main()
