"""One contract for every shell (design/rlsched_shell.md): every shell of the project has a
handler for every command type the core can emit, and the core emits nothing else.

The shells are found as the subclasses of `rlsched.core.shell.Shell` once their modules are
imported: the simulator (design/rlsched_sim.md 0.11.0), the Ray driver and the test worlds. A
shell lacking a handler cannot even be defined (`Shell.__init_subclass__` refuses it), so every
test importing it fails too.
"""

from __future__ import annotations

import pytest

from rlsched.core.commands import Abort, Dispatch
from rlsched.core.events import Started
from rlsched.core.shell import COMMAND_TYPES, Shell, handles
from tests.test_core_properties import World
from tests.test_core_review import FifoShell, ReviewWorld, make_cfg


def shells() -> set[type]:
    from rlsched.sim.shell import Simulation

    pytest.importorskip("ray")
    from rlsched.runtime.driver import Driver

    found, todo = set(), [Shell]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub.__module__.startswith(("rlsched.", "tests.")) and sub not in found:
                found.add(sub)
                todo.append(sub)
    assert {Simulation, Driver, World, ReviewWorld, FifoShell} <= found
    return found


def test_every_shell_handles_every_command_type() -> None:
    for shell in shells():
        missing = [kind.__name__ for kind in COMMAND_TYPES if kind not in shell.handlers]
        assert not missing, f"{shell.__qualname__} lacks {missing}"
        assert all(callable(shell.handlers[kind]) for kind in COMMAND_TYPES)


def test_the_core_emits_only_the_command_types_a_shell_must_handle() -> None:
    shell = FifoShell(make_cfg("timeshare", count=4, train=1, max_turns=2))
    shell.feed(Started(0.0))
    assert shell.run_until(lambda: shell.sched.stats.train_steps >= 3)
    emitted = {type(c) for c in shell.log}
    assert emitted <= set(COMMAND_TYPES)
    assert len(emitted) >= 8, emitted  # a run with steps emits most kinds


def test_a_shell_without_a_handler_is_refused_naming_the_command() -> None:
    with pytest.raises(TypeError, match=r"^Half has no handler for Abort$"):

        class Half(Shell):
            @handles(*(kind for kind in COMMAND_TYPES if kind is not Abort))
            def carry(self, command: object) -> None:
                pass

    class Whole(Shell):
        @handles(*COMMAND_TYPES)
        def carry(self, command: object) -> None:
            self.last = command

    whole = Whole()
    whole.execute(Dispatch(0, 0, 0, 0, 0, 1, 0, 1, 0, None))
    assert isinstance(whole.last, Dispatch)
