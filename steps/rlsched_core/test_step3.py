"""Step 3 of design/rlsched_core.md: the command base and the commands for requests and devices."""

import dataclasses

import pytest

from rlsched.core.commands import (
    Abort,
    Command,
    Dispatch,
    InitialLayout,
    LoadPrompts,
    Offload,
    Reload,
    SyncWeights,
)


def test_dispatch_carries_everything_a_shell_needs() -> None:
    d = Dispatch(
        rid=1,
        tid=2,
        gid=0,
        turn=3,
        rank=4,
        context_tokens=900,
        resume_tokens=20,
        max_new_tokens=100,
        version=2,
        env_deadline=None,
    )
    assert [f.name for f in dataclasses.fields(Dispatch)] == [
        "rid",
        "tid",
        "gid",
        "turn",
        "rank",
        "context_tokens",
        "resume_tokens",
        "max_new_tokens",
        "version",
        "env_deadline",
        "chunked",
    ]
    assert d == Dispatch(1, 2, 0, 3, 4, 900, 20, 100, 2, None)
    assert d.chunked is False  # a whole turn unless the core says it is a chunk
    assert Dispatch(1, 2, 0, 3, 4, 900, 20, 100, 2, None, True) != d
    assert Dispatch(1, 2, 0, 3, 4, 900, 20, 100, 2, 630.5).env_deadline == 630.5
    with pytest.raises(dataclasses.FrozenInstanceError):
        d.rank = 5  # type: ignore[misc]


def test_device_and_request_commands() -> None:
    commands = [
        LoadPrompts(0, 4),
        Abort(1, (3, 4)),
        Offload(1, (2, 3)),
        Reload(2, (2, 3)),
        SyncWeights(1, (0,)),
        InitialLayout((0, 1), (2, 3)),
    ]
    assert all(isinstance(c, Command) and not hasattr(c, "__dict__") for c in commands)
    assert commands[1].rids == (3, 4) and commands[4].version == 1
    assert hash(Offload(1, (2, 3))) == hash(commands[2])
    assert (commands[0].load_id, commands[0].count) == (0, 4)
    assert (commands[2].op_id, commands[3].op_id) == (1, 2)
    assert (commands[5].rollout, commands[5].offloaded) == ((0, 1), (2, 3))
