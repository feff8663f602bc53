"""The pattern library: loading (DD090), checking (DD050-DD053), rendering and golden files.

Each built-in pattern's `example` is rendered inside a small function and compared with
tests/golden/patterns/<ID>.py (set DD_UPDATE_GOLDEN=1 to rewrite them); the golden function is
then executed with passing and failing inputs and the exact failure message is checked.
"""

from __future__ import annotations

import ast
import builtins
import functools
import os
import reprlib
import shutil
import subprocess
import sys
import textwrap
import types
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import libcst
import pytest

from generator import checkmodule
from generator.expand import expand_tree
from generator.formatting import format_sources
from generator.models import Annotation, DDError, Loc
from generator.patterns import (
    Arg,
    PatternLibrary,
    builtin_pattern_dir,
    check_annotation,
    condition_names,
    render,
    render_annotation,
)
from tests.conftest import check_namespace

REPO = Path(__file__).resolve().parent.parent
GOLDEN_DIR = Path(__file__).parent / "golden" / "patterns"
DOC = "design/golden.md"
SYMBOL = "Golden.check"
ANN_LINE = 3  # the golden function's code starts at document line 1; the annotation is line 3


@pytest.fixture(scope="module")
def lib() -> PatternLibrary:
    return PatternLibrary.load([])


LIB = PatternLibrary.load([])


def ann(
    text: str, line: int = 7, path: str = "design/x.md", inline: bool = False
) -> Annotation:
    """`VAL: ID(args)` / `AST: ID(args)` (or bare `ID(args)`, kind from the prefix); `inline`:
    its spec says `- checks: inline`."""
    kind, call = (text[:3], text[5:]) if text[:5] in ("VAL: ", "AST: ") else ("", text)
    pattern, _, args = call.partition("(")
    assert args.endswith(")")
    return Annotation(
        kind=(kind or pattern[:3]),  # type: ignore[arg-type]
        pattern=pattern,
        args=args[:-1],
        loc=Loc(path=path, line=line),
        inline=inline,
    )


# --------------------------------------------------------------------------- golden files


def free_names(args: str) -> list[str]:
    """Names the example's arguments use (the golden function's parameters), in source order."""
    call = ast.parse(f"f({args})", mode="eval").body
    assert isinstance(call, ast.Call)
    bound = {
        n.id
        for comp in ast.walk(call)
        if isinstance(comp, ast.comprehension)
        for n in ast.walk(comp.target)
        if isinstance(n, ast.Name)
    }
    names = [
        n
        for n in ast.walk(call)
        if isinstance(n, ast.Name) and n is not call.func and n.id not in bound
    ]
    names.sort(key=lambda n: (n.lineno, n.col_offset))
    return list(dict.fromkeys(n.id for n in names if n.id not in dir(builtins)))


def example_function(pattern_id: str, extra_args: str = "") -> str:
    """The golden module of a pattern: its example (plus `extra_args`) expanded in a function
    `example`, the imports its checks need and the table of its check sites."""
    pattern = LIB.get(pattern_id)
    assert pattern is not None and pattern.example
    example = pattern.example[:-1] + extra_args + ")"
    annotation = ann(f"{pattern.kind}: {example}", line=ANN_LINE, path=DOC)
    code = (
        f"def example({', '.join(free_names(annotation.args))}):\n"
        f'    """Run the example of {pattern_id}."""\n'
        f"    # {pattern.kind}: {example}\n"
    )
    tree = libcst.parse_module(code)
    expanded, needs = expand_tree(tree, code, 1, [annotation], LIB, SYMBOL)
    imports = "import reprlib\n" if needs.reprlib else ""
    if needs.sites:
        imports += checkmodule.import_line("golden")
    table = "\n\n" + checkmodule.sites_table(DOC, needs.sites) if needs.sites else ""
    return imports + "\n\n" + expanded.code + table


@functools.cache
def golden_texts() -> dict[str, str]:
    """Every golden file: the example function in a module, as `dd expand` writes it (imports
    sorted, formatted by ruff), all formatted in one batch; and the check module of them all."""
    sources = {
        CHECKS_GOLDEN: "# Golden check module of the built-in patterns, checked by tests/test_patterns.py.\n"
        + checkmodule.module_source(list(LIB)).split("\n", 2)[2]
    }
    for pattern_id in LIB.ids():
        sources[pattern_id] = (
            f"# Golden rendering of the {pattern_id} example, checked by tests/test_patterns.py.\n"
            "# Regenerate with DD_UPDATE_GOLDEN=1 after a deliberate template change.\n\n"
            + example_function(pattern_id)
        )
    return format_sources(sources, 100, ["golden"])


CHECKS_GOLDEN = "_checks"


def golden_text(pattern_id: str) -> str:
    return golden_texts()[pattern_id]


def _install_golden_package() -> None:
    """`golden._checks`, the golden check module, importable as the goldens import it."""
    module = types.ModuleType("golden._checks")
    source = golden_texts()[CHECKS_GOLDEN]
    exec(compile(source, "golden/_checks.py", "exec"), module.__dict__)  # noqa: S102
    package = types.ModuleType("golden")
    package.__path__ = []  # type: ignore[attr-defined]
    package._checks = module  # type: ignore[attr-defined]
    sys.modules["golden"], sys.modules["golden._checks"] = package, module


def load_check(source: str) -> Any:
    """The `example` function defined by `source` (trusted: rendered by these tests)."""
    _install_golden_package()
    namespace: dict[str, Any] = {"reprlib": reprlib}
    exec(compile(source, "<golden>", "exec"), namespace)  # noqa: S102
    return namespace["example"]


def run_rendered(annotation: Annotation, symbol: str, params: str) -> Any:
    """A function `example(params)` whose body is `annotation` rendered, ready to call."""
    source, site = render(annotation, LIB, symbol)
    namespace = check_namespace(LIB, [site] if site else [], annotation.loc.path)
    body = f"def example({params}):\n" + textwrap.indent(source, "    ")
    exec(compile(body, "<rendered>", "exec"), namespace)  # noqa: S102
    return namespace["example"]


class PoolConfig:
    """A stand-in class for VAL_TYPE_CHECK's example."""


TRANSITIONS = {"idle": ("running",), "running": ("idle", "done")}

# pattern ID -> (passing arguments, [(failing arguments, exception, message after "expected ")])
CASES: dict[str, tuple[dict[str, Any], list[tuple[dict[str, Any], type, str]]]] = {
    "VAL_INT_RANGE": (
        {"target_gpus": [0, 7], "num_gpus": 8},
        [
            (
                {"target_gpus": [1, 9], "num_gpus": 8},
                ValueError,
                (
                    "every item of target_gpus to be an int in [0, num_gpus - 1]"
                    " (where item=9, num_gpus - 1=7)"
                ),
            ),
            (
                {"target_gpus": [True], "num_gpus": 8},
                ValueError,
                (
                    "every item of target_gpus to be an int in [0, num_gpus - 1]"
                    " (where item=True, num_gpus - 1=7)"
                ),
            ),
        ],
    ),
    "VAL_FLOAT_RANGE": (
        {"learning_rate": 0.5},
        [
            (
                {"learning_rate": 1.5},
                ValueError,
                "learning_rate to be a real number in [0.0, 1.0] (where learning_rate=1.5)",
            ),
            (
                {"learning_rate": float("nan")},
                ValueError,
                "learning_rate to be a real number in [0.0, 1.0] (where learning_rate=nan)",
            ),
            (
                {"learning_rate": "0.5"},
                ValueError,
                "learning_rate to be a real number in [0.0, 1.0] (where learning_rate='0.5')",
            ),
        ],
    ),
    "VAL_NON_EMPTY": (
        {"target_gpus": [3]},
        [({"target_gpus": []}, ValueError, "target_gpus to be non-empty (where target_gpus=[])")],
    ),
    "VAL_NO_DUPLICATES": (
        {"target_gpus": [1, 2, 3]},
        [
            (
                {"target_gpus": [1, 2, 1, 3, 2, 1]},
                ValueError,
                "no duplicate items in target_gpus (where duplicates=[1, 2])",
            )
        ],
    ),
    "VAL_TYPE_CHECK": (
        {"config": PoolConfig(), "PoolConfig": PoolConfig},
        [
            (
                {"config": {"a": 1}, "PoolConfig": PoolConfig},
                TypeError,
                (
                    "config to be an instance of PoolConfig"
                    " (where config={'a': 1}, type(config)=<class 'dict'>)"
                ),
            )
        ],
    ),
    "VAL_SUBSET": (
        {"target_gpus": [1], "free_gpus": [1, 2]},
        [
            (
                {"target_gpus": [1, 5, 6], "free_gpus": [1, 2]},
                ValueError,
                "every item of target_gpus to be in free_gpus (where extras=[5, 6], free_gpus=[1, 2])",
            )
        ],
    ),
    "VAL_IN_SET": (
        {"mode": "train"},
        [
            (
                {"mode": "eval"},
                ValueError,
                'mode to be one of {"rollout", "train"} (where mode=\'eval\')',
            )
        ],
    ),
    "VAL_NOT_NONE": (
        {"engine": 0},
        [({"engine": None}, ValueError, "engine to be not None")],
    ),
    "VAL_STATE_TRANSITION": (
        {"state": "idle", "new_state": "running", "TRANSITIONS": TRANSITIONS},
        [
            (
                {"state": "idle", "new_state": "done", "TRANSITIONS": TRANSITIONS},
                ValueError,
                (
                    "TRANSITIONS to allow the transition state -> new_state"
                    " (where state='idle', new_state='done', allowed=('running',))"
                ),
            ),
            (
                {"state": "gone", "new_state": "idle", "TRANSITIONS": TRANSITIONS},
                ValueError,
                (
                    "TRANSITIONS to allow the transition state -> new_state"
                    " (where state='gone', new_state='idle', allowed=())"
                ),
            ),
        ],
    ),
    "VAL_POSITIVE": (
        {"batch_size": 1},
        [
            ({"batch_size": 0}, ValueError, "batch_size to be a number > 0 (where batch_size=0)"),
            (
                {"batch_size": "5"},
                ValueError,
                "batch_size to be a number > 0 (where batch_size='5')",
            ),
            (
                {"batch_size": True},
                ValueError,
                "batch_size to be a number > 0 (where batch_size=True)",
            ),
        ],
    ),
    "VAL_NON_NEGATIVE": (
        {"timeout_s": 0.0},
        [
            (
                {"timeout_s": -1.5},
                ValueError,
                "timeout_s to be a number >= 0 (where timeout_s=-1.5)",
            ),
            (
                {"timeout_s": None},
                ValueError,
                "timeout_s to be a number >= 0 (where timeout_s=None)",
            ),
        ],
    ),
    "VAL_LEN_RANGE": (
        {"name": "pool"},
        [
            ({"name": ""}, ValueError, "len(name) in [1, 64] (where len(name)=0)"),
            ({"name": "x" * 65}, ValueError, "len(name) in [1, 64] (where len(name)=65)"),
        ],
    ),
    "VAL_DISJOINT": (
        {"rollout_gpus": [0, 1], "train_gpus": [2, 3]},
        [
            (
                {"rollout_gpus": [0, 1, 2], "train_gpus": [2, 3, 1]},
                ValueError,
                "rollout_gpus and train_gpus to share no item (where common=[1, 2])",
            )
        ],
    ),
    "VAL_KEYS_PRESENT": (
        {"config": {"model": "m", "num_gpus": 8}},
        [
            (
                {"config": {"model": "m"}},
                ValueError,
                'config to hold every key of ("model", "num_gpus") (where missing=[\'num_gpus\'])',
            )
        ],
    ),
    "VAL_SORTED": (
        {"boundaries": [1, 2, 3]},
        [
            (
                {"boundaries": [1, 2, 2, 3]},
                ValueError,
                "boundaries to be strictly ascending (where first unordered pair=(2, 2))",
            )
        ],
    ),
    "VAL_NON_BLANK": (
        {"model_name": "llama"},
        [
            (
                {"model_name": "  "},
                ValueError,
                "model_name to be a non-blank str (where model_name='  ')",
            ),
            (
                {"model_name": None},
                ValueError,
                "model_name to be a non-blank str (where model_name=None)",
            ),
        ],
    ),
    "AST_PRECONDITION": (
        {"ranks": [0, 1], "gpus": [4, 5]},
        [
            (
                {"ranks": [0], "gpus": [4, 5]},
                AssertionError,
                "len(ranks) == len(gpus) (where ranks=[0], gpus=[4, 5])",
            )
        ],
    ),
    "AST_POSTCONDITION": (
        {"offload_ranks": [1]},
        [
            (
                {"offload_ranks": []},
                AssertionError,
                "len(offload_ranks) > 0 (where offload_ranks=[])",
            )
        ],
    ),
    "AST_INVARIANT": (
        {"self": SimpleNamespace(free_gpus={1}, busy_gpus={2})},
        [
            (
                {"self": SimpleNamespace(free_gpus={1}, busy_gpus={1, 2})},
                AssertionError,
                (
                    "self.free_gpus.isdisjoint(self.busy_gpus)"
                    " (where self.free_gpus={1}, self.busy_gpus={1, 2})"
                ),
            )
        ],
    ),
}


def expected_message(pattern_id: str, tail: str) -> str:
    verb = "violated" if pattern_id.startswith("AST_") else "failed"
    return f"{pattern_id} {verb} in {SYMBOL} ({DOC}:{ANN_LINE}): expected {tail}"


def test_library_has_required_patterns_and_every_pattern_has_a_case(lib: PatternLibrary) -> None:
    required = {
        "VAL_INT_RANGE", "VAL_FLOAT_RANGE", "VAL_NON_EMPTY", "VAL_NO_DUPLICATES",
        "VAL_TYPE_CHECK", "VAL_SUBSET", "VAL_IN_SET", "VAL_NOT_NONE", "VAL_STATE_TRANSITION",
        "AST_PRECONDITION", "AST_POSTCONDITION", "AST_INVARIANT",
    }  # fmt: skip
    assert required <= set(lib.ids())
    assert len(lib) >= 15
    assert set(CASES) == set(lib.ids()), "every pattern needs a golden case"


def test_required_parameters(lib: PatternLibrary) -> None:
    def signature(pattern_id: str) -> list[tuple[str, str, str | None]]:
        pattern = lib.get(pattern_id)
        assert pattern is not None
        return [(p.name, p.type, p.default) for p in pattern.params]

    bounds = [("min", "expr", "None"), ("max", "expr", "None"), ("each", "bool", "False")]
    assert signature("VAL_INT_RANGE") == [
        ("value", "expr", None),
        *bounds,
        ("exc", "exception", "ValueError"),
    ]
    assert signature("VAL_FLOAT_RANGE")[:4] == [("value", "expr", None), *bounds]
    assert signature("VAL_TYPE_CHECK") == [
        ("value", "expr", None),
        ("type", "type", None),
        ("exc", "exception", "TypeError"),
    ]
    assert [p[0] for p in signature("VAL_STATE_TRANSITION")] == [
        "current",
        "target",
        "transitions",
        "exc",
    ]
    for pattern in lib:
        names = [p.name for p in pattern.params]
        if pattern.kind == "VAL":
            assert names[-1] == "exc"
        else:
            assert names == ["condition"]


@pytest.mark.parametrize("pattern_id", [*LIB.ids(), "_checks"])
def test_golden_rendering(pattern_id: str) -> None:
    path = GOLDEN_DIR / f"{pattern_id}.py"
    text = golden_text(pattern_id)
    if os.environ.get("DD_UPDATE_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.is_file(), f"missing {path}; run with DD_UPDATE_GOLDEN=1"
    assert path.read_text(encoding="utf-8") == text, "golden differs; DD_UPDATE_GOLDEN=1 rewrites"


@pytest.mark.parametrize("pattern_id", sorted(CASES))
def test_golden_function_passes_and_fails_with_exact_message(pattern_id: str) -> None:
    check = load_check((GOLDEN_DIR / f"{pattern_id}.py").read_text(encoding="utf-8"))
    passing, failing = CASES[pattern_id]
    check(**passing)
    for kwargs, exception, tail in failing:
        with pytest.raises(exception) as info:
            check(**kwargs)
        assert type(info.value) is exception
        assert str(info.value) == expected_message(pattern_id, tail)


@pytest.mark.parametrize("pattern_id", [i for i in sorted(CASES) if i.startswith("VAL_")])
def test_exc_overrides_the_exception(pattern_id: str) -> None:
    check = load_check(example_function(pattern_id, ", exc=LookupError"))
    kwargs, _, tail = CASES[pattern_id][1][0]
    with pytest.raises(LookupError) as info:
        check(**kwargs)
    assert type(info.value) is LookupError
    assert str(info.value) == expected_message(pattern_id, tail)


def test_ast_checks_survive_python_dash_o() -> None:
    script = textwrap.dedent(
        """
        import sys
        assert False, "asserts are on"  # stripped under -O
        import types
        checks = types.ModuleType("golden._checks")
        exec(open(sys.argv[3]).read(), checks.__dict__)
        golden = types.ModuleType("golden")
        golden._checks = checks
        sys.modules["golden"], sys.modules["golden._checks"] = golden, checks
        for path, args in [(sys.argv[1], ([],)), (sys.argv[2], ([0], [1, 2]))]:
            namespace = {}
            exec(open(path).read(), namespace)
            try:
                namespace["example"](*args)
            except AssertionError as exc:
                print("raised:", exc)
        """
    )
    result = subprocess.run(
        [
            sys.executable,
            "-O",
            "-c",
            script,
            str(GOLDEN_DIR / "AST_POSTCONDITION.py"),
            str(GOLDEN_DIR / "AST_PRECONDITION.py"),
            str(GOLDEN_DIR / "_checks.py"),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    lines = result.stdout.splitlines()
    assert lines == [
        "raised: " + expected_message("AST_POSTCONDITION", CASES["AST_POSTCONDITION"][1][0][2]),
        "raised: " + expected_message("AST_PRECONDITION", "len(ranks) == len(gpus) (where ranks=[0], gpus=[1, 2])"),
    ]  # fmt: skip


def test_goldens_are_ruff_clean() -> None:
    ruff = shutil.which("ruff") or shutil.which("ruff", path=str(Path(sys.executable).parent))
    if ruff is None:
        pytest.skip("ruff is not installed")
    result = subprocess.run(
        [ruff, "check", "--no-cache", str(GOLDEN_DIR)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_goldens_import_nothing_but_the_check_module() -> None:
    """Generated checks are self-contained: a check call needs the generated check module,
    which needs the standard library only."""
    for path in GOLDEN_DIR.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imports = [
            ast.unparse(n) for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))
        ]
        if path.stem == CHECKS_GOLDEN:
            assert all(
                i.split()[1] in ("__future__", "builtins", "reprlib", "sys", "types", "typing")
                for i in imports
            )
        else:
            assert imports == ["from golden import _checks as check"], path


# --------------------------------------------------------------------------- rendering


def test_message_survives_quotes_braces_backslashes_and_percent() -> None:
    annotation = ann("""VAL: VAL_IN_SET(mode, {"a%s", 'b"\\'{x}', "\\\\n"})""", line=12)
    check = run_rendered(annotation, "Pool.set_mode", "mode")
    check("a%s")
    with pytest.raises(ValueError) as info:
        check("{x}")
    assert str(info.value) == (
        "VAL_IN_SET failed in Pool.set_mode (design/x.md:12): expected mode to be one of "
        """{"a%s", 'b"\\'{x}', "\\\\n"} (where mode='{x}')"""
    )


def test_ast_check_is_a_call_that_raises_not_an_assert(lib: PatternLibrary) -> None:
    source, site = render(ann("AST: AST_POSTCONDITION(len(r) > 0)"), lib, "f")
    assert source == "check.postcondition(len(r) > 0, at=_AT[7])\n"
    assert site == checkmodule.Site(7, "f", "len(r) > 0", ("r",))
    checks = checkmodule.module_source(list(lib))
    assert not [n for n in ast.walk(ast.parse(checks)) if isinstance(n, ast.Assert)]


def test_rendering_is_deterministic_unindented_and_newline_terminated(lib: PatternLibrary) -> None:
    annotation = ann("VAL: VAL_INT_RANGE(x, min=lo, max=hi + 1)")
    first = render(annotation, lib, "f")
    assert first == render(annotation, lib, "f")
    assert first[0] == "check.int_range(x, min=lo, max=hi + 1, at=_AT[7])\n"
    assert first[1] == checkmodule.Site(
        7, "f", "x to be an int in [lo, hi + 1]", ("x", "lo", "hi + 1")
    )
    check = run_rendered(annotation, "f", "x, lo, hi")
    check(3, 0, 2)
    with pytest.raises(ValueError, match=r"\(where x=4, lo=0, hi \+ 1=3\)$"):
        check(4, 0, 2)


@pytest.mark.parametrize(
    ("text", "source"),
    [
        ("VAL: VAL_NOT_NONE(engine)", "if engine is None:\n    check.not_none(engine, at=_AT[7])\n"),
        ("VAL: VAL_IN_SET(s.mode, MODES)", "if s.mode not in MODES:\n    check.in_set(s.mode, MODES, at=_AT[7])\n"),
        ("VAL: VAL_FLOAT_RANGE(t, min=now)", "if not (type(t) in (float, int) and t >= now):\n    check.float_range(t, min=now, at=_AT[7])\n"),
        ("VAL: VAL_FLOAT_RANGE(t)", "if not (type(t) in (float, int) and t == t):\n    check.float_range(t, at=_AT[7])\n"),
        ("VAL: VAL_STATE_TRANSITION(self.state, to, T)", "if to not in T.get(self.state, ()):\n    check.transition(self.state, to, T, at=_AT[7])\n"),
        ("AST: AST_INVARIANT(a is None or a < b)", "if not (a is None or a < b):\n    check.invariant(False, at=_AT[7])\n"),
        ("AST: AST_PRECONDITION(pool.ok(rank))", "if not pool.ok(rank):\n    check.precondition(False, at=_AT[7])\n"),
        # a call (evaluated twice), each item or a bound that is not simple: the plain call
        ("VAL: VAL_INT_RANGE(n, min=1, max=len(xs))", "check.int_range(n, min=1, max=len(xs), at=_AT[7])\n"),
        ("VAL: VAL_INT_RANGE(ns, min=0, each=True)", "check.int_range(ns, min=0, each=True, at=_AT[7])\n"),
        ("VAL: VAL_NOT_NONE(table.get(key))", "check.not_none(table.get(key), at=_AT[7])\n"),
        ("VAL: VAL_INT_RANGE(n, min=a or b)", "if not (type(n) is int and n >= (a or b)):\n    check.int_range(n, min=a or b, at=_AT[7])\n"),
    ],
)  # fmt: skip
def test_a_guarded_check_calls_only_when_its_guard_fails(text: str, source: str) -> None:
    """In a spec whose checks are inline, a passing check costs the guard's inline test, no
    call; arguments with calls keep the call (a guard repeats its arguments). Elsewhere the
    check is the plain call."""
    assert render(ann(text, inline=True), LIB, "f")[0] == source
    plain = render(ann(text), LIB, "f")[0]
    assert "\n" not in plain.rstrip("\n") and plain.startswith("check.")


def test_a_guard_stricter_than_its_check_leaves_the_decision_to_the_call() -> None:
    class Count(int):
        """An int subclass: the guard (`type(n) is int`) fails, the check accepts it."""

    check = run_rendered(ann("VAL: VAL_INT_RANGE(n, min=0, max=9)", inline=True), "f", "n")
    check(Count(3))  # passes through the call
    for bad, exc in ((Count(10), ValueError), (True, ValueError), ("3", ValueError)):
        with pytest.raises(exc, match="VAL_INT_RANGE failed in f"):
            check(bad)
    floats = run_rendered(ann("VAL: VAL_FLOAT_RANGE(t)", inline=True), "f", "t")
    floats(2.5)
    with pytest.raises(ValueError, match="VAL_FLOAT_RANGE failed in f"):
        floats(float("nan"))  # nan != nan: the guard fails, the call rejects it


def test_a_failed_guarded_ast_check_shows_the_callers_values() -> None:
    annotation = ann("AST: AST_INVARIANT(a is None or a < b)", line=9, inline=True)
    check = run_rendered(annotation, "Q.f", "a, b")
    check(None, 1)
    check(0, 1)
    with pytest.raises(AssertionError) as info:
        check(2, 1)
    assert str(info.value) == (
        "AST_INVARIANT violated in Q.f (design/x.md:9): expected a is None or a < b "
        "(where a=2, b=1)"
    )


def test_int_range_without_bounds_is_a_type_check() -> None:
    check = run_rendered(ann("VAL: VAL_INT_RANGE(n)"), "f", "n")
    check(3)
    with pytest.raises(TypeError, match=r"expected n to be an int \(where n='3'\)$"):
        check("3")
    overridden = run_rendered(ann("VAL: VAL_INT_RANGE(n, exc=KeyError)"), "f", "n")
    with pytest.raises(KeyError):
        overridden("3")


def test_one_sided_bounds_reject_nan() -> None:
    check = run_rendered(ann("VAL: VAL_FLOAT_RANGE(x, min=0)"), "f", "x")
    check(3.5)
    for bad in (float("nan"), -1, True):
        with pytest.raises(ValueError):
            check(bad)


def test_len_range_without_bounds_is_a_render_error(lib: PatternLibrary) -> None:
    with pytest.raises(DDError) as info:
        render_annotation(ann("VAL: VAL_LEN_RANGE(x)"), lib, "f")
    assert info.value.diagnostics[0].code == "DD091"
    assert info.value.diagnostics[0].message == (
        "pattern VAL_LEN_RANGE: template failed: arguments rejected: give min or max (or both)"
    )


def test_render_refuses_an_invalid_annotation(lib: PatternLibrary) -> None:
    with pytest.raises(DDError) as info:
        render_annotation(ann("VAL: VAL_NON_EMPTY(x, y)"), lib, "f")
    assert [d.code for d in info.value.diagnostics] == ["DD052"]


@pytest.mark.parametrize(
    ("src", "rendered"),
    [
        ("x", "x"),
        ("self.a.b", "self.a.b"),
        ("f(x)[0]", "f(x)[0]"),
        ("(1, 2)", "(1, 2)"),
        ("[1, 2]", "[1, 2]"),
        ("'s'", "'s'"),
        ("a + b", "(a + b)"),
        ("-1", "(-1)"),
        ("x if c else y", "(x if c else y)"),
        ("'a' 'b'", "('a' 'b')"),
        ("not x", "(not x)"),
        ("(a + b)", "(a + b)"),
    ],
)
def test_arg_renders_parenthesised_when_not_atomic(src: str, rendered: str) -> None:
    assert str(Arg("p", src, "expr", False)) == rendered


def test_arg_literal_values() -> None:
    assert Arg("each", "True", "bool", False).value is True
    assert Arg("m", "-3", "int", False).value == -3
    assert Arg("m", "n - 1", "expr", False).value is None
    assert Arg("m", "None", "expr", True).is_none


@pytest.mark.parametrize(
    ("condition", "names"),
    [
        ("len(offload_ranks) > 0", ["offload_ranks"]),
        ("self.free.isdisjoint(self.busy)", ["self.free", "self.busy"]),
        ("all(g >= 0 for g in gpus)", ["gpus"]),
        ("a is None or a.b > 0", ["a"]),
        ("x.y.z == x.y", ["x.y.z", "x.y"]),
        ("math.isfinite(v) and v < top[i]", ["v", "top", "i"]),
        ("f(x).y > 0", ["x"]),
        ("isinstance(x, int)", ["x"]),
    ],
)
def test_condition_names(condition: str, names: list[str]) -> None:
    assert condition_names(condition) == names


# --------------------------------------------------------------------------- checking


@pytest.mark.parametrize(
    ("text", "code", "message"),
    [
        ("VAL: VAL_INT_RANG(x)", "DD050", "unknown pattern ID VAL_INT_RANG (did you mean VAL_INT_RANGE?)"),
        ("VAL: VAL_ZZZZZZZZZ(x)", "DD050", "unknown pattern ID VAL_ZZZZZZZZZ"),
        ("AST: VAL_NON_EMPTY(x)", "DD053", "VAL_NON_EMPTY is a VAL pattern, not AST: write `# VAL: VAL_NON_EMPTY(...)`"),
        ("VAL: AST_INVARIANT(x)", "DD053", "AST_INVARIANT is an AST pattern, not VAL: write `# AST: AST_INVARIANT(...)`"),
        ("VAL: VAL_NON_EMPTY(x); import os; (y)", "DD051", "arguments of VAL_NON_EMPTY are not plain expressions: not a valid argument list (invalid syntax)"),
        ("VAL: VAL_NON_EMPTY(x) + (y)", "DD051", "arguments of VAL_NON_EMPTY are not plain expressions: not a valid argument list (text outside the parentheses)"),
        ("VAL: VAL_NON_EMPTY(x) #)", "DD051", "arguments of VAL_NON_EMPTY are not plain expressions: not a valid argument list (text outside the parentheses)"),
        ("VAL: VAL_NON_EMPTY(lambda: 1)", "DD051", "arguments of VAL_NON_EMPTY are not plain expressions: lambda is not allowed"),
        ("VAL: VAL_NON_EMPTY([(y := 1)])", "DD051", "arguments of VAL_NON_EMPTY are not plain expressions: assignment expressions (:=) are not allowed"),
        ("VAL: VAL_NON_EMPTY(*xs)", "DD051", "arguments of VAL_NON_EMPTY are not plain expressions: '*' unpacking is not allowed"),
        ("VAL: VAL_NON_EMPTY(**kw)", "DD051", "arguments of VAL_NON_EMPTY are not plain expressions: '**' unpacking is not allowed"),
        ("VAL: VAL_NON_EMPTY(await x)", "DD051", "arguments of VAL_NON_EMPTY are not plain expressions: await is not allowed"),
        ("VAL: VAL_NON_EMPTY((yield x))", "DD051", "arguments of VAL_NON_EMPTY are not plain expressions: yield is not allowed"),
        ("VAL: VAL_NON_EMPTY((yield from x))", "DD051", "arguments of VAL_NON_EMPTY are not plain expressions: yield from is not allowed"),
        ("VAL: VAL_NON_EMPTY(x,\ny)", "DD051", "arguments of VAL_NON_EMPTY are not plain expressions: arguments span several lines"),
        ("VAL: VAL_INT_RANGE(x, 0, 7, True, 1)", "DD052", "VAL_INT_RANGE takes at most 4 positional arguments (5 given)"),
        ("VAL: VAL_INT_RANGE(x, minimum=0)", "DD052", "VAL_INT_RANGE has no parameter 'minimum' (did you mean 'min'?); its parameters: value, min, max, each, exc"),
        ("VAL: VAL_INT_RANGE(x, value=y)", "DD052", "VAL_INT_RANGE got parameter 'value' twice"),
        ("VAL: VAL_INT_RANGE(x, min=0, min=1)", "DD052", "VAL_INT_RANGE got parameter 'min' twice"),
        ("VAL: VAL_INT_RANGE(min=0)", "DD052", "VAL_INT_RANGE is missing required argument 'value'"),
        ("VAL: VAL_INT_RANGE(x, each=1)", "DD052", "argument each=1 of VAL_INT_RANGE must be True or False"),
        ("VAL: VAL_INT_RANGE(x, each=flag)", "DD052", "argument each=flag of VAL_INT_RANGE must be True or False"),
        ("VAL: VAL_SORTED(x, strict='yes')", "DD052", "argument strict='yes' of VAL_SORTED must be True or False"),
        ("VAL: VAL_NON_EMPTY(x, exc='E')", "DD052", "argument exc='E' of VAL_NON_EMPTY must be an exception class name"),
        ("VAL: VAL_NON_EMPTY(x, exc=make())", "DD052", "argument exc=make() of VAL_NON_EMPTY must be an exception class name"),
        ("VAL: VAL_NON_EMPTY(x, exc=os.system)", "DD052", "argument exc=os.system of VAL_NON_EMPTY must be an exception class name"),
        ("VAL: VAL_NON_EMPTY(x, exc=print)", "DD052", "argument exc=print of VAL_NON_EMPTY must be an exception class name"),
        ("VAL: VAL_NON_EMPTY(x, exc=NotImplemented)", "DD052", "argument exc=NotImplemented of VAL_NON_EMPTY must be an exception class name"),
        ("VAL: VAL_TYPE_CHECK(x, 1)", "DD052", "argument type=1 of VAL_TYPE_CHECK must be a type, a tuple of types or a union of types"),
        ("VAL: VAL_TYPE_CHECK(x, None)", "DD052", "argument type=None of VAL_TYPE_CHECK must be a type, a tuple of types or a union of types"),
        ("AST: AST_PRECONDITION(x, exc=KeyError)", "DD052", "AST_PRECONDITION has no parameter 'exc'; its parameters: condition"),
    ],
)  # fmt: skip
def test_check_annotation_reports(lib: PatternLibrary, text: str, code: str, message: str) -> None:
    annotation = ann(text)
    diags = check_annotation(annotation, lib)
    assert [(d.code, d.message) for d in diags] == [(code, message)]
    assert diags[0].loc == annotation.loc


@pytest.mark.parametrize(
    "text",
    [
        "VAL: VAL_INT_RANGE(target_gpus, min=0, max=self.num_gpus - 1, each=True)",
        "VAL: VAL_IN_SET(mode, {f'{p}-a', \"b\"})",
        "VAL: VAL_TYPE_CHECK(x, (int, float))",
        "VAL: VAL_TYPE_CHECK(x, int | None)",
        "VAL: VAL_TYPE_CHECK(x, np.ndarray, exc=errors.BadInput)",
        "VAL: VAL_SUBSET([g for g in gpus if g], allowed=range(8))",
        "VAL: VAL_NON_EMPTY(x for x in xs)",
        "AST: AST_POSTCONDITION(all(r >= 0 for r in ranks) and ranks == sorted(ranks))",
    ],
)
def test_check_annotation_accepts(lib: PatternLibrary, text: str) -> None:
    assert check_annotation(ann(text), lib) == []
    render_annotation(ann(text), lib, "f")


def test_kind_mismatch_and_bad_arguments_are_both_reported(lib: PatternLibrary) -> None:
    codes = [d.code for d in check_annotation(ann("AST: VAL_NON_EMPTY(x, y)"), lib)]
    assert codes == ["DD053", "DD052"]


# --------------------------------------------------------------------------- loading

GOOD = """\
id: VAL_EVEN
kind: VAL
summary: An even int.
params:
  - {name: value}
message: "{{ value.src }} to be even"
template: |
  if {{ value }} % 2:
      {{ fail(exc, message, where(value)) }}
example: "VAL_EVEN(n)"
"""


def write(directory: Path, name: str, text: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(text, encoding="utf-8")
    return path


def load_errors(*dirs: Path) -> list[str]:
    with pytest.raises(DDError) as info:
        PatternLibrary.load(list(dirs))
    assert {d.code for d in info.value.diagnostics} == {"DD090"}
    return [d.render() for d in info.value.diagnostics]


def test_builtin_dir_is_the_repo_patterns_in_a_checkout() -> None:
    assert builtin_pattern_dir() == REPO / "patterns"


def test_project_pattern_loads_renders_and_gets_exc(tmp_path: Path) -> None:
    write(tmp_path / "pats", "VAL_EVEN.yaml", GOOD)
    lib = PatternLibrary.load([tmp_path / "pats", builtin_pattern_dir()])
    pattern = lib.get("VAL_EVEN")
    assert pattern is not None and "VAL_EVEN" in lib and "VAL_EVEN" not in lib.builtin_ids
    assert [p.name for p in pattern.params] == ["value", "exc"]
    source = render_annotation(ann("VAL: VAL_EVEN(n, exc=KeyError)", line=4), lib, "f")
    assert source == (
        "if n % 2:\n"
        '    raise KeyError(f"VAL_EVEN failed in f (design/x.md:4): expected n to be even'
        ' (where n={reprlib.repr(n)})")\n'
    )


def test_extra_dir_that_is_the_builtin_dir_is_skipped() -> None:
    assert PatternLibrary.load([builtin_pattern_dir()]).ids() == LIB.ids()


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("id: [unclosed\n", "2:1: error[DD090]: invalid YAML: expected ',' or ']', but got '<stream end>'"),
        ("- a\n", "1:1: error[DD090]: a pattern file must be a YAML mapping"),
        (GOOD.replace("kind: VAL", "kind: FOO"), "2:1: error[DD090]: kind: Input should be 'VAL' or 'AST'"),
        (GOOD.replace("{name: value}", "{name: value, type: list}"), "5:1: error[DD090]: params.0.type: Input should be 'expr', 'name', 'int', 'float', 'number', 'str', 'bool', 'type' or 'exception'"),
        (GOOD.replace("summary: An even int.\n", ""), "1:1: error[DD090]: summary: Field required"),
        (GOOD + "colour: red\n", "11:1: error[DD090]: colour: Extra inputs are not permitted"),
        (GOOD + "kind: AST\n", "11:1: error[DD090]: key 'kind' given twice"),
        (GOOD.replace("{name: value}", "{name: value, required: false}"), "5:1: error[DD090]: optional parameter 'value' needs a default"),
        (GOOD.replace("{name: value}", "{name: fail}"), "5:1: error[DD090]: parameter name 'fail' is reserved"),
        (GOOD.replace("{name: value}", "{name: value, required: false, default: 'x +'}"), "5:1: error[DD090]: default of 'value' is not a Python expression"),
        (GOOD.replace("{name: value}", "{name: exc, type: expr, required: false, default: E}"), "5:1: error[DD090]: parameter 'exc' must be an optional exception"),
        (GOOD.replace("if {{ value }}", "if {{ value }"), "8:1: error[DD090]: template: Jinja2 syntax error: unexpected '}'"),
        (GOOD.replace('"{{ value.src }} to be even"', '"{% if %}"'), "6:1: error[DD090]: message: Jinja2 syntax error: Expected an expression, got 'end of statement block'"),
        (GOOD.replace("VAL_EVEN(n)", "VAL_ODD(n)"), "10:1: error[DD090]: example must be a call of VAL_EVEN"),
        (GOOD + "loc: {path: x}\n", "11:1: error[DD090]: unknown key 'loc'"),
    ],
)  # fmt: skip
def test_invalid_pattern_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, error: str
) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "pats", "VAL_EVEN.yaml", text)
    assert load_errors(Path("pats")) == [f"pats/VAL_EVEN.yaml:{error}"]


def test_file_name_must_be_the_id(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "pats", "even.yaml", GOOD)
    assert load_errors(Path("pats")) == [
        "pats/even.yaml:1:1: error[DD090]: file name must be the pattern ID: VAL_EVEN.yaml"
    ]


def test_ast_pattern_may_not_set_an_exception(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    text = GOOD.replace("VAL_EVEN", "AST_EVEN").replace("kind: VAL", "kind: AST")
    write(tmp_path / "pats", "AST_EVEN.yaml", text + "exception: KeyError\n")
    assert load_errors(Path("pats")) == [
        "pats/AST_EVEN.yaml:11:1: error[DD090]: AST patterns always raise AssertionError"
    ]


def test_reusing_a_builtin_id(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "pats", "VAL_NON_EMPTY.yaml", GOOD.replace("VAL_EVEN", "VAL_NON_EMPTY"))
    builtin = (builtin_pattern_dir() / "VAL_NON_EMPTY.yaml").as_posix()
    assert load_errors(Path("pats")) == [
        f"pats/VAL_NON_EMPTY.yaml:1:1: error[DD090]: VAL_NON_EMPTY reuses a built-in pattern ID ({builtin})"
    ]


def test_duplicate_id_across_project_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "a", "VAL_EVEN.yaml", GOOD)
    write(tmp_path / "b", "VAL_EVEN.yaml", "\n" + GOOD)
    assert load_errors(Path("a"), Path("b")) == [
        "b/VAL_EVEN.yaml:2:1: error[DD090]: VAL_EVEN reuses an already defined pattern ID (a/VAL_EVEN.yaml)"
    ]


def test_all_problems_are_reported_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "pats", "VAL_A.yaml", "- a\n")
    write(tmp_path / "pats", "VAL_B.yaml", "id: [\n")
    errors = load_errors(Path("pats"), Path("missing"))
    assert [e.split(": error")[0] for e in errors] == [
        "pats/VAL_A.yaml:1:1",
        "pats/VAL_B.yaml:2:1",
        "missing:1:1",
    ]
    assert errors[-1] == "missing:1:1: error[DD090]: pattern directory not found"


def test_template_rendering_invalid_python_is_dd091(tmp_path: Path) -> None:
    write(
        tmp_path / "pats", "VAL_EVEN.yaml", GOOD.replace("if {{ value }} % 2:", "if {{ value }} %")
    )
    lib = PatternLibrary.load([tmp_path / "pats"])
    with pytest.raises(DDError) as info:
        render_annotation(ann("VAL: VAL_EVEN(n)"), lib, "f")
    (diag,) = info.value.diagnostics
    assert diag.code == "DD091"
    assert diag.message.startswith("pattern VAL_EVEN: template rendered invalid Python (")


CHECKED = """\
id: VAL_EVEN
kind: VAL
summary: An even int.
params:
  - {name: value}
message: "{{ value.src }} to be even"
check:
  function: even
  shows: "[value]"
  code: |
    def even(value, exc=ValueError, *, at):
        \"\"\"VAL_EVEN: `value` is even.\"\"\"
        if value % 2:
            at.fail("VAL_EVEN", exc, value)
example: "VAL_EVEN(n)"
"""


def test_project_pattern_with_a_check_renders_a_call_that_fails_exactly(tmp_path: Path) -> None:
    write(tmp_path / "pats", "VAL_EVEN.yaml", CHECKED)
    lib = PatternLibrary.load([tmp_path / "pats"])
    annotation = ann("VAL: VAL_EVEN(n + 1, exc=KeyError)", line=4)
    source, site = render(annotation, lib, "f")
    assert source == "check.even(n + 1, exc=KeyError, at=_AT[4])\n"
    namespace = check_namespace(lib, [site], "design/x.md")
    exec(compile("def example(n):\n    " + source, "<t>", "exec"), namespace)  # noqa: S102
    namespace["example"](1)
    with pytest.raises(KeyError) as info:
        namespace["example"](2)
    assert info.value.args[0] == (
        "VAL_EVEN failed in f (design/x.md:4): expected n + 1 to be even (where n + 1=3)"
    )


@pytest.mark.parametrize(
    ("old", "new", "error"),
    [
        ("function: even", "function: odd", "10:1: error[DD090]: check.code does not define odd()"),
        ("*, at):", "at=None):", "10:1: error[DD090]: even() needs a keyword-only `at`"),
        ("(value, exc=ValueError,", "(value,", "10:1: error[DD090]: even() lacks exc"),
        ("if value % 2:", "if value %:", "10:1: error[DD090]: check.code is not Python: invalid syntax"),
        ("def even(", "Site = 1\n    def even(", "10:1: error[DD090]: check.code redefines Site"),
        ('shows: "[value]"', 'shows: "[value"', "9:1: error[DD090]: check.shows: Jinja2 syntax error: unexpected '}', expected ']'"),
        ("  function: even\n", "  function: even\n  colour: red\n", "9:1: error[DD090]: check.colour: Extra inputs are not permitted"),
        ('shows: "[value]"', 'shows: "[value]"\n  guard: "{% if %}"', "10:1: error[DD090]: check.guard: Jinja2 syntax error: Expected an expression, got 'end of statement block'"),
    ],
)  # fmt: skip
def test_malformed_check_is_dd090(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, old: str, new: str, error: str
) -> None:
    monkeypatch.chdir(tmp_path)
    assert old in CHECKED
    write(tmp_path / "pats", "VAL_EVEN.yaml", CHECKED.replace(old, new, 1))
    assert load_errors(Path("pats"))[0] == f"pats/VAL_EVEN.yaml:{error}"


def test_a_guard_that_is_not_an_expression_is_dd091(tmp_path: Path) -> None:
    write(
        tmp_path / "pats",
        "VAL_EVEN.yaml",
        CHECKED.replace('shows: "[value]"', 'shows: "[value]"\n  guard: "{{ value.src }} %"'),
    )
    lib = PatternLibrary.load([tmp_path / "pats"])
    with pytest.raises(DDError) as info:
        render(ann("VAL: VAL_EVEN(n)", inline=True), lib, "f")
    assert info.value.diagnostics[0].code == "DD091"
    assert "guard is not an expression" in info.value.diagnostics[0].message


def test_a_project_pattern_guard_writes_the_call_under_it(tmp_path: Path) -> None:
    guarded = CHECKED.replace(
        'shows: "[value]"', 'shows: "[value]"\n  guard: "{{ value }} % 2 == 0"'
    )
    write(tmp_path / "pats", "VAL_EVEN.yaml", guarded)
    lib = PatternLibrary.load([tmp_path / "pats"])
    source, site = render(ann("VAL: VAL_EVEN(n + 1)", line=4, inline=True), lib, "f")
    assert source == "if not ((n + 1) % 2 == 0):\n    check.even(n + 1, at=_AT[4])\n"
    namespace = check_namespace(lib, [site], "design/x.md")
    exec(compile("def example(n):\n" + textwrap.indent(source, "    "), "<t>", "exec"), namespace)  # noqa: S102
    namespace["example"](1)
    with pytest.raises(ValueError, match="expected n \\+ 1 to be even"):
        namespace["example"](2)


def test_two_patterns_defining_one_check_name_is_dd090(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write(
        tmp_path / "pats",
        "VAL_EVEN.yaml",
        CHECKED.replace("function: even", "function: in_set").replace("def even(", "def in_set("),
    )
    assert load_errors(Path("pats")) == [
        "pats/VAL_EVEN.yaml:1:1: error[DD090]: check code of VAL_EVEN redefines in_set (VAL_IN_SET)"
    ]  # fmt: skip
