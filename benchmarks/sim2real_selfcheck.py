"""Does the simulator reproduce the regime its calibration measured? A closed-loop check.

    python benchmarks/sim2real_selfcheck.py PROFILE [--cell 64 8 1 8] [--seconds 3] [--repeats 2]

Measures, on a local Ray cluster through the run's own actors (`rlsched calibrate`'s
`closed_loop`, the bundled config), how many turns a second the machine completes with `cell`
(trajectories per worker, tokens per turn, observation tokens, context tokens) kept busy on
every worker; then simulates the same shape with PROFILE's costs (examples/run/vault.yaml's
scheduler in colocate with the cell's requests per rank, every trajectory `--turns` turns of
that many tokens, no environment latency of its own) and prints both. A profile whose own model cannot reproduce the throughput
of the cells it was fitted on predicts runs in that regime with the same error: this separates
a structural error of the model from noise in the profile (benchmarks/RESULTS.md, "On a quiet
machine"). The measured rate counts the loop's start and its last calls' wait in its seconds,
so it reads a little low; the simulated one includes the batch's ramp and tail.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def measure(cell: tuple[int, int, int, int], seconds: float, repeats: int) -> list[float]:
    """Turns a second the machine completes in `repeats` closed loops of `cell`."""
    import ray

    from rlsched.runtime import config as run_config
    from rlsched.runtime.calibrate import cell_done, closed_loop, start_probes

    probes = start_probes(run_config.load_run_config(run_config.EXAMPLE))
    workers = probes["workers"]
    rates = []
    try:
        for seed in range(repeats):
            began = time.monotonic()
            loop = closed_loop(probes, list(range(len(workers))), cell, cell_done(seconds, 2), seed)
            rates.append(len(loop["env_s"]) / (time.monotonic() - began))
    finally:
        for actor in probes["actors"]:
            ray.kill(actor, no_restart=True)
        if probes["started"]:
            ray.shutdown()
    return rates


def simulate(profile_path: Path, cell: tuple[int, int, int, int], turns: int) -> float:
    """Turns a second of rollout the simulator gives a workload of `cell`'s shape."""
    from rlsched.runtime.bench import load_profile, mode_config, sim_config, sim_figures
    from rlsched.runtime.calibrate import profile_costs
    from rlsched.runtime.config import load_run_config
    from rlsched.sim.params import load_sim_config
    from rlsched.sim.runner import run_policy

    per_worker, tokens, obs, context = cell
    cfg = mode_config(load_run_config(ROOT / "examples" / "run" / "vault.yaml"), "colocate")
    group = cfg.scheduler.group_size
    sample = [[tokens, obs, 0.0]] * turns
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "closed.workload.jsonl"
        line = json.dumps({"prompt_tokens": context, "samples": [sample] * group})
        trace.write_text((line + "\n") * 400, encoding="utf-8")
        mean_context = context + turns * (tokens + obs) / 2
        costs = profile_costs(
            load_profile(profile_path), float(per_worker), mean_context, "closed-loop self-check"
        )
        data = sim_config(cfg, costs, trace, 2)
        data["scheduler"]["max_inflight_per_rank"] = per_worker  # the cell's requests per rank
        figures = sim_figures(run_policy(load_sim_config(data), "colocate", 2))
    return float(figures["rollout_tokens_per_s"]) / tokens


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("profile", type=Path)
    parser.add_argument("--cell", nargs=4, type=int, default=(64, 8, 1, 8))
    parser.add_argument("--turns", type=int, default=7)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    cell = tuple(args.cell)
    simulated = simulate(args.profile, cell, args.turns)
    rates = measure(cell, args.seconds, args.repeats)
    real = statistics.fmean(rates)
    print(
        f"cell {cell}: measured {real:.0f} turns/s (runs: {', '.join(f'{r:.0f}' for r in rates)});"
        f" simulated {simulated:.0f} turns/s of rollout ({simulated / real - 1:+.0%})"
    )


if __name__ == "__main__":
    main()
