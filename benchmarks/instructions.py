"""Instructions per event, counted by valgrind's callgrind: a figure the machine's load cannot move.

CPU time on this shared 2-core machine varies by 30% between identical runs (benchmarks/RESULTS.md,
"A simulated event's cost"), so the speed bars of issue 15 are also measured as instructions:
the run is executed twice under callgrind, to event N1 and to event N2, and the difference of the
two totals over N2 - N1 is the cost of those events alone (start-up, imports and config loading
cancel out). The children run with PYTHONHASHSEED=0, so the orders of string-keyed sets repeat
from run to run (b97a5c2's core: 56,360 and 56,361 instructions an event, random and fixed seed).

    python benchmarks/instructions.py sim ROOT [N1 N2]    # rlsched sim, paper_160gpu.yaml, timeshare
    python benchmarks/instructions.py core ROOT [N1 N2]   # Scheduler.handle on core_bench's step

`sim`: ROOT's simulator runs examples/paper_160gpu.yaml's timeshare policy (ROOT's own config and
code) and stops at event N (default 10,000 and 30,000) through the simulation's observer.
`core`: core_bench.py's step (seed 1; memory reported where ROOT's core takes it) is recorded
once at full speed, then its events are replayed into a fresh `Scheduler` of ROOT, so only the
core's own work is counted (default events 10,000 to 40,000). Each measurement takes 2-5
minutes (callgrind runs Python about 50 times slower).
"""

from __future__ import annotations

import os
import pickle
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from sim_event_cost import import_tree, simulation  # noqa: E402


class Enough(Exception):
    """Raised by the observer at the N-th event."""


def run_sim(root: str, n: int) -> None:
    """Simulate the paper config's timeshare policy until `n` events were fed to the core."""
    sim = simulation(root, "timeshare")
    seen = 0

    def observe(_event: object, _commands: object) -> None:
        nonlocal seen
        seen += 1
        if seen >= n:
            raise Enough

    sim.observer = observe
    try:
        sim.run(1000)
    except Enough:
        return
    raise SystemExit(f"the run ended after {seen} events, before {n}")


def record_core(root: str, path: str) -> int:
    """Run core_bench's step against ROOT's core and pickle every event it handled."""
    import_tree(root)
    import core_bench

    from rlsched.core.machine import Scheduler

    events: list[object] = []
    handle = Scheduler.handle

    def recording(self: Scheduler, event: object) -> object:
        events.append(event)
        return handle(self, event)

    Scheduler.handle = recording  # type: ignore[method-assign]
    core_bench.run_step(1, core_bench.has_memory(), time.process_time)
    with open(path, "wb") as out:
        pickle.dump(events, out)
    return len(events)


def replay_core(root: str, path: str, n: int) -> None:
    """Feed the first `n` recorded events to a fresh Scheduler of ROOT."""
    import_tree(root)
    import core_bench

    from rlsched.config import RlschedConfig
    from rlsched.core.machine import Scheduler

    with open(path, "rb") as source:
        events = pickle.load(source)[:n]  # noqa: S301 - written by record_core just before
    if len(events) < n:
        raise SystemExit(f"only {len(events)} events recorded, not {n}")
    scheduler = Scheduler(RlschedConfig.model_validate(core_bench.CONFIG))
    for event in events:
        scheduler.handle(event)


def instructions(args: list[str]) -> int:
    """Instructions callgrind counts for `python this-file ARGS`."""
    with tempfile.TemporaryDirectory() as tmp:
        done = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                f"--callgrind-out-file={tmp}/out",
                sys.executable,
                __file__,
                *args,
            ],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": "0"},  # the same set orders in every run
        )
    found = re.search(r"Collected : (\d+)", done.stderr)
    if found is None:
        raise SystemExit(f"callgrind reported no total:\n{done.stderr[-2000:]}")
    return int(found.group(1))


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1].startswith("_"):  # a child of the measurement
        kind, root, *rest = sys.argv[1:]
        if kind == "_record":
            print(record_core(root, rest[0]), "events recorded")
        elif kind == "_sim":
            run_sim(root, int(rest[0]))
        else:
            replay_core(root, rest[0], int(rest[1]))
        return
    if len(sys.argv) not in (3, 5) or sys.argv[1] not in ("sim", "core"):
        raise SystemExit(__doc__)
    kind, root = sys.argv[1], os.path.abspath(sys.argv[2])
    first, last = (10_000, 30_000) if kind == "sim" else (10_000, 40_000)
    if len(sys.argv) == 5:
        first, last = int(sys.argv[3]), int(sys.argv[4])
    if kind == "sim":
        counts = [instructions(["_sim", root, str(n)]) for n in (first, last)]
    else:
        with tempfile.TemporaryDirectory() as tmp:
            path = f"{tmp}/events.pkl"
            recorder = [sys.executable, __file__, "_record", root, path]
            subprocess.run(recorder, check=True)
            counts = [instructions(["_core", root, path, str(n)]) for n in (first, last)]
    per_event = (counts[1] - counts[0]) / (last - first)
    print(f"{kind} {root}: {per_event:,.0f} instructions an event (events {first:,}-{last:,})")


if __name__ == "__main__":
    main()
