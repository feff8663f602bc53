"""Step 1 of design/rlsched_shell.md: one handler per command type, checked when a shell's class
is made."""

import pytest

from rlsched.core import commands
from rlsched.core.commands import (
    Abort,
    Command,
    Dispatch,
    DropStale,
    InitialLayout,
    LoadPrompts,
    Offload,
    Reload,
    StartEnvStep,
    SyncWeights,
    Train,
)
from rlsched.core.shell import COMMAND_TYPES, Shell, handles

ALL = (
    LoadPrompts,
    Dispatch,
    Abort,
    Offload,
    Reload,
    SyncWeights,
    Train,
    DropStale,
    StartEnvStep,
    InitialLayout,
)


def test_the_command_types_are_every_command_of_the_core_in_order() -> None:
    assert COMMAND_TYPES == ALL
    # a slotted dataclass is made twice, so __subclasses__ holds each name twice; a value's
    # builder is its subclass (design/rlsched_core.md 0.13.0), so Command's own is left out
    subclasses = Command.__subclasses__()
    named = {c.__name__ for c in subclasses if c.__qualname__ != "Command._builder"}
    assert named == {c.__name__ for c in ALL}
    assert commands.TrainSample not in COMMAND_TYPES and Command not in COMMAND_TYPES


def test_a_mark_names_its_types_and_keeps_the_function() -> None:
    def carry(self, command) -> None:
        pass

    assert handles(Offload, Reload)(carry) is carry and carry.handled == (Offload, Reload)
    with pytest.raises(ValueError, match="VAL_NON_EMPTY"):
        handles()


class Everything(Shell):
    """Marks one method for most commands and one for the rest; logs what it carried out."""

    def __init__(self) -> None:
        self.log: list[tuple[str, Command]] = []

    @handles(*ALL[:-2])
    def most(self, command: Command) -> None:
        self.log.append(("most", command))

    @handles(StartEnvStep, InitialLayout)
    def rest(self, command: Command) -> None:
        self.log.append(("rest", command))

    @handles(float)
    def own(self, value: float) -> None:
        self.log.append(("own", value))


def test_execute_calls_the_handler_of_the_exact_type() -> None:
    shell = Everything()
    offload = Offload(3, (0, 1))
    layout = InitialLayout((0,), (1,))
    shell.execute(offload)
    shell.execute(layout)
    assert shell.log == [("most", offload), ("rest", layout)]
    assert Everything.handlers[float] is Everything.own  # a shell's own type is in the table
    assert set(Everything.handlers) == {*ALL, float} and Shell.handlers == {}
    with pytest.raises(TypeError, match=r"^unknown command 'x'$"):
        shell.execute("x")
    assert len(shell.log) == 2


def test_a_shell_missing_a_handler_is_refused_when_its_class_is_made() -> None:
    with pytest.raises(TypeError) as info:

        class Partial(Shell):
            @handles(*ALL[1:4], *ALL[5:-1])
            def most(self, command: Command) -> None:
                pass

    assert str(info.value) == "Partial has no handler for LoadPrompts, Reload, InitialLayout"


def test_one_class_may_not_mark_two_methods_for_one_type() -> None:
    with pytest.raises(TypeError) as info:

        class Twice(Shell):
            @handles(*ALL)
            def first(self, command: Command) -> None:
                pass

            @handles(Abort)
            def second(self, command: Command) -> None:
                pass

    assert str(info.value) == "Twice: Abort is handled by both first and second"


def test_a_subclass_overrides_by_name_or_by_a_new_mark() -> None:
    class Override(Everything):
        def rest(self, command: Command) -> None:  # not marked again: still the handler
            self.log.append(("override", command))

        @handles(Abort)
        def abort(self, command: Command) -> None:  # replaces its base's mark for Abort
            self.log.append(("abort", command))

    shell = Override()
    step = StartEnvStep(1, 0, 2.0)
    abort = Abort(0, (4,))
    shell.execute(step)
    shell.execute(abort)
    shell.execute(Reload(5, (1,)))
    assert [name for name, _ in shell.log] == ["override", "abort", "most"]
    assert Everything.handlers[Abort] is Everything.most  # the base's table is its own


def test_the_base_class_hook_of_a_cooperating_base_still_runs() -> None:
    seen: list[str] = []

    class Registered:
        def __init_subclass__(cls, **kwargs: object) -> None:
            super().__init_subclass__(**kwargs)
            seen.append(cls.__name__)

    class Both(Everything, Registered):
        pass

    assert seen == ["Both"] and Both.handlers == Everything.handlers
