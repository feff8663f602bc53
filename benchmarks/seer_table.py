"""The Seer workload table of benchmarks/RESULTS.md from `rlsched sim --json` reports.

    for s in 0 1 2; do rlsched sim examples/seer_workload.yaml --seed $s --json out/seed$s.json; done
    python benchmarks/seer_table.py out/seed0.json out/seed1.json out/seed2.json

One row per policy: the mean over the reports (seeds) of step time, rollout tokens/s, the batch
tail (last 10%), p99 trajectory, preemptions and prefilled tokens per decoded token, each with its
spread (min-max over the seeds) where it matters.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path


def main(paths: list[str]) -> None:
    reports = [json.loads(Path(p).read_text()) for p in paths]
    seeds = [r["seed"] for r in reports]
    names = list(reports[0]["policies"])
    print(f"seeds {seeds}, {reports[0]['steps']} steps each\n")
    print(
        "| policy | step time (s) | spread | rollout tokens/s | spread | tail, last 10% (s) | spread"
        " | p99 trajectory (s) | preemptions | prefill / decoded token |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name in names:
        runs = [r["policies"][name] for r in reports if name in r["policies"]]

        def col(key: str, runs: list[dict] = runs) -> tuple[float, float, float]:
            values = [run[key] for run in runs]
            return statistics.fmean(values), min(values), max(values)

        step, tps, tail = col("step_time_s"), col("rollout_tokens_per_s"), col("tail_latency_s")
        p99, pre, pf = col("p99_trajectory_s"), col("preemptions"), col("prefill_per_decoded_token")
        print(
            f"| {name} | {step[0]:,.0f} | {step[1]:,.0f}-{step[2]:,.0f} | {tps[0]:,.0f} |"
            f" {tps[1]:,.0f}-{tps[2]:,.0f} | {tail[0]:,.0f} | {tail[1]:,.0f}-{tail[2]:,.0f} |"
            f" {p99[0]:,.0f} | {pre[0]:,.0f} | {pf[0]:.2f} |"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
