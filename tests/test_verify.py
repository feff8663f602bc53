"""Running verify items: `verify_together` gives exactly the results of `run_checks` (each item
in its own process), also when the files only fail together or one of them fails alone."""

from __future__ import annotations

from pathlib import Path

from generator.models import Loc, Step
from generator.verify import run_checks, verify_together

PASSES = "def test_ok():\n    assert 1 + 1 == 2\n"
FAILS = "def test_bad():\n    assert 1 + 1 == 3\n"
# Passes alone; fails when a file that ran before it in the same process set the flag.
SETS = "import builtins\n\n\ndef test_set():\n    builtins.dd_flag = True\n"
NEEDS_FRESH = "import builtins\n\n\ndef test_fresh():\n    assert not hasattr(builtins, 'dd_flag')\n"


def step(number: int, *verify: str) -> Step:
    return Step(number=number, title=f"s{number}", loc=Loc(path="d.md"), verify=list(verify))


# Each pytest process appends a line to sessions.log, so a test can count them.
CONFTEST = (
    "from pathlib import Path\n\n\ndef pytest_sessionstart(session):\n"
    "    with open(Path(__file__).parent / 'sessions.log', 'a') as fh:\n"
    "        fh.write('session\\n')\n"
)
INI = "[pytest]\naddopts = --import-mode=importlib\n"


def sessions(root: Path) -> int:
    log = root / "sessions.log"
    return len(log.read_text().splitlines()) if log.exists() else 0


def write(root: Path, files: dict[str, str]) -> None:
    files = {"conftest.py": CONFTEST, "pytest.ini": INI, **files}
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def outcome(results: list) -> list[tuple[str, bool]]:
    return [(r.item, r.ok) for r in results]


def test_all_passing_files_pass_in_one_process(tmp_path: Path) -> None:
    # Same basename in two folders, a repeated item and a `cmd:`.
    write(tmp_path, {"steps/a/test_step1.py": PASSES, "steps/b/test_step1.py": PASSES})
    steps = [
        step(1, "steps/a/test_step1.py", "cmd: python -c 'pass'"),
        step(2, "steps/b/test_step1.py", "steps/a/test_step1.py"),
    ]
    got = verify_together(tmp_path, tmp_path, steps)
    assert outcome(got) == [
        ("steps/a/test_step1.py", True),
        ("cmd: python -c 'pass'", True),
        ("steps/b/test_step1.py", True),
    ]
    assert sessions(tmp_path) == 1  # both files in one pytest process


def test_a_failing_file_is_named_as_run_checks_names_it(tmp_path: Path) -> None:
    write(tmp_path, {"steps/a/test_step1.py": PASSES, "steps/a/test_step2.py": FAILS})
    items = ["steps/a/test_step1.py", "steps/a/test_step2.py", "steps/a/missing.py", "cmd: false"]
    steps = [step(1, items[0]), step(2, *items[1:])]
    got = verify_together(tmp_path, tmp_path, steps)
    alone = run_checks(tmp_path, tmp_path, items)
    assert outcome(got) == outcome(alone) == [
        (items[0], True),
        (items[1], False),
        (items[2], False),
        (items[3], False),
    ]
    assert "FAILED steps/a/test_step2.py::test_bad" in got[1].output
    assert sessions(tmp_path) == 1 + 2 + 2  # together, then each file alone, twice


def test_files_that_only_fail_together_get_their_own_verdict(tmp_path: Path) -> None:
    """The batch fails (the second file sees the first one's state); alone both pass, and
    `run_checks`' verdict is the one reported."""
    write(tmp_path, {"steps/a/test_step1.py": SETS, "steps/a/test_step2.py": NEEDS_FRESH})
    steps = [step(1, "steps/a/test_step1.py"), step(2, "steps/a/test_step2.py")]
    got = verify_together(tmp_path, tmp_path, steps)
    assert outcome(got) == [("steps/a/test_step1.py", True), ("steps/a/test_step2.py", True)]
    assert sessions(tmp_path) == 3
