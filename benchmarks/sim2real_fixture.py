"""Record an out-of-sample `rlsched bench --profile ... --repeats N` run as the inputs of
steps/rlsched_runtime/test_step16.py: per mode and repeat the simulator config the bench wrote
(costs from the calibration profile, each with its source) and its workload trace (gzipped),
and the real and simulated figures of every repeat with the table's rows.

    python benchmarks/sim2real_fixture.py RUNDIR --out steps/rlsched_runtime/sim2real/SESSION

RUNDIR is the bench's `--out` directory (bench.json and repeat-K/). The check re-simulates every
mode and repeat from these files (the simulator is deterministic) and bounds the error of the
means against the recorded real runs by what benchmarks/RESULTS.md shows.
"""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path

MODES = ("colocate", "disaggregated", "timeshare")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("rundir", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    report = json.loads((args.rundir / "bench.json").read_text(encoding="utf-8"))
    args.out.mkdir(parents=True, exist_ok=True)
    recorded: dict[str, object] = {"profile": report["profile"], "figures": report["figures"]}
    for mode in MODES:
        runs = [r for r in report["results"] if r["mode"] == mode]
        kept = []
        for k, run in enumerate(runs, start=1):
            where = args.rundir / f"repeat-{k}" if len(runs) > 1 else args.rundir
            data = json.loads((where / f"{mode}.sim.json").read_text(encoding="utf-8"))
            trace = Path(data["workload"]["trace"]).read_bytes()
            name = f"{mode}-{k}.workload.jsonl.gz"
            (args.out / name).write_bytes(gzip.compress(trace, mtime=0))
            data["workload"]["trace"] = name
            text = json.dumps(data, indent=1)
            (args.out / f"{mode}-{k}.sim.json").write_text(text + "\n", encoding="utf-8")
            kept.append({"real": run["real"], "sim": run["sim"], "errors": run["errors"]})
        recorded[mode] = kept
    text = json.dumps(recorded, indent=1)
    (args.out / "recorded.json").write_text(text + "\n", encoding="utf-8")
    print(f"recorded {args.rundir} in {args.out}")


if __name__ == "__main__":
    main()
