"""All-or-nothing writing of generated files, with hand-edit and ownership protection.

`plan_changes` compares what generation produced with the disk; `refuse_unsafe` rejects the plan
when it would overwrite a hand edit (DD100) or a file dd does not manage (DD101); `apply` writes
every new file to a temporary sibling first and only then renames them all into place.
"""

from __future__ import annotations

import difflib
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from generator.assemble import HEADER_PREFIX, SOURCE_PREFIX, hash_matches, is_generated
from generator.models import DDError, Diagnostic, Loc


@dataclass(frozen=True)
class Change:
    """One file to create, update or delete (`new is None`). Paths are project-relative."""

    path: str
    old: str | None
    new: str | None

    @property
    def action(self) -> str:
        if self.old is None:
            return "create"
        return "delete" if self.new is None else "update"

    @property
    def blocker(self) -> str | None:
        """Why `dd expand` will refuse this change without --force (DD100/DD101), or None."""
        if self.old is None:
            return None
        if not is_generated(self.old):
            return "DD101"
        return None if hash_matches(self.old) else "DD100"

    def diff(self) -> str:
        old = (self.old or "").splitlines(keepends=True)
        new = (self.new or "").splitlines(keepends=True)
        a = f"a/{self.path}" if self.old is not None else "/dev/null"
        b = f"b/{self.path}" if self.new is not None else "/dev/null"
        return "".join(difflib.unified_diff(old, new, a, b))


def _read(root: Path, rel: str) -> str | None:
    """The text of `rel` (None when absent), newlines normalised. Bytes that are not UTF-8 are
    replaced rather than fatal: such a file is never one dd wrote, so it reads as unmanaged (or
    as edited). A directory or symlink in the way is DD101 (never followed, never replaced)."""
    path = root / rel
    if path.is_symlink() or (path.exists() and not path.is_file()):
        what = "a symlink" if path.is_symlink() else "a directory"
        message = f"{what} is in the way of a generated file; move it away"
        raise DDError([Diagnostic(loc=Loc(path=rel), code="DD101", message=message)])
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    # universal newlines, as `read_text` would: a checkout with CRLF endings is not an edit
    return data.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")


def _orphans(root: Path, base: Path, files: dict[str, str]) -> list[Change]:
    """Generated files under `base` that are no longer generated. Only regular files that start
    with dd's header qualify; symlinks are never followed (nor deleted)."""
    found = []
    for path in sorted(base.rglob("*.py")):
        if path.is_symlink() or not path.is_file():
            continue
        rel = path.relative_to(root).as_posix() if path.is_relative_to(root) else path.as_posix()
        if rel in files:
            continue
        with path.open("rb") as fh:
            if fh.read(len(HEADER_PREFIX)) != HEADER_PREFIX.encode():
                continue
        found.append(Change(rel, _read(root, rel), None))
    return found


def plan_changes(root: Path, files: dict[str, str], managed_roots: list[Path]) -> list[Change]:
    """Changes needed so the disk holds exactly `files` plus no orphaned generated files.

    An orphan is a file under `managed_roots` that starts with dd's header but is no longer
    generated (its spec was removed, or its step is no longer started). Raises DDError (DD101)
    when a generated path is taken by a directory or a symlink.
    """
    root = root.resolve()
    changes = []
    for rel, new in sorted(files.items()):
        old = _read(root, rel)
        if old != new:
            changes.append(Change(rel, old, new))
    for base in managed_roots:
        if base.is_dir() and not base.is_symlink():
            changes += _orphans(root, base.resolve(), files)
    return changes


def edited_symbols(old: str, new: str) -> list[str]:
    """Names of generated symbols (from `# dd-source:` markers) around the lines that differ."""
    symbols: list[str] = []
    current = "module header"
    old_lines = old.splitlines()
    owner = []
    for line in old_lines:
        stripped = line.strip()
        if stripped.startswith(SOURCE_PREFIX):
            current = stripped.rsplit(" ", 1)[-1]
        owner.append(current)
    matcher = difflib.SequenceMatcher(a=old_lines, b=new.splitlines(), autojunk=False)
    for tag, i1, i2, _, _ in matcher.get_opcodes():
        if tag == "equal":
            continue
        for i in range(i1, max(i2, i1 + 1)):
            name = owner[min(i, len(owner) - 1)] if owner else current
            if name not in symbols:
                symbols.append(name)
    return symbols


def refuse_unsafe(changes: list[Change], force: bool) -> None:
    """Raise DDError (DD100/DD101) for every change that would lose a hand edit, unless `force`."""
    if force:
        return
    diags = []
    for change in changes:
        if change.blocker == "DD101":
            diags.append(
                Diagnostic(
                    loc=Loc(path=change.path),
                    code="DD101",
                    message="file exists but was not generated by dd; move it away or rerun with --force",
                )
            )
        elif change.blocker == "DD100":
            assert change.old is not None
            symbols = ", ".join(edited_symbols(change.old, change.new or ""))
            diags.append(
                Diagnostic(
                    loc=Loc(path=change.path, line=_first_changed_line(change)),
                    code="DD100",
                    message=(
                        f"edited by hand (in {symbols}); put the change into the design document, "
                        f"or rerun with --force to discard it. What --force would do:\n{change.diff()}"
                    ),
                )
            )
    if diags:
        raise DDError(diags)


def _first_changed_line(change: Change) -> int:
    old = (change.old or "").splitlines()
    new = (change.new or "").splitlines()
    for i, (a, b) in enumerate(zip(old, new)):
        if a != b and not re.match(r"# dd-hash: ", a):
            return i + 1
    return min(len(old), len(new)) + 1


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def stage(path: Path, data: bytes) -> Path:
    """Write `data` to a new temporary sibling of `path` and return it, ready for `os.replace`.

    The temporary file gets `path`'s permissions when it exists, else the ordinary ones (0666
    less the umask) rather than mkstemp's private 0600.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".dd-tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, path.stat().st_mode & 0o7777 if path.is_file() else 0o666 & ~_umask())
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return Path(tmp)


def atomic_write(path: Path, text: str | bytes) -> None:
    """Replace `path` with `text` atomically (temporary sibling, then `os.replace`); `str` is
    written as UTF-8 with no newline translation."""
    tmp = stage(path, text.encode("utf-8") if isinstance(text, str) else text)
    try:
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def apply(root: Path, changes: list[Change]) -> None:
    """Write all new contents to temporary files, then rename each into place (and delete orphans).

    If writing any temporary file fails, nothing on disk has changed yet. If a rename or delete
    fails part way, the files already replaced get their old contents back (best effort: the
    old contents are in the changes), so a failed run leaves the previous generation in place.
    """
    staged: list[tuple[Change, Path, Path | None]] = []
    try:
        for change in changes:
            target = root / change.path
            new = None if change.new is None else stage(target, change.new.encode("utf-8"))
            staged.append((change, target, new))
    except BaseException:
        for _, _, tmp in staged:
            if tmp is not None:
                tmp.unlink(missing_ok=True)
        raise
    done: list[tuple[Change, Path]] = []
    try:
        for change, target, tmp in staged:
            if tmp is None:
                target.unlink(missing_ok=True)
            else:
                os.replace(tmp, target)
            done.append((change, target))
    except BaseException:
        for _, _, tmp in staged:
            if tmp is not None:
                tmp.unlink(missing_ok=True)
        for change, target in reversed(done):
            if change.old is None:
                target.unlink(missing_ok=True)
            else:
                atomic_write(target, change.old)
        raise
