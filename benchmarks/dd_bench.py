"""Time `dd check` and `dd expand --check` over all of the project's design documents.

Two views, each the median of several runs:
* cold: the console command as a user runs it (a new Python process, imports included);
* warm: the same work in-process (load + check, load + generate + compare), no imports.

    python benchmarks/dd_bench.py [--runs 7]

Prints a Markdown table that benchmarks/RESULTS.md records.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from generator.project import Project


def median_seconds(fn: Callable[[], object], runs: int) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def cold(*args: str) -> Callable[[], object]:
    def run() -> None:
        proc = subprocess.run(
            [sys.executable, "-m", "generator", *args], cwd=REPO, capture_output=True, check=False
        )
        if proc.returncode != 0:
            raise SystemExit(
                f"dd {' '.join(args)} failed:\n{proc.stdout.decode()}{proc.stderr.decode()}"
            )

    return run


def warm_check() -> None:
    project = Project.load(REPO)
    if project.errors():
        raise SystemExit("dd check reports errors")


def warm_expand_check() -> None:
    if Project.load(REPO).pending_changes():
        raise SystemExit("rlsched/ is out of date")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    runs = parser.parse_args().runs
    project = Project.load(REPO)
    docs = len(project.documents)
    specs = sum(len(d.specs()) for d in project.documents)
    lines = sum(d.text.count("\n") for d in project.documents)
    rows = [
        ("dd check (cold, new process)", median_seconds(cold("check"), runs)),
        ("dd expand --check (cold, new process)", median_seconds(cold("expand", "--check"), runs)),
        ("dd check (warm, in-process)", median_seconds(warm_check, runs)),
        ("dd expand --check (warm, in-process)", median_seconds(warm_expand_check, runs)),
    ]
    print(
        f"{docs} documents, {specs} specs, {lines} lines; median of {runs} runs; "
        f"Python {platform.python_version()} on {platform.machine()} ({platform.processor() or 'cpu'})"
    )
    print("| command | median |")
    print("|---|---|")
    for name, seconds in rows:
        print(f"| {name} | {seconds * 1000:.0f} ms |")


if __name__ == "__main__":
    main()
