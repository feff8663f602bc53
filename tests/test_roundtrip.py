"""A user's round trip through a real (non-editable) wheel install in a temporary directory.

`dd new`, edit, `dd check`, `dd expand`, import the result, trigger a VAL and an AST check and
read their messages; the built-in patterns and the template must come from inside the wheel.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Build the wheel and install it (no deps: they are in this environment) into a target dir."""
    base = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(base / "dist"), str(REPO)],
        check=True,
    )
    (wheel,) = (base / "dist").glob("rlsched-*.whl")
    site = base / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), str(wheel)], check=True)
    return site


def run(site: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(site)}
    return subprocess.run([str(site / "bin" / "dd"), *args], cwd=cwd, env=env, capture_output=True, text=True, check=False)


def test_wheel_round_trip(installed: Path, tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "pyproject.toml").write_text('[project]\nname = "widgets"\nversion = "0.1.0"\n\n[tool.dd]\n')

    made = run(installed, project, "new", "counter", "--package", "widgets")
    assert made.returncode == 0, made.stderr
    doc = project / "design" / "counter.md"
    text = doc.read_text()
    assert "package: widgets" in text

    # the user's edit: a new method spec with a VAL and an AST annotation
    spec = '''
#### 5.1.4 `Registry.take`

- deps: `Registry.add`

```python
def take(self, name: str, amount: int) -> int:
    """Remove `amount` from slot `name` and return what is left."""
    # VAL: VAL_IN_SET(name, self.slots)
    left = self.slots[name] - amount
    # AST: AST_POSTCONDITION(left >= 0)
    self.slots[name] = left
    return left
```
'''
    doc.write_text(text.replace("## 6. Implementation plan", spec.lstrip("\n") + "\n## 6. Implementation plan"))

    checked = run(installed, project, "check")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    expanded = run(installed, project, "expand")
    assert expanded.returncode == 0, expanded.stdout + expanded.stderr
    assert "widgets/counter.py" in expanded.stdout

    probe = '''
import widgets.counter as m, generator
assert "/site/" in generator.__file__, generator.__file__
r = m.Registry(4)
r.add("gpu", 3)
for call in (lambda: r.take("cpu", 1), lambda: r.take("gpu", 5)):
    try:
        call()
    except (ValueError, AssertionError) as exc:
        print(type(exc).__name__, exc)
'''
    env = {**os.environ, "PYTHONPATH": f"{project}{os.pathsep}{installed}"}
    proc = subprocess.run([sys.executable, "-O", "-c", probe], cwd=project, env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    val, ast_line = proc.stdout.strip().splitlines()
    assert val.startswith("ValueError VAL_IN_SET failed in Registry.take (design/counter.md:")
    assert "'cpu'" in val
    # AST checks survive `python -O` and name the condition and its values
    assert ast_line.startswith("AssertionError AST_POSTCONDITION violated in Registry.take (design/counter.md:")
    assert "left >= 0" in ast_line and "left=-2" in ast_line
