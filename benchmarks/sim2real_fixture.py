"""Record one repeat of an out-of-sample `rlsched bench --profile` run as the inputs of
steps/rlsched_runtime/test_step16.py: per mode the simulator config the bench wrote (costs from
the calibration profile, each with its source), its workload trace, and the real and simulated
figures of that repeat and of all repeats.

    python benchmarks/sim2real_fixture.py RUNDIR [--repeat K] [--out DIR]

RUNDIR is the bench's `--out` directory of a `--repeats N` run (it holds bench.json and
repeat-K/). The check re-simulates each mode from these files (deterministic) and bounds the
error against the recorded real run by what benchmarks/RESULTS.md shows.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

MODES = ("colocate", "disaggregated", "timeshare")
DEFAULT_OUT = Path(__file__).resolve().parents[1] / "steps" / "rlsched_runtime" / "sim2real"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("rundir", type=Path)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    report = json.loads((args.rundir / "bench.json").read_text(encoding="utf-8"))
    where = args.rundir / f"repeat-{args.repeat}"
    args.out.mkdir(parents=True, exist_ok=True)
    recorded: dict[str, object] = {"profile": report["profile"], "figures": report["figures"]}
    for mode in MODES:
        data = json.loads((where / f"{mode}.sim.json").read_text(encoding="utf-8"))
        trace = Path(data["workload"]["trace"])
        shutil.copyfile(trace, args.out / f"{mode}.workload.jsonl")
        data["workload"]["trace"] = f"{mode}.workload.jsonl"
        (args.out / f"{mode}.sim.json").write_text(json.dumps(data, indent=1), encoding="utf-8")
        runs = [r for r in report["results"] if r["mode"] == mode]
        mine = runs[args.repeat - 1]
        recorded[mode] = {"real": mine["real"], "sim": mine["sim"], "errors": mine["errors"]}
    text = json.dumps(recorded, indent=1)
    (args.out / "recorded.json").write_text(text + "\n", encoding="utf-8")
    print(f"recorded repeat {args.repeat} of {args.rundir} in {args.out}")


if __name__ == "__main__":
    main()
