"""Mutation scores of every DONE step of this project's documents (issue 18).

    nice python benchmarks/mutation_scores.py --budget 8 --fit 60 --out benchmarks/mutation_scores.json

runs `dd step verify N --mutants` for each DONE step (a seeded sample of at most `--budget`
mutants, cut to what fits in about `--fit` seconds at the speed of the step's clean run), writes
every step's result to `--out` as it goes (a rerun skips the steps already there), and prints
the table of scores per document that benchmarks/RESULTS.md records. `--record` also writes each
score (of the `--only` steps, when given) into the step's `verified:` line, unless that line
already holds a score of a larger sample (`dd step done` runs `[tool.dd] mutation-budget`).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from generator import mutate  # noqa: E402
from generator.docedit import set_step_fields  # noqa: E402
from generator.models import StepStatus  # noqa: E402
from generator.project import Project  # noqa: E402
from generator.steps import read_text  # noqa: E402
from generator.writer import atomic_write  # noqa: E402

# Documents whose checks start a Ray cluster: one mutant at a time (two clusters at once on a
# small machine only slow each other down).
ONE_AT_A_TIME = {"design/rlsched_runtime.md"}


def score_step(project: Project, doc, step, args) -> dict:  # type: ignore[no-untyped-def]
    jobs = 1 if doc.path in ONE_AT_A_TIME else args.jobs
    started = time.monotonic()
    try:
        report = mutate.run_mutants(
            project, doc, step, args.budget, args.seed, jobs, fit_seconds=args.fit
        )
    except mutate.MutationError as exc:
        return {"doc": doc.path, "step": step.number, "error": str(exc)}
    return {
        "doc": doc.path,
        "step": step.number,
        "total": report.total,
        "run": len(report.outcomes),
        "killed": report.killed,
        "accepted": len(report.survivors) - len(report.unaccepted),
        "survived": [o.mutant.describe(doc.path) for o in report.unaccepted],
        "score": report.score,
        "summary": report.summary(),
        "seconds": round(time.monotonic() - started, 1),
        "baseline_seconds": round(report.baseline_seconds, 1),
        "jobs": report.jobs,
    }


def table(results: list[dict], floor: float) -> str:
    docs: dict[str, list[dict]] = {}
    for r in results:
        docs.setdefault(r["doc"], []).append(r)
    lines = [
        "| document | DONE steps | mutants (of) | killed | accepted | survived | score | "
        "steps below floor | time | mutants/min |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    total = {"steps": 0, "run": 0, "of": 0, "killed": 0, "accepted": 0, "below": 0, "s": 0.0}
    for path, rows in sorted(docs.items()):
        ok = [r for r in rows if "error" not in r]
        run = sum(r["run"] for r in ok)
        of = sum(r["total"] for r in ok)
        killed = sum(r["killed"] for r in ok)
        accepted = sum(r["accepted"] for r in ok)
        below = [str(r["step"]) for r in ok if r["score"] is not None and r["score"] < floor] + [
            f"{r['step']} (error)" for r in rows if "error" in r
        ]
        seconds = sum(r.get("seconds", 0.0) for r in rows)
        score = f"{(killed + accepted) / run:.2f}" if run else "-"
        lines.append(
            f"| {path} | {len(rows)} | {run} ({of}) | {killed} | {accepted} | "
            f"{run - killed - accepted} | {score} | {', '.join(below) or '-'} | "
            f"{seconds / 60:.1f} min | {60 * run / seconds if seconds else 0:.1f} |"
        )
        for key, value in (
            ("steps", len(rows)),
            ("run", run),
            ("of", of),
            ("killed", killed),
            ("accepted", accepted),
            ("below", len(below)),
            ("s", seconds),
        ):
            total[key] += value
    run = total["run"]
    lines.append(
        f"| **all** | {total['steps']} | {run} ({total['of']}) | {total['killed']} | "
        f"{total['accepted']} | {run - total['killed'] - total['accepted']} | "
        f"{(total['killed'] + total['accepted']) / run if run else 0:.2f} | {total['below']} | "
        f"{total['s'] / 60:.1f} min | {60 * run / total['s'] if total['s'] else 0:.1f} |"
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--budget", type=int, default=8)
    parser.add_argument("--fit", type=float, default=60.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--docs", nargs="*", default=None)
    parser.add_argument("--only", nargs="*", default=None, help="steps as DOC#N")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "mutation_scores.json")
    parser.add_argument("--record", action="store_true")
    parser.add_argument("--table", action="store_true", help="print the table of --out only")
    args = parser.parse_args()
    results: list[dict] = json.loads(args.out.read_text()) if args.out.is_file() else []
    project = Project.load(ROOT)
    floor = project.config.mutation_floor
    if not args.table:
        done = {(r["doc"], r["step"]) for r in results}
        for doc in project.documents:
            if args.docs and doc.path not in args.docs:
                continue
            for step in doc.steps:
                if step.status is not StepStatus.done or (doc.path, step.number) in done:
                    continue
                if args.only and f"{doc.path}#{step.number}" not in args.only:
                    continue
                row = score_step(project, doc, step, args)
                results.append(row)
                args.out.write_text(json.dumps(results, indent=1) + "\n")
                print(json.dumps({k: v for k, v in row.items() if k != "survived"}), flush=True)
    if args.record:
        for r in results:
            if "error" in r:
                continue
            if args.only and f"{r['doc']}#{r['step']}" not in args.only:
                continue
            project = Project.load(ROOT)
            doc = project.document(r["doc"])
            step = next(s for s in doc.steps if s.number == r["step"])
            recorded = mutate.score_of(step.verified)
            if recorded is not None and int(recorded["mutants"]) > r["run"]:
                continue  # `dd step done` ran a larger sample: keep its score
            line = f"{(step.verified or 'passed').split('; ')[0]}; {r['summary']}"
            path = ROOT / doc.path
            atomic_write(path, set_step_fields(read_text(path), step, {"verified": line}))
    print(table(results, floor))


if __name__ == "__main__":
    main()
