"""`[tool.dd]` configuration: where documents, pattern directories, steps and output live."""

from __future__ import annotations

import fnmatch
import tomllib
from pathlib import Path

from pydantic import ConfigDict, Field, ValidationError

from generator.models import DDError, Diagnostic, Loc, Model

BUILTIN_PATTERNS = "_builtin_patterns"  # where the wheel ships patterns/ (see pyproject.toml)


def builtin_pattern_dir() -> Path:
    """The built-in library: `generator/_builtin_patterns` in a wheel, `<repo>/patterns` else."""
    here = Path(__file__).resolve().parent
    shipped = here / BUILTIN_PATTERNS
    return shipped if shipped.is_dir() else here.parent / "patterns"


class Config(Model):
    """The `[tool.dd]` table of pyproject.toml; paths are relative to `root`."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    root: Path
    docs: list[str] = Field(default_factory=lambda: ["design"])
    exclude: list[str] = Field(default_factory=lambda: ["design/template.md", "design/FORMAT.md"])
    patterns: list[str] = Field(default_factory=list)
    output: str = "."
    steps: str = "steps"
    prompts: str = "prompts"  # project prompt templates (`<NAME>.j2`), overriding the shipped ones
    line_length: int = Field(default=100, alias="line-length", ge=40, le=320)  # generated code
    cache: str = ".dd_cache"  # results by content hash; "" turns caching off
    # `dd step done` refuses a step whose checks kill fewer of its mutants than this fraction
    # (surviving mutants listed under the step's `accepted mutants:` count as killed).
    mutation_floor: float = Field(default=0.6, alias="mutation-floor", ge=0, le=1)
    # Mutants `dd step done` runs per step (a seeded sample when the step has more).
    mutation_budget: int = Field(default=40, alias="mutation-budget", ge=1)

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

    @property
    def cache_dir(self) -> Path | None:
        return (self.root / self.cache).resolve() if self.cache else None

    def documents(self) -> list[Path]:
        """Every file under `docs` that is not excluded, sorted: each must be a design document
        (nothing there is skipped silently). Hidden files and directories (editor and tool
        files such as `.swp`) are not documents and are skipped."""
        found: set[Path] = set()
        for entry in self.docs:
            base = (self.root / entry).resolve()
            if base.is_file():
                found.add(base)
                continue
            for path in base.rglob("*") if base.is_dir() else []:
                hidden = any(part.startswith(".") for part in path.relative_to(base).parts)
                if path.is_file() and not hidden and not self._excluded(path):
                    found.add(path)
        return sorted(found)

    def _excluded(self, path: Path) -> bool:
        """Listed in `exclude`: a glob, or a directory containing `path`."""
        rel = self.rel(path)
        return any(
            fnmatch.fnmatch(rel, pat) or rel.startswith(pat.rstrip("/") + "/")
            for pat in self.exclude
        )


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
                [
                    Diagnostic(
                        loc=Loc(path=str(pyproject)), code="DD002", message=f"invalid TOML: {exc}"
                    )
                ]
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
