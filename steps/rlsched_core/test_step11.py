"""Step 11 of design/rlsched_core.md: values cheap to build (0.9.0; built by a subclass, 0.13.0).

`value` must give exactly the class `dataclass(frozen=True, slots=True)` gives, but built as an
instance of a private subclass without the frozen `__setattr__` whose class is then set to the
value class.
"""

import copy
import dataclasses
import inspect
import pickle

import pytest

from rlsched.core.commands import Dispatch, StartEnvStep
from rlsched.core.events import RequestFinished, Started
from rlsched.core.values import value


@value
class Base:
    time: float


@value
class Point(Base):
    x: int
    label: str = "p"
    kept: tuple[int, ...] = ()


@dataclasses.dataclass(frozen=True, slots=True)
class PlainBase:
    time: float


@dataclasses.dataclass(frozen=True, slots=True)
class PlainPoint(PlainBase):
    x: int
    label: str = "p"
    kept: tuple[int, ...] = ()


def test_arguments_by_position_or_keyword_with_the_dataclass_defaults() -> None:
    assert [f.name for f in dataclasses.fields(Point)] == ["time", "x", "label", "kept"]
    p = Point(1.5, 3)
    assert (p.time, p.x, p.label, p.kept) == (1.5, 3, "p", ())
    q = Point(2.0, x=4, kept=(1,), label="q")
    assert (q.time, q.x, q.label, q.kept) == (2.0, 4, "q", (1,))
    assert str(inspect.signature(Point)) == str(inspect.signature(PlainPoint))
    with pytest.raises(TypeError):
        Point(1.0)  # x is required
    with pytest.raises(TypeError):
        Point(1.0, 2, "a", (), 5)  # one too many


def test_the_same_value_as_the_dataclass_gives() -> None:
    p, plain = Point(1.5, 3, "a", (2,)), PlainPoint(1.5, 3, "a", (2,))
    assert repr(p) == repr(plain).replace("PlainPoint", "Point")
    assert p == Point(1.5, 3, "a", (2,)) and p != Point(1.5, 3, "b", (2,))
    assert hash(p) == hash(Point(1.5, 3, "a", (2,))) == hash(plain)
    assert Point.__match_args__ == ("time", "x", "label", "kept")
    assert not hasattr(p, "__dict__")
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.x = 4  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del p.x  # type: ignore[misc]
    assert dataclasses.replace(p, label="b") == Point(1.5, 3, "b", (2,))
    assert Base(0.5) == Base(0.5) and Base(0.5) != p


def test_the_builder_never_escapes() -> None:
    p, b = Point(1.5, 3), Base(0.5)
    assert type(p) is Point and type(b) is Base
    assert type(dataclasses.replace(p, x=4)) is Point
    for made in (pickle.loads(pickle.dumps(p)), copy.copy(p), copy.deepcopy(p)):
        assert type(made) is Point and made == p
    kept = Point(2.0, 5, "k", (1, 2))
    assert pickle.loads(pickle.dumps(kept, protocol=0)) == kept
    assert copy.deepcopy([kept, kept]) == [kept, kept]


def test_built_by_plain_slot_stores_then_given_its_class() -> None:
    new = Point.__new__
    assert new.__qualname__ == "Point.__new__"
    assert Point.__init__ is object.__init__
    builder = new.__globals__["_builder"]
    assert builder is not Point and issubclass(builder, Point)
    assert builder.__qualname__ == "Point._builder" and builder in Point.__subclasses__()
    assert builder.__setattr__ is object.__setattr__
    assert builder.__delattr__ is object.__delattr__
    assert "__slots__" in vars(builder) and not vars(builder)["__slots__"]
    assert "__setattr__" not in new.__code__.co_names
    assert {"time", "x", "label", "kept", "__class__"} <= set(new.__code__.co_names)


def test_events_and_commands_are_values() -> None:
    for cls in (RequestFinished, Started, Dispatch, StartEnvStep):
        assert cls.__new__.__qualname__ == f"{cls.__name__}.__new__"
        assert cls.__init__ is object.__init__
    d = Dispatch(1, 2, 0, 3, 4, 900, 20, 100, 2, None)
    assert type(d) is Dispatch
    assert d.chunked is False and d == Dispatch(1, 2, 0, 3, 4, 900, 20, 100, 2, None, False)
    assert RequestFinished(1.0, 7, 5, kv_free=9).kv_free == 9
    assert Started(0.0).kv_tokens is None
    assert pickle.loads(pickle.dumps(d)) == d


@pytest.mark.parametrize(
    "spec",
    [
        dataclasses.field(default_factory=list),
        dataclasses.field(default=0, init=False),
        dataclasses.field(default=0, kw_only=True),
    ],
)
def test_fields_beyond_plain_ones_are_refused(spec: dataclasses.Field) -> None:
    class Odd:
        __annotations__ = {"a": int, "b": list}
        b = spec

    with pytest.raises(TypeError, match="only plain fields are supported"):
        value(Odd)


def test_a_private_field_name_is_refused() -> None:
    class Odd:
        __annotations__ = {"a": int, "_new": int}

    with pytest.raises(TypeError, match="Odd._new: only plain fields are supported"):
        value(Odd)


def test_a_plain_subclass_of_a_value_is_refused_when_built() -> None:
    class Plain(Point):
        pass

    with pytest.raises(TypeError, match="Plain subclasses the value Point: use @value"):
        Plain(1.0, 2)

    @value
    class Valued(Point):
        extra: int = 0

    assert type(Valued(1.0, 2, extra=3)) is Valued and Valued(1.0, 2, extra=3).extra == 3
