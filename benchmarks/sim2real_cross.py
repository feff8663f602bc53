"""Predict the runs of `rlsched bench --profile` sessions from another session's profile.

    python benchmarks/sim2real_cross.py CONFIG --session PROFILE BENCHDIR [--session ...]

Each session is a calibration profile and the `--out` directory of the bench run made with it
(bench.json, repeat-K/). For every session's runs and every profile, this simulates each mode and
repeat as `rlsched bench --profile` does (the profile's costs at the run's operating point, the
run's turns with the config's own environment latency) and prints the signed error of the mean
step time against the real runs. Nothing is fitted on the runs predicted; the diagonal is what
the bench itself reported.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rlsched.runtime.bench import (
    load_profile,
    mode_config,
    operating_point,
    sim_config,
    sim_figures,
)
from rlsched.runtime.calibrate import profile_costs
from rlsched.runtime.config import load_run_config
from rlsched.sim.params import load_sim_config
from rlsched.sim.runner import run_policy

MODES = ("colocate", "disaggregated", "timeshare")


def predict(cfg, profile: dict, rundir: Path) -> dict[str, tuple[float, float]]:
    """Per mode: the mean simulated and the mean real step time over the session's repeats."""
    report = json.loads((rundir / "bench.json").read_text(encoding="utf-8"))
    out = {}
    for mode in MODES:
        runs = [r for r in report["results"] if r["mode"] == mode]
        mcfg = mode_config(cfg, mode)
        sims, reals = [], []
        for k, run in enumerate(runs, start=1):
            where = rundir / f"repeat-{k}" if len(runs) > 1 else rundir
            batch, context, why = operating_point(mcfg, where / f"{mode}.trace.jsonl")
            costs = profile_costs(profile, batch, context, why)
            steps = json.loads((where / f"{mode}.sim.json").read_text(encoding="utf-8"))["steps"]
            data = sim_config(mcfg, costs, where / f"{mode}.workload.jsonl", steps)
            sims.append(sim_figures(run_policy(load_sim_config(data), mode, steps))["step_time_s"])
            reals.append(run["real"]["step_time_s"])
        out[mode] = (sum(sims) / len(sims), sum(reals) / len(reals))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("config", type=Path)
    parser.add_argument("--session", nargs=2, action="append", type=Path, required=True)
    args = parser.parse_args()
    cfg = load_run_config(args.config)
    profiles = [(p, load_profile(p)) for p, _ in args.session]
    print("runs of | profile of | mode | sim s | real s | error")
    for _, rundir in args.session:
        for path, profile in profiles:
            for mode, (sim, real) in predict(cfg, profile, rundir).items():
                when = profile.get("created", "?")
                print(
                    f"{rundir} | {path} ({when}) | {mode} | {sim:.2f} | {real:.2f} | "
                    f"{sim / real - 1:+.0%}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
