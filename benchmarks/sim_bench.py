"""Simulator cost against cluster size: wall time should grow about linearly with events.

The paper config (examples/paper_160gpu.yaml) scaled by k = 1, 2, 4, 8: k x 160 devices, the
training set and the batch scaled with them (so every rank sees the same work), timeshare,
`--steps` training steps. Each size runs in a fresh process one after the other; the table
gives events, wall seconds and microseconds per event (flat = linear in events).

    python benchmarks/sim_bench.py --steps 3 [--sizes 160,320,640,1280]
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "examples" / "paper_160gpu.yaml"

ONE_RUN = """
import json, sys, time
sys.path.insert(0, {root!r})
from rlsched.sim.params import load_sim_config
from rlsched.sim.runner import run_policy
import yaml
raw = yaml.safe_load(open({config!r}))
k = {devices} // raw["devices"]["count"]
raw["devices"]["count"] = {devices}
raw["scheduler"]["train_batch_size"] *= k
raw["policies"] = {{"timeshare": {{"mode": "timeshare",
                    "train": raw["policies"]["timeshare"]["train"] * k}}}}
sim = load_sim_config(raw)
run = run_policy(sim, "timeshare", {steps})
print(json.dumps({{"events": run.result.events, "wall_s": run.result.wall_s,
                  "step_time_s": run.summary["step_time_s"]}}))
"""


def measure(devices: int, steps: int) -> dict:
    """One size in a fresh interpreter (no warm caches carried between sizes)."""
    code = ONE_RUN.format(root=str(ROOT), config=str(CONFIG), devices=devices, steps=steps)
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    ).stdout
    return {"devices": devices, **json.loads(out.strip().splitlines()[-1])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--sizes", default="160,320,640,1280")
    args = parser.parse_args()
    rows = [measure(int(n), args.steps) for n in args.sizes.split(",")]
    print(f"timeshare, {args.steps} steps; Python {platform.python_version()} "
          f"on {platform.machine()}")
    print("| devices | events | wall (s) | us/event | simulated step (s) |")
    print("|---|---|---|---|---|")
    for row in rows:
        per_event = 1e6 * row["wall_s"] / row["events"]
        print(f"| {row['devices']:,} | {row['events']:,} | {row['wall_s']:.1f} | "
              f"{per_event:.1f} | {row['step_time_s']:.0f} |")


if __name__ == "__main__":
    main()
