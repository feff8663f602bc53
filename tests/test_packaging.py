"""Install what you use: `pip install .` gives dd, the scheduler core and the simulator, and no
torch or ray; those come with the `runtime` extra.

The wheel is built from this checkout without the network. A fresh virtual environment gets the
wheel (no dependencies resolved: nothing is downloaded) and sees, through a `.pth` file, only the
packages its core requirements need, taken from the environment running the tests; `dd check`
must work there on a copy of this project, and `rlsched run` must be refused in one line.
"""

from __future__ import annotations

import importlib.metadata as metadata
import os
import re
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parent.parent
RUNTIME = {"ray", "torch", "transformers", "tokenizers", "vllm"}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation"]
    proc = subprocess.run(
        [*command, "--no-index", "-q", "-w", str(out), str(REPO)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (built,) = out.glob("rlsched-*.whl")
    return built


def requirements(wheel: Path) -> list[Requirement]:
    with zipfile.ZipFile(wheel) as zf:
        name = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        text = zf.read(name).decode()
    return [
        Requirement(line.split(":", 1)[1])
        for line in text.splitlines()
        if line.startswith("Requires-Dist:")
    ]


def _extra(req: Requirement) -> str | None:
    match = re.search(r'extra == "([^"]+)"', str(req.marker)) if req.marker else None
    return match.group(1) if match else None


def test_the_core_requires_neither_torch_nor_ray_and_the_extras_are_named(wheel: Path) -> None:
    reqs = requirements(wheel)
    core = {r.name.lower() for r in reqs if _extra(r) is None}
    assert not core & RUNTIME, core & RUNTIME
    assert {"click", "libcst", "pydantic", "ruff"} <= core
    by_extra: dict[str, set[str]] = {}
    for r in reqs:
        if _extra(r) is not None:
            by_extra.setdefault(_extra(r), set()).add(r.name.lower())  # type: ignore[arg-type]
    assert set(by_extra) == {"runtime", "vllm", "test"}  # no duplicate `model` extra
    assert {"ray", "torch", "transformers"} <= by_extra["runtime"]
    assert by_extra["vllm"] == {"vllm"} and not by_extra["test"] & RUNTIME


def _closure(names: set[str]) -> set[str]:
    """The installed distributions `names` need, their own requirements included (extras not)."""
    seen: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for line in metadata.distribution(name).requires or []:
            req = Requirement(line)
            if req.marker is not None and not req.marker.evaluate({"extra": ""}):
                continue
            todo.append(req.name.lower())
    return seen


def _link_distributions(names: set[str], into: Path) -> None:
    """Symlink the files' top-level entries of each distribution into `into`."""
    into.mkdir()
    for name in names:
        dist = metadata.distribution(name)
        for file in dist.files or []:
            top = file.parts[0]
            source = Path(str(dist.locate_file(top)))
            target = into / top
            if top not in ("..", "__pycache__") and source.exists() and not target.exists():
                target.symlink_to(source)


def test_dd_works_in_a_fresh_environment_without_the_runtime(wheel: Path, tmp_path: Path) -> None:
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=False)
    python = env_dir / "bin" / "python"
    install = [sys.executable, "-m", "pip", "--python", str(python), "install", "-q"]
    proc = subprocess.run(
        [*install, "--no-deps", "--no-index", str(wheel)], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    core = {r.name.lower() for r in requirements(wheel) if _extra(r) is None}
    needed = _closure(core)
    assert not needed & RUNTIME, needed & RUNTIME
    _link_distributions(needed, tmp_path / "core")
    site = next((env_dir / "lib").glob("python3*/site-packages"))
    (site / "core.pth").write_text(str(tmp_path / "core") + "\n")
    project = tmp_path / "project"
    project.mkdir()
    for part in ("pyproject.toml", "design", "steps", "rlsched"):
        source = REPO / part
        copy = shutil.copytree if source.is_dir() else shutil.copy2
        copy(source, project / part)
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(args, cwd=project, env=clean, capture_output=True, text=True)

    missing = run(
        str(python),
        "-c",
        "import importlib.util as u; print(u.find_spec('torch'), u.find_spec('ray'))",
    )
    assert missing.stdout.split() == ["None", "None"], missing.stdout + missing.stderr
    checked = run(str(env_dir / "bin" / "dd"), "check")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    # a copy, not a git checkout: DONE steps cannot be traced to their commits (warnings only)
    assert checked.stderr.startswith("0 error(s)"), checked.stdout + checked.stderr
    refused = run(str(env_dir / "bin" / "rlsched"), "run", "--help")
    assert refused.returncode == 1 and len(refused.stderr.splitlines()) == 1, refused.stderr
    assert "needs the `runtime` extra" in refused.stderr
