"""Time `dd check` and `dd expand --check` over all of the project's design documents.

Each figure is the median of several runs of the console command as a user runs it (a new
Python process, imports included), in the project root. The figure is CPU time (user + system,
of dd and of the git and ruff processes it runs): on a shared machine, wall time mostly measures
the neighbours; `--wall` reports wall time instead.

* cache cold: dd's result cache (`[tool.dd] cache`) removed before every run;
* cache warm: the cache as the previous run left it (documents unchanged).

    python benchmarks/dd_bench.py [--runs 7] [--vs REV]

`--vs REV` checks REV out into a temporary git worktree and times it side by side in the same
run (the runs alternate, so both see the same machine load), then prints the speed-up. Prints a
Markdown table that benchmarks/RESULTS.md records.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
COMMANDS = {"dd check": ["check"], "dd expand --check": ["expand", "--check"]}
CACHE = ".dd_cache"


WALL = False  # set by --wall


def run_dd(tree: Path, args: list[str], cold_cache: bool) -> float:
    """Seconds (CPU, or wall with --wall) for `python -m generator ARGS` in `tree`, with
    `tree`'s own generator."""
    if cold_cache:
        shutil.rmtree(tree / CACHE, ignore_errors=True)
    env = dict(os.environ, PYTHONPATH=str(tree))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "generator", *args], cwd=tree, env=env, capture_output=True
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    elapsed = wall if WALL else cpu
    if proc.returncode != 0:
        output = proc.stdout.decode() + proc.stderr.decode()
        raise SystemExit(f"{tree}: dd {' '.join(args)} failed:\n{output}")
    return elapsed


def measure(variants: dict[str, Callable[[], float]], runs: int) -> dict[str, float]:
    """Median seconds of each variant; the variants take turns, run by run."""
    samples: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(runs):
        for name, fn in variants.items():
            samples[name].append(fn())
    return {name: statistics.median(values) for name, values in samples.items()}


def worktree(rev: str, into: Path) -> tuple[Path, str]:
    """REV checked out (detached) under `into`; returns the path and the full commit hash."""
    commit = subprocess.run(
        ["git", "rev-parse", "--verify", f"{rev}^{{commit}}"],
        cwd=REPO, check=True, capture_output=True, text=True,
    ).stdout.strip()
    path = into / f"dd-{commit[:10]}"
    subprocess.run(
        ["git", "worktree", "add", "--detach", "-q", str(path), commit], cwd=REPO, check=True
    )
    return path, commit


def describe() -> str:
    from generator.project import Project

    project = Project.load(REPO)
    docs = len(project.documents)
    specs = sum(len(d.specs()) for d in project.documents)
    lines = sum(d.text.count("\n") for d in project.documents)
    machine = f"{os.cpu_count()} cores, Python {platform.python_version()} on {platform.machine()}"
    return f"{docs} documents, {specs} specs, {lines} lines; {machine}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--vs", metavar="REV", help="also time REV (a git revision), side by side")
    parser.add_argument("--wall", action="store_true", help="wall time instead of CPU time")
    options = parser.parse_args()
    global WALL
    WALL = options.wall
    sys.path.insert(0, str(REPO))
    what = "wall" if WALL else "CPU (user + system)"
    print(f"{describe()}; median {what} time of {options.runs} runs, each a new process")
    with tempfile.TemporaryDirectory(prefix="dd-bench-") as tmp:
        other, commit = worktree(options.vs, Path(tmp)) if options.vs else (None, "")
        try:
            rows = []
            for label, args in COMMANDS.items():
                variants: dict[str, Callable[[], float]] = {
                    "cold": lambda a=args: run_dd(REPO, a, cold_cache=True),
                    "warm": lambda a=args: run_dd(REPO, a, cold_cache=False),
                }
                if other is not None:
                    variants["base"] = lambda a=args, t=other: run_dd(t, a, cold_cache=True)
                rows.append((label, measure(variants, options.runs)))
        finally:
            if other is not None:
                subprocess.run(["git", "worktree", "remove", "--force", str(other)], cwd=REPO)
    if other is None:
        print("| command | cache cold | cache warm |\n|---|---|---|")
        for label, t in rows:
            print(f"| {label} | {t['cold'] * 1000:.0f} ms | {t['warm'] * 1000:.0f} ms |")
        return
    print(f"| command | {commit[:10]} | this tree, cache cold | this tree, cache warm |")
    print("|---|---|---|---|")
    for label, t in rows:
        base = t["base"]
        print(
            f"| {label} | {base * 1000:.0f} ms | {t['cold'] * 1000:.0f} ms "
            f"({base / t['cold']:.1f}x) | {t['warm'] * 1000:.0f} ms ({base / t['warm']:.1f}x) |"
        )


if __name__ == "__main__":
    main()
