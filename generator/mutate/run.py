"""Running mutants: each one in an isolated copy of the project (the generated packages and the
step checks copied, everything else linked), `jobs` copies at a time, after a clean run shows
the checks pass on the unmutated code there.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from queue import Queue

from generator.models import Document, Step
from generator.mutate.derive import Mutant, sample, step_mutants
from generator.mutate.report import Outcome, Report, accepted_of

_SKIP_COPY = {".git", ".venv", "venv", ".dd_cache", "__pycache__", ".pytest_cache", ".ruff_cache"}


def _populate(src: Path, dst: Path, copies: set[Path]) -> None:
    """`dst` mirrors `src`: the paths in `copies` (and what is under them) are copied without
    bytecode caches, directories on the way to them are recreated, everything else is a symlink."""
    dst.mkdir(parents=True, exist_ok=True)
    for child in sorted(src.iterdir()):
        if child.name == "__pycache__":
            continue
        target = dst / child.name
        if child in copies:
            if child.is_dir():
                shutil.copytree(child, target, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                shutil.copy2(child, target)
        elif child.is_dir() and any(c.is_relative_to(child) for c in copies):
            _populate(child, target, copies)
        else:
            target.symlink_to(child)


def _kill(proc: subprocess.Popen[str]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def _run_items(
    root: Path, out_dir: Path, items: Iterable[str], timeout: float | None
) -> tuple[bool, str]:
    """Run verify items in `root` (a worker copy); (all passed, what failed)."""
    from generator.verify import check_env, verify_command

    env = check_env(out_dir)
    for item in items:
        cmd, shell = verify_command(item)
        proc = subprocess.Popen(
            cmd,
            shell=shell,
            cwd=root,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            text=True,
        )
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill(proc)
            return False, "timeout"
        if code != 0:
            return False, item
    return True, ""


class Workers:
    """`jobs` isolated copies of the project (generated packages and checks copied, the rest
    linked), each used by one mutant at a time."""

    def __init__(self, project: object, jobs: int):
        config = project.config  # type: ignore[attr-defined]
        self.root: Path = config.root.resolve()
        copies = {r.resolve() for r in project.managed_roots()}  # type: ignore[attr-defined]
        copies.add(config.steps_dir)
        copies = {c for c in copies if c.exists() and c.is_relative_to(self.root)}
        self.base = Path(tempfile.mkdtemp(prefix="dd-mutants-"))
        self.out_rel = config.output_dir.relative_to(self.root)
        self.free: Queue[Path] = Queue()
        for i in range(jobs):
            copy = self.base / f"w{i}"
            _populate(self.root, copy, copies)
            self.free.put(copy)

    def run(
        self, items: list[str], path: str, text: str, timeout: float | None
    ) -> tuple[bool, str]:
        copy = self.free.get()
        target = copy / path
        original = target.read_bytes()
        try:
            target.write_text(text, encoding="utf-8")
            return _run_items(copy, copy / self.out_rel, items, timeout)
        finally:
            target.write_bytes(original)
            self.free.put(copy)

    def close(self) -> None:
        shutil.rmtree(self.base, ignore_errors=True)


class MutationError(Exception):
    """The mutation run cannot be scored (the unmutated checks fail in the copy)."""


def run_mutants(
    project: object,
    doc: Document,
    step: Step,
    budget: int | None = None,
    seed: int = 0,
    jobs: int | None = None,
    progress: Callable[[Outcome], None] | None = None,
    fit_seconds: float | None = None,
    announce: Callable[[int, int, float, int], None] | None = None,
) -> Report:
    """Run `step`'s checks against (a seeded sample of `budget`) mutants of its code, `jobs` at
    a time (default: the machine's cores). With `fit_seconds`, the sample is cut (re-drawn with
    the same seed, at least 3) to what fits in about that time at the speed of the clean run.
    `announce(chosen, total, clean_seconds, jobs)` is told what will run once the clean run has
    timed the checks, before any mutant runs. Raises MutationError when the checks do not pass
    on the unmutated code in an isolated copy."""
    started = time.monotonic()
    mutants = step_mutants(project, doc, step)
    chosen = sample(mutants, budget, seed)
    jobs = max(1, min(jobs or os.cpu_count() or 1, max(len(chosen), 1)))
    items = [i for i in step.verify]
    report = Report(doc.path, step.number, len(mutants), accepted=accepted_of(step), jobs=jobs)
    if not chosen:
        report.seconds = time.monotonic() - started
        return report
    workers = Workers(project, jobs)
    try:
        t0 = time.monotonic()
        path = chosen[0].path
        ok, failed = workers.run(items, path, (workers.root / path).read_text("utf-8"), None)
        report.baseline_seconds = time.monotonic() - t0
        if not ok:
            raise MutationError(
                f"the checks of Step {step.number} fail on the unmutated code in an isolated "
                f"copy ({failed}); mutants cannot be scored"
            )
        timeout = 3 * report.baseline_seconds + 10
        if fit_seconds is not None:
            fit = max(3, int(fit_seconds * jobs / max(report.baseline_seconds, 0.1)))
            chosen = sample(chosen, fit, seed)
        if announce is not None:
            announce(len(chosen), len(mutants), report.baseline_seconds, jobs)
        texts = {m.path: (workers.root / m.path).read_text("utf-8") for m in chosen}

        def one(mutant: Mutant) -> Outcome:
            t = time.monotonic()
            ok, how = workers.run(items, mutant.path, mutant.apply(texts[mutant.path]), timeout)
            outcome = Outcome(mutant, not ok, how if not ok else "survived", time.monotonic() - t)
            if progress is not None:
                progress(outcome)
            return outcome

        with ThreadPoolExecutor(max_workers=jobs) as pool:
            report.outcomes = list(pool.map(one, chosen))
    finally:
        workers.close()
    report.seconds = time.monotonic() - started
    return report
