"""Thin wrappers around the `git` command line (no library, no global state).

Every function takes the directory to run in; paths given and returned are relative to the
repository root (`repo_root`) and use `/`. Failures raise `GitError` with git's own message.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

STEP_TRAILER = "Dd-Step"


class GitError(RuntimeError):
    """A git command failed; the message holds the command and git's stderr."""


def git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run `git args` in `cwd` and return the completed process (text, output captured)."""
    try:
        proc = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, encoding="utf-8", check=False
        )
    except OSError as exc:  # git not installed, or `cwd` gone
        raise GitError(f"cannot run git: {exc}") from None
    if check and proc.returncode != 0:
        raise GitError(f"git {' '.join(args)}: {proc.stderr.strip() or proc.stdout.strip()}")
    return proc


def repo_root(cwd: Path) -> Path | None:
    """The work tree root containing `cwd`; None when `cwd` is not inside a git repository (or
    git cannot run at all)."""
    try:
        proc = git(cwd, "rev-parse", "--show-toplevel", check=False)
    except GitError:
        return None
    return Path(proc.stdout.strip()).resolve() if proc.returncode == 0 else None


@dataclass(frozen=True)
class Checkout:
    """What `dd check` needs to know about the git checkout around the project, in one call."""

    root: Path
    shallow: bool  # history was cut (`git clone --depth`): an old commit may be missing
    head: bool  # the repository has at least one commit


def checkout(cwd: Path) -> Checkout | None:
    """The checkout containing `cwd`, or None outside any (or when git cannot run)."""
    try:
        proc = git(
            cwd,
            "rev-parse",
            "--show-toplevel",
            "--is-shallow-repository",
            "--verify",
            "-q",
            "HEAD",
            check=False,
        )
    except GitError:
        return None
    lines = proc.stdout.split("\n")
    if len(lines) < 2 or not lines[0].strip():
        return None
    return Checkout(
        Path(lines[0].strip()).resolve(), lines[1].strip() == "true", proc.returncode == 0
    )


def show_many(cwd: Path, rev: str, paths: list[str]) -> dict[str, str | None]:
    """The text of each repository path at `rev` (None where it does not exist), in one call."""
    if not paths:
        return {}
    request = "".join(f"{rev}:{path}\n" for path in paths).encode("utf-8")
    try:
        proc = subprocess.run(
            ["git", "cat-file", "--batch"], cwd=cwd, input=request, capture_output=True, check=False
        )
    except OSError as exc:
        raise GitError(f"cannot run git: {exc}") from None
    out = proc.stdout
    found: dict[str, str | None] = {}
    pos = 0
    for path in paths:
        end = out.index(b"\n", pos)
        header = out[pos:end].split()
        pos = end + 1
        if len(header) == 3 and header[1] == b"blob":
            size = int(header[2])
            found[path] = out[pos : pos + size].decode("utf-8", errors="replace")
            pos += size + 1
        else:
            found[path] = None
    return found


def has_head(cwd: Path) -> bool:
    """True when the repository has at least one commit."""
    return git(cwd, "rev-parse", "--verify", "-q", "HEAD", check=False).returncode == 0


def changed_paths(cwd: Path) -> list[str]:
    """Every path with staged, unstaged or untracked changes (ignored files excluded), sorted.

    Renames and copies contribute both their old and new path.
    """
    out = git(cwd, "status", "--porcelain=v1", "-z", "--untracked-files=all").stdout
    entries = out.split("\0")
    paths: set[str] = set()
    i = 0
    while i < len(entries):
        entry = entries[i]
        i += 1
        if len(entry) < 4:
            continue
        paths.add(entry[3:])
        if entry[0] in "RC":  # the next NUL-separated entry is the source path
            paths.add(entries[i])
            i += 1
    return sorted(paths)


def commit_paths(cwd: Path, paths: list[str], subject: str, trailers: dict[str, str]) -> str:
    """Commit exactly `paths` (new, modified or deleted) with `subject` and `trailers`.

    Whatever else is staged stays staged and out of the commit. Returns the new commit's hash.
    Raises GitError when git refuses (nothing to commit, hooks, identity...).
    """
    if not paths:
        raise GitError("nothing to commit")
    cwd = repo_root(cwd) or cwd
    git(cwd, "add", "-A", "--", *paths)
    body = "\n".join(f"{k}: {v}" for k, v in trailers.items())
    args = ["commit", "-q", "-m", subject]
    if body:
        args += ["-m", body]
    git(cwd, *args, "--only", "--", *paths)
    return git(cwd, "rev-parse", "HEAD").stdout.strip()


def unstage(cwd: Path, paths: list[str]) -> None:
    """Undo `git add` of `paths` (index back to HEAD for them), to roll back a failed commit."""
    cwd = repo_root(cwd) or cwd
    if paths and has_head(cwd):
        git(cwd, "reset", "-q", "--", *paths, check=False)
    elif paths:
        git(cwd, "rm", "-q", "--cached", "--ignore-unmatch", "--", *paths, check=False)


def step_commits(cwd: Path) -> dict[str, str]:
    """Newest commit hash for every `Dd-Step: <doc>#<N>` trailer value in the history."""
    if not has_head(cwd):
        return {}
    fmt = f"%H%x00%(trailers:key={STEP_TRAILER},valueonly,separator=%x01)%x1e"
    out = git(cwd, "log", "-E", f"--grep=^{STEP_TRAILER}: ", f"--format={fmt}").stdout
    found: dict[str, str] = {}
    for record in out.split("\x1e"):
        if "\0" not in record:
            continue
        sha, values = record.strip("\n").split("\0", 1)
        for value in values.strip().split("\x01"):
            if value.strip():
                found.setdefault(value.strip(), sha.strip())
    return found


def step_key(doc_path: str, n: int) -> str:
    """The trailer value naming step `n` of the document at repository path `doc_path`."""
    return f"{doc_path}#{n}"


def show(cwd: Path, rev: str, path: str) -> str | None:
    """The text of repository path `path` at `rev`, or None when it does not exist there."""
    proc = git(cwd, "show", f"{rev}:{path}", check=False)
    return proc.stdout if proc.returncode == 0 else None


_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")


def changed_lines(cwd: Path, rev: str, path: str) -> list[int]:
    """1-based lines of the working-tree `path` that differ from `rev` (for a pure deletion, the
    line after it). Raises GitError on an unknown revision."""
    cwd = repo_root(cwd) or cwd
    if git(cwd, "rev-parse", "--verify", "-q", f"{rev}^{{commit}}", check=False).returncode:
        raise GitError(f"unknown revision {rev!r}")
    out = git(cwd, "diff", "-U0", "--no-color", rev, "--", path).stdout
    lines: list[int] = []
    for line in out.split("\n"):
        m = _HUNK.match(line)
        if m:
            start, count = int(m.group(1)), int(m.group(2) or "1")
            lines += list(range(start, start + count)) if count else [start + 1]
    return lines
