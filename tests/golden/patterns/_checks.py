# Golden check module of the built-in patterns, checked by tests/test_patterns.py.
"""The checks the generated modules of this package call, one function per pattern.

A check costs one call when it passes (none where its pattern's guard, tested inline by the
caller, holds). When it fails it raises with a message built only then: the pattern, the spec
and the document line of the annotation, what was expected and the value of each name
involved, shown by `reprlib.repr` (a table of 100,000 entries shows its first few).
"""

from __future__ import annotations

import builtins
import reprlib
import sys
from types import FrameType
from typing import NoReturn


class Site:
    """Where a check is written: the spec, its document line, what the check expects, and the
    label of each value its failure shows (None: not shown)."""

    __slots__ = ("expected", "labels", "loc", "symbol")

    def __init__(self, symbol: str, loc: str, expected: str, labels: tuple[str | None, ...]):
        self.symbol = symbol
        self.loc = loc
        self.expected = expected
        self.labels = labels

    def fail(self, pattern: str, exc: type[BaseException], *values: object) -> NoReturn:
        """Raise `exc` for a failed check of `pattern`, showing each labelled value."""
        verb = "violated" if pattern.startswith("AST_") else "failed"
        message = f"{pattern} {verb} in {self.symbol} ({self.loc}): expected {self.expected}"
        shown = [
            f"{label}={reprlib.repr(value)}"
            for label, value in zip(self.labels, values)
            if label is not None
        ]
        if shown:
            message += f" (where {', '.join(shown)})"
        raise exc(message)

    def fail_in(self, frame: FrameType, pattern: str, exc: type[BaseException]) -> NoReturn:
        """`fail`, showing the value each label (a name or an attribute chain) has in `frame`,
        the caller of the check: a condition's values are looked up only when it fails."""
        self.fail(pattern, exc, *(_value_in(frame, label) for label in self.labels))


def _value_in(frame: FrameType, chain: str | None) -> object:
    """The value of `chain` (`name` or `name.attr...`) in `frame`: locals, globals, builtins."""
    if chain is None:
        return None
    root, *attrs = chain.split(".")
    for scope in (frame.f_locals, frame.f_globals, frame.f_builtins):
        if root in scope:
            value = scope[root]
            break
    else:
        return _Unbound(root)
    for attr in attrs:
        value = getattr(value, attr)
    return value


class _Unbound:
    """Shown for a name that has no value where the check failed."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<{self.name} unbound>"


def sites(document: str, table: dict[str, dict[int, tuple[str | None, ...]]]) -> dict[int, Site]:
    """A module's check sites by document line, from spec -> line -> (expectation, *labels)."""
    return {
        line: Site(symbol, f"{document}:{line}", str(entry[0]), entry[1:])
        for symbol, entries in table.items()
        for line, entry in entries.items()
    }


def invariant(holds, *, at):
    """AST_INVARIANT: `holds`, the condition, holds between public calls; when it does
    not, the message shows the values its names have in the caller."""
    if not holds:
        at.fail_in(sys._getframe(1), "AST_INVARIANT", AssertionError)


def postcondition(holds, *, at):
    """AST_POSTCONDITION: `holds`, the condition, must hold before returning; when it does
    not, the message shows the values its names have in the caller."""
    if not holds:
        at.fail_in(sys._getframe(1), "AST_POSTCONDITION", AssertionError)


def precondition(holds, *, at):
    """AST_PRECONDITION: `holds`, the condition, must hold on entry; when it does
    not, the message shows the values its names have in the caller."""
    if not holds:
        at.fail_in(sys._getframe(1), "AST_PRECONDITION", AssertionError)


def disjoint(a, b, exc=ValueError, *, at):
    """VAL_DISJOINT: no item of `a` is in `b`."""
    if any(x in b for x in a):
        at.fail("VAL_DISJOINT", exc, [x for x in a if x in b])


def float_range(value, min=None, max=None, each=False, exc=ValueError, *, at):
    """VAL_FLOAT_RANGE: `value` (each of its items when `each`) is an int or a float, not a bool
    and not nan, within [min, max]."""
    if not each:
        if (
            (type(value) is float or type(value) is int)
            and value == value  # not nan
            and (min is None or min <= value)
            and (max is None or value <= max)
        ):
            return  # the common case, decided without a loop
        value = (value,)
    low = float("-inf") if min is None else min
    high = float("inf") if max is None else max
    for item in value:
        if isinstance(item, bool) or not isinstance(item, (int, float)) or not low <= item <= high:
            at.fail("VAL_FLOAT_RANGE", exc, item, min, max)


def int_range(value, min=None, max=None, each=False, exc=None, *, at):
    """VAL_INT_RANGE: `value` (each of its items when `each`) is an int, not a bool, within
    [min, max]; without bounds a type check that raises TypeError unless `exc` is given."""
    if not each:
        if type(value) is int and (min is None or min <= value) and (max is None or value <= max):
            return  # the common case, decided without a loop
        value = (value,)
    for item in value:
        if (
            isinstance(item, bool)
            or not isinstance(item, int)
            or (min is not None and not min <= item)
            or (max is not None and not item <= max)
        ):
            if exc is None:
                exc = TypeError if min is None and max is None else ValueError
            at.fail("VAL_INT_RANGE", exc, item, min, max)


def in_set(value, allowed, exc=ValueError, *, at):
    """VAL_IN_SET: `value` is one of `allowed`."""
    if value not in allowed:
        at.fail("VAL_IN_SET", exc, value, allowed)


def keys_present(mapping, keys, exc=ValueError, *, at):
    """VAL_KEYS_PRESENT: `mapping` holds every key of `keys`."""
    if not all(k in mapping for k in keys):
        at.fail("VAL_KEYS_PRESENT", exc, [k for k in keys if k not in mapping])


def len_range(value, min=None, max=None, exc=ValueError, *, at):
    """VAL_LEN_RANGE: the length of `value` is within [min, max]."""
    size = len(value)
    if (min is not None and size < min) or (max is not None and size > max):
        at.fail("VAL_LEN_RANGE", exc, size, min, max)


def non_blank(value, exc=ValueError, *, at):
    """VAL_NON_BLANK: `value` is a str with a non-whitespace character."""
    if not isinstance(value, str) or not value.strip():
        at.fail("VAL_NON_BLANK", exc, value)


def non_empty(value, exc=ValueError, *, at):
    """VAL_NON_EMPTY: the sized collection `value` has at least one item."""
    if len(value) == 0:
        at.fail("VAL_NON_EMPTY", exc, value)


def non_negative(value, exc=ValueError, *, at):
    """VAL_NON_NEGATIVE: `value` is a number, not a bool, >= 0 (nan and values that cannot be
    compared with 0 fail)."""
    try:
        ok = not isinstance(value, bool) and value >= 0
    except TypeError:
        ok = False
    if not ok:
        at.fail("VAL_NON_NEGATIVE", exc, value)


def not_none(value, exc=ValueError, *, at):
    """VAL_NOT_NONE: `value` is not None."""
    if value is None:
        at.fail("VAL_NOT_NONE", exc)


def no_duplicates(value, exc=ValueError, *, at):
    """VAL_NO_DUPLICATES: no item of the sized collection `value` occurs twice."""
    if len(set(value)) != len(value):
        items = list(value)
        at.fail("VAL_NO_DUPLICATES", exc, [x for x in dict.fromkeys(items) if items.count(x) > 1])


def positive(value, exc=ValueError, *, at):
    """VAL_POSITIVE: `value` is a number, not a bool, > 0 (nan and values that cannot be
    compared with 0 fail)."""
    try:
        ok = not isinstance(value, bool) and value > 0
    except TypeError:
        ok = False
    if not ok:
        at.fail("VAL_POSITIVE", exc, value)


def ascending(value, strict=False, exc=ValueError, *, at):
    """VAL_SORTED: `value` is in ascending order (strictly when `strict`)."""
    for a, b in zip(value, list(value)[1:]):
        if not (a < b if strict else a <= b):
            at.fail("VAL_SORTED", exc, (a, b))


def transition(current, target, transitions, exc=ValueError, *, at):
    """VAL_STATE_TRANSITION: `transitions` (state -> the states it may move to) allows the
    change `current` -> `target`."""
    allowed = transitions.get(current, ())
    if target not in allowed:
        at.fail("VAL_STATE_TRANSITION", exc, current, target, allowed)


def subset(value, allowed, exc=ValueError, *, at):
    """VAL_SUBSET: every item of `value` is in `allowed`."""
    if not all(x in allowed for x in value):
        at.fail("VAL_SUBSET", exc, [x for x in value if x not in allowed], allowed)


def instance(value, type, exc=TypeError, *, at):
    """VAL_TYPE_CHECK: `value` is an instance of `type` (a class, a tuple or a union)."""
    if not isinstance(value, type):
        at.fail("VAL_TYPE_CHECK", exc, value, builtins.type(value))
