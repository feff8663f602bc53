"""The step workflow end to end in a temporary git repository: init, plan, start, expand,
verify, done (exactly one commit per step) and every refusal leaving the tree unchanged."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

from tests.conftest import CACHE, REPO

BASE = (Path(__file__).parent / "data" / "steps" / "base.md").read_text(encoding="utf-8")
DOC = "design/pool.md"
STEP1_TEST = (
    "def test_pool_type():\n    from demo.pool import GpuPool\n\n    assert GpuPool.num_gpus == 8\n"
)
STEP2_TEST = "def test_shrink():\n    from demo.pool import GpuPool\n\n    assert GpuPool().shrink_sampler([1, 2]) == [1, 2]\n"


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, check=True, capture_output=True, text=True
    ).stdout


def without_plan(text: str) -> str:
    start, end = text.index("## 6. Implementation plan"), text.index("## 7.")
    return text[:start] + "## 6. Implementation plan\n\nTo be planned.\n\n" + text[end:]


def state(root: Path) -> tuple[dict[str, bytes], str, str]:
    """Every file outside .git, plus HEAD and `git status` (to prove a refusal changed nothing)."""
    files = {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.parts and "__pycache__" not in p.parts
        and CACHE not in p.parts
    }
    return (
        files,
        git(root, "rev-parse", "HEAD"),
        git(root, "status", "--porcelain", "--untracked-files=all"),
    )


def run_module(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`python -m generator ARGS` as a user runs it."""
    env = dict(os.environ, PYTHONPATH=str(REPO), DD_TODAY="2026-11-22")
    return subprocess.run(
        [sys.executable, "-m", "generator", *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.fixture
def project(tmp_path: Path, dd: Callable[..., Result], monkeypatch: pytest.MonkeyPatch) -> Path:
    """`dd init` + a two-spec document planned by `dd plan` + the steps' tests, all committed."""
    monkeypatch.setenv("DD_TODAY", "2026-11-22")
    root = tmp_path / "proj"
    root.mkdir()
    git(root, "init", "-q")
    git(root, "config", "user.name", "Test")
    git(root, "config", "user.email", "test@example.com")
    assert dd(root, "init").exit_code == 0
    (root / DOC).write_text(without_plan(BASE), encoding="utf-8")
    planned = dd(root, "plan", DOC)
    assert planned.exit_code == 0, planned.output
    (root / "steps" / "pool").mkdir(parents=True)
    (root / "steps" / "pool" / "test_step1.py").write_text(STEP1_TEST)
    (root / "steps" / "pool" / "test_step2.py").write_text(STEP2_TEST)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "design and step tests")
    return root


def test_init_scaffolds_and_refuses_to_overwrite(tmp_path: Path, dd: Callable[..., Result]) -> None:
    result = dd(tmp_path, "init")
    assert result.exit_code == 0, result.output
    for path in (
        "pyproject.toml",
        "design/template.md",
        "patterns",
        "steps",
        "prompts",
        ".git",
        ".gitignore",
    ):
        assert (tmp_path / path).exists(), path
    assert "[tool.dd]" in (tmp_path / "pyproject.toml").read_text()
    before = {
        p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file() and ".git" not in p.parts
    }
    again = dd(tmp_path, "init")
    assert again.exit_code == 1 and "refusing to overwrite" in again.output
    assert before == {
        p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file() and ".git" not in p.parts
    }


def test_plan_then_validate(project: Path, dd: Callable[..., Result]) -> None:
    text = (project / DOC).read_text()
    assert "### Step 1: Infrastructure: GpuPool" in text and "### Step 2:" in text
    assert "- verify: `steps/pool/test_step1.py`" in text
    again = dd(project, "plan", DOC)  # a plan exists: validate only, nothing written
    assert again.exit_code == 0 and (project / DOC).read_text() == text
    (project / DOC).write_text(text.replace("- depends on: 1", "- depends on: none"))
    bad = dd(project, "plan", DOC)
    assert bad.exit_code == 1
    assert f"{DOC}:" in bad.output and "error[DD077]" in bad.output


def test_full_step_loop(project: Path, dd: Callable[..., Result]) -> None:
    nxt = dd(project, "next")
    assert nxt.exit_code == 0 and "Step 1: Infrastructure: GpuPool" in nxt.output

    failed = dd(project, "step", "verify", "1")  # the code does not exist yet
    assert failed.exit_code == 1 and "FAIL  steps/pool/test_step1.py" in failed.output

    assert dd(project, "step", "start", "1").exit_code == 0
    assert "- status: IN_PROGRESS" in (project / DOC).read_text()
    assert dd(project, "expand").exit_code == 0
    passed = dd(project, "step", "verify", "1")
    assert passed.exit_code == 0 and "PASS  steps/pool/test_step1.py" in passed.output

    head = git(project, "rev-parse", "HEAD").strip()
    done = run_module(project, "step", "done", "1")
    assert done.returncode == 0, done.stdout + done.stderr
    assert git(project, "rev-list", "--count", f"{head}..HEAD").strip() == "1"
    assert git(project, "log", "-1", "--format=%s").strip() == "Step 1: Infrastructure: GpuPool"
    assert f"Dd-Step: {DOC}#1" in git(project, "log", "-1", "--format=%b")
    assert git(project, "status", "--porcelain") == ""
    committed = git(project, "show", "--name-only", "--format=", "HEAD").split()
    assert sorted(committed) == ["demo/__init__.py", "demo/pool.py", DOC]
    diff = git(project, "diff", "-U0", f"{head}..HEAD", "--", DOC).splitlines()
    changed = [line for line in diff if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    assert changed == [
        "-- status: NOT_STARTED",
        "+- status: DONE",
        "+- date: 2026-11-22",
        "+- verified: passed (1 check); mutants 2/2 killed, score 1.00",
    ]

    status = json.loads(dd(project, "status", "--json").output)
    (doc,) = status["docs"]
    assert doc["path"] == DOC and doc["version"] == "0.1.0"
    assert doc["steps"][0] == {
        "id": 1,
        "title": "Infrastructure: GpuPool",
        "status": "DONE",
        "depends_on": [],
        "methods": ["GpuPool"],
        "verify": ["steps/pool/test_step1.py"],
        "mutation": {"killed": 2, "mutants": 2, "accepted": 0, "sampled_from": 2, "score": 1.0},
        "commit": git(project, "rev-parse", "HEAD").strip(),
    }
    assert doc["steps"][1]["status"] == "NOT_STARTED" and doc["steps"][1]["commit"] is None
    assert dd(project, "status", "--short").output.splitlines() == [
        "1 document(s), 2 step(s): 1 DONE, 1 NOT_STARTED (`dd status`: all)",
        f"  {DOC} (0.1.0): Step 2 NOT_STARTED",
    ]
    assert "Step 2:" in dd(project, "next").output

    # Step 2 straight to done: it is started, expanded, verified and committed in one go
    done2 = dd(project, "step", "done", "2")
    assert done2.exit_code == 0, done2.output
    assert git(project, "log", "-1", "--format=%s").startswith("Step 2: ")
    assert "all steps are DONE" in dd(project, "next").output


def test_done_refuses_when_a_dependency_is_not_done(
    project: Path, dd: Callable[..., Result]
) -> None:
    before = state(project)
    result = dd(project, "step", "done", "2")
    assert result.exit_code == 1 and "depends on Step 1 (NOT_STARTED)" in result.output
    assert state(project) == before


def test_done_refuses_with_an_unrelated_dirty_file(
    project: Path, dd: Callable[..., Result]
) -> None:
    (project / "notes.txt").write_text("unrelated\n")
    before = state(project)
    result = dd(project, "step", "done", "1")
    assert (
        result.exit_code == 1
        and "outside Step 1's files" in result.output
        and "notes.txt" in result.output
    )
    assert state(project) == before


@pytest.mark.parametrize("started", [False, True])
def test_done_refuses_when_verification_fails(
    project: Path, dd: Callable[..., Result], started: bool
) -> None:
    (project / "steps/pool/test_step1.py").write_text(STEP1_TEST.replace("== 8", "== 9"))
    git(project, "commit", "-q", "-am", "a wrong test")
    if started:
        assert dd(project, "step", "start", "1").exit_code == 0
        assert dd(project, "expand").exit_code == 0
    before = state(project)
    result = dd(project, "step", "done", "1")
    assert result.exit_code == 1 and "FAIL  steps/pool/test_step1.py" in result.output
    assert "verification of Step 1 failed" in result.output
    assert state(project) == before
    assert (project / "demo").exists() is started


def test_done_reports_a_failing_commit_and_changes_nothing(
    project: Path, dd: Callable[..., Result]
) -> None:
    hook = project / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\necho hook says no >&2\nexit 1\n")
    hook.chmod(0o755)
    before = state(project)
    result = dd(project, "step", "done", "1")  # a GitError used to escape as a traceback
    assert result.exit_code == 1
    assert "error: the commit of Step 1 failed" in result.output and "hook says no" in result.output
    assert state(project) == before


def test_verify_without_items_fails(project: Path, dd: Callable[..., Result]) -> None:
    text = (project / DOC).read_text().replace("- verify: `steps/pool/test_step1.py`\n", "")
    (project / DOC).write_text(text)
    result = dd(project, "step", "verify", "1")
    assert result.exit_code == 1 and "no `verify:` items" in result.output


def test_cmd_verify_items_and_no_commit(project: Path, dd: Callable[..., Result]) -> None:
    text = (
        (project / DOC)
        .read_text()
        .replace(
            "- verify: `steps/pool/test_step1.py`",
            '- verify: `steps/pool/test_step1.py`, `cmd: python -c "import demo.pool"`',
        )
    )
    (project / DOC).write_text(text)
    head = git(project, "rev-parse", "HEAD")
    result = dd(project, "step", "done", "1", "--no-commit")
    assert result.exit_code == 0, result.output
    assert "PASS  cmd: python -c" in result.output
    assert git(project, "rev-parse", "HEAD") == head
    assert "- verified: passed (2 checks)" in (project / DOC).read_text()


def test_doc_option_required_with_two_plans(project: Path, dd: Callable[..., Result]) -> None:
    (project / "design" / "other.md").write_text(
        BASE.replace("package: demo", "package: other").replace("`demo.pool`", "`other.pool`")
    )
    result = dd(project, "step", "start", "1")
    assert result.exit_code == 1 and "--doc" in result.output
    assert dd(project, "step", "start", "1", "--doc", DOC).exit_code == 0
    assert "- status: IN_PROGRESS" in (project / DOC).read_text()
    assert (
        "NOT_STARTED"
        in (project / "design" / "other.md").read_text().split("### Step 1")[1].split("###")[0]
    )


def test_graph_write_and_prompts(project: Path, dd: Callable[..., Result]) -> None:
    before = (project / DOC).read_text()
    shown = dd(project, "graph", "--format", "dot")
    assert shown.exit_code == 0 and "cluster_step1" in shown.output
    assert dd(project, "graph", "--write").exit_code == 0
    after = (project / DOC).read_text()
    assert "```mermaid\nflowchart TD\n" in after
    assert after.replace(after[after.index("```mermaid") : after.index("### Step 1")], "") == before
    assert dd(project, "graph", "--write").exit_code == 0  # replaced, not duplicated
    assert (project / DOC).read_text() == after

    impl = dd(project, "prompt", "implement-step", "2")
    assert impl.exit_code == 0, impl.output
    assert "def shrink_sampler" in impl.output and "steps/pool/test_step2.py" in impl.output
    review = dd(project, "prompt", "review-section", "5.1.1")
    assert review.exit_code == 0 and "5.1.2 `GpuPool.shrink_sampler`" in review.output

    git(project, "commit", "-q", "-am", "graph")
    rev = git(project, "rev-parse", "HEAD").strip()
    (project / DOC).write_text(
        after.replace('"""GPUs serving rollout."""', '"""GPUs serving rollout, now smaller."""')
    )
    consistency = dd(project, "prompt", "consistency-after-change", "--since", rev)
    assert consistency.exit_code == 0, consistency.output
    assert (
        "now smaller" in consistency.output
        and "5.1.2 `GpuPool.shrink_sampler`" in consistency.output
    )

    (project / "prompts" / "mine.j2").write_text("doc {{ doc.path }} args {{ args | join(',') }}\n")
    assert dd(project, "prompt", "mine", "a", "b").output == f"doc {DOC} args a,b\n"
    assert dd(project, "prompt", "nope").exit_code == 1


def test_revision_check_against_head(project: Path) -> None:
    from generator.project import Project

    text = (project / DOC).read_text()
    (project / DOC).write_text(
        text.replace("version: 0.1.0", "version: 0.2.0").replace("| 0.1.0 |", "| 0.2.0 |")
    )
    found = [d for d in Project.load(project).check() if d.code == "DD080"]
    assert [(d.loc.path, d.severity) for d in found] == [(DOC, "warning")]
    assert "changed from 0.1.0 to 0.2.0 since HEAD" in found[0].message


def test_done_commits_every_module_the_document_edit_changed(project: Path, dd: Callable[..., Result]) -> None:
    """A version bump changes the header of every module of the document, including modules
    that hold none of the step's specs: the step's commit must include them (clean tree after)."""
    extra = '### 5.2 Module `demo.extra`\n\n```python\n"""Constants."""\n\nLIMIT = 8\n```\n\n## 6. Implementation plan'
    text = (project / DOC).read_text().replace("## 6. Implementation plan", extra, 1)
    (project / DOC).write_text(text)
    git(project, "commit", "-q", "-am", "design: demo.extra")
    assert dd(project, "step", "done", "1").exit_code == 0
    assert "demo/extra.py" in git(project, "show", "--name-only", "--format=", "HEAD").split()

    text = (project / DOC).read_text().replace("version: 0.1.0", "version: 0.2.0", 1)
    text = text.replace("| 0.1.0 |", "| 0.2.0 | 2026-11-22 | shrink |\n| 0.1.0 |", 1)
    (project / DOC).write_text(text)
    done = dd(project, "step", "done", "2")
    assert done.exit_code == 0, done.output
    committed = git(project, "show", "--name-only", "--format=", "HEAD").split()
    assert "demo/extra.py" in committed and "demo/pool.py" in committed
    assert git(project, "status", "--porcelain") == ""
    assert (project / "demo/extra.py").read_text().splitlines()[1].startswith("# GPU pool")
    assert " 0.2.0: edit the design document" in (project / "demo/extra.py").read_text()


def test_init_project_installs_with_pip_and_imports(tmp_path: Path, dd: Callable[..., Result]) -> None:
    """The quick start ends with `pip install -e .` and an import: `dd init` writes a build
    system that installs the generated package (no PYTHONPATH)."""
    import site

    root = tmp_path / "widgets"
    root.mkdir()
    assert dd(root, "init").exit_code == 0
    assert dd(root, "new", "counter").exit_code == 0  # the package is the project's: widgets
    assert "package: widgets" in (root / "design/counter.md").read_text()
    assert dd(root, "check").exit_code == 0
    assert dd(root, "expand").exit_code == 0
    env_dir = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)], check=True)
    python = env_dir / "bin" / "python"
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()
    # the new environment sees this one's packages (hatchling, dd's dependencies) through a .pth
    Path(purelib, "outer.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
         "--no-build-isolation", "-e", str(root)],
        check=True,
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    probe = "import widgets.counter as m; r = m.Registry(2); r.add('a'); print(m.__file__)"
    proc = subprocess.run(
        [python, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(root / "widgets" / "counter.py")


def test_check_as_a_process_reports_through_a_pipe(project: Path) -> None:
    """`dd check` ends its process without Python's teardown (generator/cli.py `main`): what it
    printed still reaches a pipe, in order, with the exit status the command chose."""
    clean = run_module(project, "check", "--format", "json")
    assert clean.returncode == 0 and json.loads(clean.stdout) == {"diagnostics": []}
    text = (project / DOC).read_text()
    (project / DOC).write_text(text.replace("- deps: none", "- dependencies: none", 1))
    broken = run_module(project, "check")
    assert broken.returncode == 1
    assert "pool.md:38:3: error[DD060]: unknown field `dependencies`" in broken.stdout
    assert "1 error(s)" in broken.stderr
