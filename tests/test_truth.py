"""The documents and the code never disagree: nothing dd stops recognising is dropped silently, and
no step is DONE without its verified commit. Each test here failed before dd checked it."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

from tests.conftest import make_project, snapshot

Dd = Callable[..., Result]


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=T", "-c", "user.email=t@example.com", *args],
        cwd=root,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def diagnostics(result: Result) -> list[tuple[str, int, str, str]]:
    """(path, line, severity, code) of every diagnostic line dd printed."""
    found = re.findall(r"^(\S+?):(\d+):\d+: (error|warning)\[(DD\d{3})\]", result.output, re.M)
    return [(path, int(line), severity, code) for path, line, severity, code in found]


def planned(template_doc: Callable[[str], str], package: str, verify: str = "") -> str:
    """The template document for `package` with a two-step plan (verify: `cmd:` items that
    import the generated module, unless `verify` names something else)."""
    check = verify or f'`cmd: python -c "import {package}.registry"`'
    plan = (
        "### Step 1: Registry\n- status: NOT_STARTED\n- depends on: none\n"
        "- methods: `Registry`, `Registry.__init__`\n- purpose: the registry.\n"
        f"- verify: {check}\n\n"
        "### Step 2: Add\n- status: NOT_STARTED\n- depends on: 1\n"
        "- methods: `Registry.add`\n- purpose: adding slots.\n"
        f"- verify: {check}\n\n"
    )
    text = template_doc(package)
    start, end = text.index("No plan yet"), text.index("## 7.")
    return text[:start] + plan + text[end:]


@pytest.fixture
def repo(tmp_path: Path, dd: Dd, template_doc: Callable[[str], str], monkeypatch) -> Path:
    """A git project with two documents whose Step 1 is DONE (by `dd step done`, committed)."""
    monkeypatch.setenv("DD_TODAY", "2026-11-22")
    root = make_project(
        tmp_path,
        {"alpha.md": planned(template_doc, "alpha"), "beta.md": planned(template_doc, "beta")},
    )
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "design")
    for doc in ("design/alpha.md", "design/beta.md"):
        done = dd(root, "step", "done", "1", "--doc", doc)
        assert done.exit_code == 0, done.output
    assert git(root, "status", "--porcelain") == ""
    return root


# --------------------------------------------------------------------------- nothing dropped


def test_blank_line_before_the_front_matter_is_an_error(repo: Path, dd: Dd) -> None:
    doc = repo / "design/beta.md"
    doc.write_text("\n" + doc.read_text())
    before = snapshot(repo)
    checked = dd(repo, "check")
    assert checked.exit_code == 1
    assert ("design/beta.md", 1, "error", "DD001") in diagnostics(checked)
    assert "line 1 is blank" in checked.output
    assert dd(repo, "expand", "--check").exit_code == 1
    assert dd(repo, "status").exit_code == 1
    expanded = dd(repo, "expand")
    assert expanded.exit_code == 1
    assert (repo / "beta/registry.py").is_file()  # the DONE step's module is kept
    assert snapshot(repo) == before


def test_emptied_document_is_an_error(repo: Path, dd: Dd) -> None:
    (repo / "design/beta.md").write_text("")
    checked = dd(repo, "check")
    assert checked.exit_code == 1
    assert ("design/beta.md", 1, "error", "DD001") in diagnostics(checked)
    assert "empty file" in checked.output
    assert dd(repo, "expand", "--check").exit_code == 1
    assert dd(repo, "status").exit_code == 1
    assert dd(repo, "expand").exit_code == 1
    assert (repo / "beta/registry.py").is_file()


def test_deleted_document_keeps_its_module_and_reports_it(repo: Path, dd: Dd) -> None:
    (repo / "design/beta.md").unlink()
    before = snapshot(repo)
    checked = dd(repo, "check")
    assert checked.exit_code == 1
    assert ("beta/registry.py", 1, "error", "DD102") in diagnostics(checked)
    assert "its design document design/beta.md is gone" in checked.output
    drift = dd(repo, "expand", "--check")
    assert drift.exit_code == 1 and "would delete beta/registry.py" in drift.output
    status = dd(repo, "status")
    assert status.exit_code == 1 and "beta/registry.py:1:1: error[DD102]" in status.output
    expanded = dd(repo, "expand")
    assert expanded.exit_code == 1 and "--prune" in expanded.output
    assert snapshot(repo) == before  # the committed module of the DONE step is still there
    pruned = dd(repo, "expand", "--prune")
    assert pruned.exit_code == 0, pruned.output
    assert not list((repo / "beta").rglob("*.py")) and (repo / "alpha/registry.py").is_file()
    assert dd(repo, "check").exit_code == 0


def test_a_file_that_is_not_markdown_is_reported_unless_excluded(repo: Path, dd: Dd) -> None:
    (repo / "design/notes.txt").write_text("ideas\n")
    (repo / "design/.beta.md.swp").write_text("editor state")  # hidden: not a document
    checked = dd(repo, "check")
    assert checked.exit_code == 1
    assert diagnostics(checked) == [("design/notes.txt", 1, "error", "DD001")]
    assert "[tool.dd] exclude" in checked.output
    pyproject = repo / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace("exclude = []", 'exclude = ["design/*.txt"]'))
    assert dd(repo, "check").exit_code == 0


# --------------------------------------------------------------------------- no phantom DONE


def mark_done_by_hand(doc: Path, number: int, fields: str) -> None:
    text = doc.read_text()
    heading = text.index(f"### Step {number}:")
    status = text.index("- status: NOT_STARTED", heading)
    text = text[:status] + "- status: DONE" + text[status + len("- status: NOT_STARTED") :]
    end = text.index("\n\n", status)
    doc.write_text(text[:end] + fields + text[end:])


def test_step_marked_done_by_hand_is_caught(repo: Path, dd: Dd) -> None:
    doc = repo / "design/alpha.md"
    mark_done_by_hand(doc, 2, "\n- date: 2026-11-22\n- verified: passed (1 check)")
    git(repo, "commit", "-q", "-am", "Step 2 is done, trust me")
    status_line = doc.read_text().splitlines().index("- status: DONE", 100) + 1
    checked = dd(repo, "check")
    assert checked.exit_code == 1
    assert ("design/alpha.md", status_line, "error", "DD081") in diagnostics(checked)
    assert "Dd-Step: design/alpha.md#2" in checked.output


def test_done_step_without_date_or_verified_is_caught(repo: Path, dd: Dd) -> None:
    doc = repo / "design/alpha.md"
    mark_done_by_hand(doc, 2, "")
    status_line = doc.read_text().splitlines().index("- status: DONE", 100) + 1
    checked = dd(repo, "check")
    assert checked.exit_code == 1
    assert ("design/alpha.md", status_line, "error", "DD071") in diagnostics(checked)
    assert "no `date:` or `verified:`" in checked.output


def test_done_steps_of_a_shallow_clone_or_an_export_are_warnings(
    repo: Path, tmp_path_factory: pytest.TempPathFactory, dd: Dd
) -> None:
    elsewhere = tmp_path_factory.mktemp("copies")  # outside the repository
    shallow = elsewhere / "shallow"
    git(elsewhere, "clone", "-q", "--depth", "1", f"file://{repo}", str(shallow))
    checked = dd(shallow, "check")
    assert checked.exit_code == 0, checked.output
    warnings = [d for d in diagnostics(checked) if d[3] == "DD081"]
    assert warnings and all(severity == "warning" for _, _, severity, _ in warnings)
    assert "shallow" in checked.output
    exported = elsewhere / "exported"
    exported.mkdir()
    subprocess.run(
        f"git -C {repo} archive HEAD | tar -x -C {exported}", shell=True, check=True
    )
    checked = dd(exported, "check")
    assert checked.exit_code == 0, checked.output
    assert "not a git checkout" in checked.output


def test_missing_verify_file_warns_before_the_step_starts_and_fails_after(
    tmp_path: Path, dd: Dd, template_doc: Callable[[str], str]
) -> None:
    text = planned(template_doc, "gamma", verify="`steps/gamma/test_step.py`")
    root = make_project(tmp_path, {"gamma.md": text})
    checked = dd(root, "check")
    assert checked.exit_code == 0, checked.output
    found = diagnostics(checked)
    assert [(sev, code) for _, _, sev, code in found] == [("warning", "DD082")] * 2
    assert "steps/gamma/test_step.py, which does not exist" in checked.output
    doc = root / "design/gamma.md"
    doc.write_text(doc.read_text().replace("- status: NOT_STARTED", "- status: IN_PROGRESS", 1))
    checked = dd(root, "check")
    assert checked.exit_code == 1
    assert ("error", "DD082") in [(sev, code) for _, _, sev, code in diagnostics(checked)]
    (root / "steps/gamma").mkdir(parents=True)
    (root / "steps/gamma/test_step.py").write_text("def test_ok():\n    pass\n")
    assert dd(root, "check").exit_code == 0


# --------------------------------------------------------------------------- small holes


def with_spec(text: str, spec: str) -> str:
    """`text` (the template document) with `spec` added at the end of Section 5."""
    return text.replace("## 6. Implementation plan", spec + "\n## 6. Implementation plan", 1)


TAKE = '''#### 5.1.4 `Registry.take`

- deps: `Registry.add`

```python
def take(self, name: str) -> int:
    """Remove slot `name` and return its count."""
    # VAL: VAL_IN_SET(name, self.slots)
    return self.slots.pop(name)
```
'''


def test_tab_indented_spec_body_is_rejected_at_its_line(
    tmp_path: Path, dd: Dd, template_doc: Callable[[str], str]
) -> None:
    tabbed = TAKE.replace("\n    ", "\n\t")  # the whole body, consistently: valid Python
    text = with_spec(template_doc("demo"), tabbed)
    root = make_project(tmp_path, {"reg.md": text})
    checked = dd(root, "check")
    assert checked.exit_code == 1
    line = text.splitlines().index('\t"""Remove slot `name` and return its count."""') + 1
    assert diagnostics(checked) == [("design/reg.md", line, "error", "DD038")]
    before = snapshot(root)
    assert dd(root, "expand").exit_code == 1 and snapshot(root) == before


def test_unclosed_code_fence_is_named_at_its_opening_line(
    tmp_path: Path, dd: Dd, template_doc: Callable[[str], str]
) -> None:
    text = with_spec(template_doc("demo"), TAKE.removesuffix("```\n"))
    root = make_project(tmp_path, {"reg.md": text})
    checked = dd(root, "check")
    assert checked.exit_code == 1
    opening = text.splitlines().index("def take(self, name: str) -> int:")  # the fence is above
    assert diagnostics(checked) == [("design/reg.md", opening, "error", "DD039")]
    assert "never closed" in checked.output


def test_duplicate_method_is_one_error(
    tmp_path: Path, dd: Dd, template_doc: Callable[[str], str]
) -> None:
    text = planned(template_doc, "demo")
    start, end = text.index("#### 5.1.3"), text.index("## 6.")
    text = text[:end] + text[start:end].replace("5.1.3", "5.1.4") + text[end:]
    root = make_project(tmp_path, {"reg.md": text})
    checked = dd(root, "check")
    assert checked.exit_code == 1
    second = text.splitlines().index("#### 5.1.4 `Registry.add`") + 1
    assert [d for d in diagnostics(checked) if d[2] == "error"] == [
        ("design/reg.md", second, "error", "DD040")
    ]


def test_nul_byte_is_reported_as_nul(tmp_path: Path, dd: Dd, template_doc) -> None:
    text = template_doc("demo").replace("What hurts today", "What \0hurts today")
    root = make_project(tmp_path, {"reg.md": text})
    checked = dd(root, "check")
    assert checked.exit_code == 1
    line = text[: text.index("\0")].count("\n") + 1
    assert diagnostics(checked) == [("design/reg.md", line, "error", "DD001")]
    assert "NUL byte" in checked.output


def test_bad_version_says_what_a_version_looks_like(tmp_path: Path, dd: Dd, template_doc) -> None:
    root = make_project(tmp_path, {"reg.md": template_doc("demo").replace("0.1.0\n", "v1\n", 1)})
    checked = dd(root, "check")
    assert checked.exit_code == 1
    assert "`MAJOR.MINOR` or `MAJOR.MINOR.PATCH`, such as 0.1 or 1.2.0" in checked.output
    assert "\\d" not in checked.output  # no regular expression


def test_check_messages_show_bounded_values(
    tmp_path: Path, dd: Dd, template_doc: Callable[[str], str]
) -> None:
    root = make_project(tmp_path, {"reg.md": with_spec(template_doc("demo"), TAKE)})
    assert dd(root, "expand").exit_code == 0
    table = {f"slot{i}": i for i in range(100_000)}
    probe = (
        "import sys; sys.path.insert(0, '.')\n"
        "from demo.registry import Registry\n"
        "r = Registry(2)\n"
        f"r.slots = {{f'slot{{i}}': i for i in range({len(table)})}}\n"
        "try:\n    r.take('nope')\nexcept ValueError as exc:\n    print(exc)\n"
    )
    proc = subprocess.run(
        ["python", "-c", probe], cwd=root, capture_output=True, text=True, check=True
    )
    message = proc.stdout.strip()
    assert message.startswith("VAL_IN_SET failed in Registry.take (design/reg.md:")
    assert "name='nope'" in message and "self.slots={" in message and "...}" in message
    assert len(message) < 300


def test_plan_replaces_the_templates_no_plan_sentence(tmp_path: Path, dd: Dd, template_doc) -> None:
    root = make_project(tmp_path, {"reg.md": template_doc("demo")})
    assert dd(root, "plan", "design/reg.md").exit_code == 0
    text = (root / "design/reg.md").read_text()
    assert "No plan yet" not in text
    assert "## 6. Implementation plan\n\n### Step 1:" in text
