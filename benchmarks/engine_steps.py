"""A run's engine steps beside its simulation's: where a sim-to-real error comes from.

    python benchmarks/engine_steps.py CONFIG MODE PROFILE [--steps 8] [--out DIR]

Runs and simulates MODE of CONFIG for `--steps` steps through `rlsched bench --profile`'s own
`bench_mode` (a local Ray cluster, PROFILE's costs), with every device worker's engine wrapped
in calibrate's `StepProbe` (the run's own code otherwise) and each simulated engine step
recorded. It prints, for the run and the simulation:

- the step time, and per serving device its engine steps: how many, their mean rows, the share
  with a joining row and the rows joining such a step, the share run as two passes;
- for the run, PROFILE's step fit (calibrate's `fit_layout` terms) against each real step's
  seconds, by batch size: where the fit is right on average but wrong by size, a simulation
  whose batches differ in size from the run's goes wrong with it.

This is how the lockstep of the simulated ranks and the missing cost of answers were found
(benchmarks/RESULTS.md, "Why the runs were slower than predicted"). Two patch points, both
for recording only: the cluster's worker class (`ProbeWorker` instead of `DeviceWorker`, as
`rlsched calibrate` builds them) and the simulated rank's `step_seconds` (wrapped to log its
arguments). Nothing is fitted on the run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

# steps longer than this while requests stayed active were cut by a shrink, a sync or training
# in between, not spent stepping; the fit is compared on the others
PHASE_GAP_S = 0.03


def structure(steps: list[tuple[int, int, int]]) -> str:
    """One line on engine steps given as (rows, joins, passes)."""
    n = len(steps)
    joined = [s for s in steps if s[1] > 0]
    rows = statistics.fmean(s[0] for s in steps)
    share = len(joined) / n
    joins = statistics.fmean(s[1] for s in joined) if joined else 0.0
    split = sum(1 for s in steps if s[2] > 1) / n
    return (
        f"{n} steps, {rows:.1f} rows; {share:.0%} with joiners ({joins:.1f} each); "
        f"{split:.0%} in two passes"
    )


def fit_by_rows(samples: list[list[float]], terms: list[float]) -> str:
    """Real seconds over the fit's, in all and by batch size (quarters of the largest batch)."""
    kept = [s for s in samples if s[4] <= PHASE_GAP_S]
    top = max(s[0] for s in kept)
    buckets: dict[int, list[tuple[float, float]]] = {}
    for rows, joins, padded, widest, seconds, passes, answers in kept:
        x = (1.0, rows, padded, rows * widest, joins, passes - 1, answers)
        fit = sum(t * v for t, v in zip(terms, x, strict=False))
        buckets.setdefault(min(int(4 * rows / (top + 1)), 3), []).append((seconds, fit))
    total = [p for b in buckets.values() for p in b]
    ratio = sum(s for s, _ in total) / sum(f for _, f in total)
    parts = [
        f"rows {int(k * (top + 1) / 4)}+: {sum(s for s, _ in b) / sum(f for _, f in b):.2f}"
        f" ({len(b)})"
        for k, b in sorted(buckets.items())
    ]
    return f"real / fit {ratio:.2f}; by batch size " + ", ".join(parts)


def with_workers(worker: type, run: Callable[[], Any]) -> tuple[Any, list[Any]]:
    """`run()` with the cluster's device workers built as `worker` (a `DeviceWorker` subclass
    with a `take()` method); each worker's `take()` answer is collected as the cluster stops.
    Returns what `run` returned and the answers, in device order."""
    import ray

    import rlsched.runtime.cluster as cluster

    taken: list[Any] = []
    stop, plain = cluster.stop_cluster, cluster.DeviceWorker

    def take_then_stop(c: Any, extra: Any = ()) -> None:
        taken.extend(ray.get([w.take.remote() for w in c.workers]))
        stop(c, extra)

    cluster.DeviceWorker, cluster.stop_cluster = worker, take_then_stop
    try:
        return run(), taken
    finally:
        cluster.DeviceWorker, cluster.stop_cluster = plain, stop


def recorded_bench(
    cfg: Any, mode: str, steps: int, profile: dict[str, Any], out: Path
) -> tuple[dict[str, Any], list[dict[str, Any]], list[tuple[int, int, int]]]:
    """`rlsched bench --profile`'s run and simulation of `mode` (`bench_mode`), with each
    device's engine steps and each simulated step (rows, joins, passes) recorded."""
    import rlsched.sim.steprank as steprank
    from rlsched.runtime.bench import bench_mode
    from rlsched.runtime.calibrate import ProbeWorker

    logged: list[tuple[int, int, int]] = []
    seconds = steprank.StepRank.step_seconds

    def logging(self: Any, rows: int, padded: int, widest: int, joins: int, *rest: int) -> float:
        logged.append((rows, joins, rest[0] if rest else 1))
        return seconds(self, rows, padded, widest, joins, *rest)

    # the two patch points (see the docstring): record, change nothing
    steprank.StepRank.step_seconds = logging
    try:
        result, taken = with_workers(
            ProbeWorker, lambda: bench_mode(cfg, mode, steps, out, True, profile)
        )
    finally:
        steprank.StepRank.step_seconds = seconds
    return result, taken, logged


def main() -> None:
    from rlsched.runtime.bench import load_profile
    from rlsched.runtime.calibrate import STEP_TERMS, step_samples
    from rlsched.runtime.config import load_run_config

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("config", type=Path)
    parser.add_argument("mode", choices=("colocate", "disaggregated", "timeshare"))
    parser.add_argument("profile", type=Path)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--out", type=Path, help="Keep the run's files here.")
    args = parser.parse_args()
    cfg = load_run_config(args.config)
    profile = load_profile(args.profile)
    out = args.out or Path(tempfile.mkdtemp(prefix="engine-steps-"))
    out.mkdir(parents=True, exist_ok=True)
    result, devices, sim_steps = recorded_bench(cfg, args.mode, args.steps, profile, out)
    real, simulated = result["real"]["step_time_s"], result["sim"]["step_time_s"]
    step = profile["layout"]["step"]
    terms = [step.get(name, 0.0) for name in STEP_TERMS]
    print(f"{args.mode}: step time real {real:.3f} s, simulated {simulated:.3f} s")
    for device, taken in enumerate(devices):
        recorded = taken["steps"]
        if not recorded:
            continue
        plain = [(s[2], s[3], s[7]) for s in recorded]
        print(f"  run, device {device}: {structure(plain)}")
        print(f"    {fit_by_rows(step_samples(recorded), terms)}")
    print(f"  simulation, every rank: {structure(sim_steps)}")
    (out / "engine_steps.json").write_text(
        json.dumps({"real": real, "simulated": simulated, "devices": devices}), encoding="utf-8"
    )


if __name__ == "__main__":
    main()
