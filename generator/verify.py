"""Running a step's `verify:` items: each pytest file or `cmd:` in its own process, in the
project root, with the generated package importable. `verify_together` is the fast way to
re-check many DONE steps at once (CI); its verdict is always that of `run_checks`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from generator.models import Step


@dataclass
class CheckResult:
    """Outcome of one `verify` item."""

    item: str
    ok: bool
    output: str = ""  # the tail of the command's output, for failures


_PYTEST = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]


def verify_command(item: str) -> tuple[list[str] | str, bool]:
    """(command, shell?) for a verify item: a pytest file or `cmd: <shell command>`."""
    if item.startswith("cmd:"):
        return item[len("cmd:") :].strip(), True
    return [*_PYTEST, item], False


def check_env(out_dir: Path) -> dict[str, str]:
    """The environment checks run in: no bytecode written, `out_dir` first on the path."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(out_dir), env.get("PYTHONPATH", "")) if p)
    return env


def run_checks(root: Path, out_dir: Path, items: Iterable[str]) -> list[CheckResult]:
    """Run each verify item in `root`, each in its own process; pass means exit status 0."""
    env = check_env(out_dir)
    results: list[CheckResult] = []
    for item in items:
        if not item.startswith("cmd:") and not (root / item).is_file():
            results.append(CheckResult(item, False, f"{item}: no such file"))
            continue
        cmd, shell = verify_command(item)
        proc = subprocess.run(
            cmd, shell=shell, cwd=root, env=env, capture_output=True, text=True, check=False
        )
        output = (proc.stdout + proc.stderr).strip()
        results.append(
            CheckResult(item, proc.returncode == 0, "\n".join(output.splitlines()[-20:]))
        )
    return results


def verify_together(root: Path, out_dir: Path, steps: Sequence[Step]) -> list[CheckResult]:
    """The results `run_checks` gives for every verify item of `steps`, found faster.

    The pytest files of all the steps run first in one pytest process (one interpreter start
    and one import of the package instead of one per file). When that process passes, so does
    every file in it; when it fails, each file runs again on its own, as `run_checks` runs it,
    and that run is the file's result. `cmd:` items always run on their own. An item that
    several steps name runs once.
    """
    items = list(dict.fromkeys(item for step in steps for item in step.verify))
    files = [i for i in items if not i.startswith("cmd:") and (root / i).is_file()]
    results = {r.item: r for r in run_checks(root, out_dir, [i for i in items if i not in files])}
    if files:
        proc = subprocess.run(
            [*_PYTEST, *files], cwd=root, env=check_env(out_dir), capture_output=True, check=False
        )
        if proc.returncode == 0:
            results |= {f: CheckResult(f, True) for f in files}
        else:
            results |= {r.item: r for r in run_checks(root, out_dir, files)}
    return [results[i] for i in items]
