"""`[tool.dd]` configuration: where documents, pattern directories, steps and output live."""

from __future__ import annotations

import codecs
import fnmatch
import tomllib
from pathlib import Path

from pydantic import Field, ValidationError

from generator.models import DDError, Diagnostic, Loc, Model


class Config(Model):
    """The `[tool.dd]` table of pyproject.toml; paths are relative to `root`."""

    root: Path
    docs: list[str] = Field(default_factory=lambda: ["design"])
    exclude: list[str] = Field(default_factory=lambda: ["design/template.md", "design/FORMAT.md"])
    patterns: list[str] = Field(default_factory=list)
    output: str = "."
    steps: str = "steps"
    prompts: str = "prompts"  # project prompt templates (`<NAME>.j2`), overriding the shipped ones

    @property
    def output_dir(self) -> Path:
        return (self.root / self.output).resolve()

    @property
    def steps_dir(self) -> Path:
        return (self.root / self.steps).resolve()

    def pattern_dirs(self) -> list[Path]:
        return [(self.root / p).resolve() for p in self.patterns]

    def rel(self, path: Path) -> str:
        """`path` relative to the project root when inside it, else absolute; always with `/`."""
        path = path.resolve()
        try:
            return path.relative_to(self.root.resolve()).as_posix()
        except ValueError:
            return path.as_posix()

    def documents(self) -> list[Path]:
        """Design documents: `*.md` files under `docs` that open with front matter, sorted."""
        found: set[Path] = set()
        for entry in self.docs:
            base = (self.root / entry).resolve()
            candidates = sorted(base.rglob("*.md")) if base.is_dir() else [base]
            for path in candidates:
                if not path.is_file() or self._excluded(path):
                    continue
                with path.open("rb") as fh:
                    if fh.readline().removeprefix(codecs.BOM_UTF8).rstrip(b"\r\n") == b"---":
                        found.add(path)
        return sorted(found)

    def _excluded(self, path: Path) -> bool:
        rel = self.rel(path)
        return any(fnmatch.fnmatch(rel, pat) for pat in self.exclude)


def find_root(start: Path) -> Path:
    """The nearest directory at or above `start` holding a pyproject.toml (else `start`)."""
    start = start.resolve()
    for candidate in (start, *start.parents):
        if (candidate / "pyproject.toml").is_file():
            return candidate
    return start


def load_config(start: Path | None = None) -> Config:
    """Read `[tool.dd]` from the project's pyproject.toml; errors name the key path."""
    root = find_root(start or Path.cwd())
    pyproject = root / "pyproject.toml"
    table: dict[str, object] = {}
    if pyproject.is_file():
        try:
            data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:
            raise DDError(
                [Diagnostic(loc=Loc(path=str(pyproject)), code="DD002", message=f"invalid TOML: {exc}")]
            ) from None
        tool = data.get("tool", {})
        table = tool.get("dd", {}) if isinstance(tool, dict) else {}
    try:
        return Config(root=root, **table)
    except ValidationError as exc:
        diags = [
            Diagnostic(
                loc=Loc(path=str(pyproject)),
                code="DD002",
                message=f"[tool.dd].{'.'.join(str(p) for p in err['loc'])}: {err['msg']}",
            )
            for err in exc.errors()
        ]
        raise DDError(diags) from None
