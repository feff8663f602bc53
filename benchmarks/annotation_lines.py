"""How many lines the expanded annotations take in the generated package (issue 17, item 1).

For every `# VAL:` / `# AST:` comment of a generated module, the lines from the comment (not
counted) to the end of the statements dd inserted after it, before the spec's next statement:
the first statement starting on the next line, and the one after it when that first one is the
`try:` of a rendered check that computes its verdict first (the old VAL_POSITIVE shape).

    python benchmarks/annotation_lines.py            # the working tree's rlsched/
    python benchmarks/annotation_lines.py 369c4d1    # a commit's rlsched/ (read with git)
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ANNOTATION = re.compile(r"^\s*# (VAL|AST): [A-Z0-9_]+\(")


def sources(rev: str | None) -> dict[str, str]:
    """path -> text of every generated module under rlsched/ (at `rev`, or on disk)."""
    if rev is None:
        return {p.relative_to(ROOT).as_posix(): p.read_text() for p in (ROOT / "rlsched").rglob("*.py")}
    names = subprocess.run(
        ["git", "ls-tree", "-r", "--name-only", rev, "rlsched/"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout.split()
    out = {}
    for name in names:
        if name.endswith(".py"):
            out[name] = subprocess.run(
                ["git", "show", f"{rev}:{name}"], cwd=ROOT, capture_output=True, text=True, check=True
            ).stdout
    return out


def expanded_lines(text: str) -> tuple[int, int]:
    """(annotations, lines of their expansions) in one module."""
    starts: dict[int, tuple[ast.stmt, ast.stmt | None]] = {}
    for node in ast.walk(ast.parse(text)):
        for field in ("body", "orelse", "finalbody", "handlers"):
            block = getattr(node, field, None)
            if isinstance(block, list):
                for i, stmt in enumerate(block):
                    if isinstance(stmt, ast.stmt):
                        starts[stmt.lineno] = (stmt, block[i + 1] if i + 1 < len(block) else None)
    count = total = 0
    for number, line in enumerate(text.splitlines(), start=1):
        if not ANNOTATION.match(line) or number + 1 not in starts:
            continue
        first, following = starts[number + 1]
        last = first
        if isinstance(first, ast.Try) and following is not None and "_dd_ok" in ast.unparse(first):
            last = following
        count += 1
        total += last.end_lineno - number  # type: ignore[operator]
    return count, total


def main() -> None:
    rev = sys.argv[1] if len(sys.argv) > 1 else None
    count = total = 0
    for _, text in sorted(sources(rev).items()):
        c, t = expanded_lines(text)
        count, total = count + c, total + t
    files = sources(rev)
    all_lines = sum(t.count("\n") for t in files.values())
    print(f"{rev or 'working tree'}: {count} annotations, {total} expanded lines "
          f"({total / max(count, 1):.1f} per annotation); rlsched/ {all_lines} lines in all")


if __name__ == "__main__":
    main()
