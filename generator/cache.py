"""A cache of dd's results by content hash, so unchanged documents are not parsed, checked or
generated again.

An entry is stored under a name (the kind of result and the document) together with the key it
was computed for: the sha256 of everything that affects the result (the document's bytes, dd's
own source, the pattern files, the versions of the libraries and of the formatter, the
settings). A lookup returns a value only when the stored key equals the key asked for, so a
stale entry can never be served; each name holds one entry, so the cache does not grow with
edits. Entries are written atomically; any problem reading or writing one is a miss, never an
error. The directory ignores itself in git.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

VERSION = "1"  # bump when the entry format changes
_LIBRARIES = ("libcst", "markdown_it", "jinja2", "yaml", "pydantic", "pydantic_core")


def digest(*parts: str | bytes) -> str:
    """sha256 (hex) of `parts`, each length-prefixed so that no two sequences collide."""
    h = hashlib.sha256()
    for part in parts:
        data = part.encode("utf-8") if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "big"))
        h.update(data)
    return h.hexdigest()


def files_digest(paths: list[Path]) -> str:
    """sha256 over the names and bytes of `paths` (a missing file counts as empty)."""
    parts: list[str | bytes] = []
    for path in sorted(paths):
        parts.append(str(path))
        try:
            parts.append(path.read_bytes())
        except OSError:
            parts.append(b"")
    return digest(*parts)


def environment() -> str:
    """What dd's results depend on besides the inputs: dd's own source files, Python, and the
    installed libraries (each by its location, size and modification time; found without
    importing them)."""
    here = Path(__file__).resolve().parent
    parts: list[str | bytes] = [VERSION, sys.version, files_digest(sorted(here.rglob("*.py")))]
    for name in _LIBRARIES:
        spec = importlib.util.find_spec(name)
        origin = spec.origin if spec is not None else None
        if origin is None:
            parts.append(f"{name}:absent")
            continue
        stat = os.stat(origin)
        parts.append(f"{name}:{origin}:{stat.st_size}:{stat.st_mtime_ns}")
    return digest(*parts)


class Cache:
    """Entries under `directory` (None: a cache that never hits and stores nothing)."""

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory

    def get(self, name: str, key: str) -> Any | None:
        """The value stored for `name` when it was stored with `key`, else None."""
        if self.directory is None:
            return None
        try:
            entry = json.loads(self._path(name).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(entry, dict) or entry.get("key") != key:
            return None
        return entry.get("value")

    def put(self, name: str, key: str, value: Any) -> None:
        """Store `value` (JSON-serialisable) for `name` under `key`; failures are ignored."""
        if self.directory is None:
            return
        path = self._path(name)
        try:
            self._prepare()
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".entry.", dir=path.parent)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(json.dumps({"key": key, "value": value}))  # one shot: the C encoder
            os.replace(tmp, path)
        except OSError:
            return

    def _path(self, name: str) -> Path:
        assert self.directory is not None
        return self.directory / f"v{VERSION}" / f"{digest(name)[:32]}.json"

    def _prepare(self) -> None:
        """Create the directory with a `.gitignore` of `*`, so it never lands in a commit."""
        assert self.directory is not None
        ignore = self.directory / ".gitignore"
        if not ignore.exists():
            self.directory.mkdir(parents=True, exist_ok=True)
            ignore.write_text("# created by dd: a cache, safe to delete\n*\n", encoding="utf-8")
