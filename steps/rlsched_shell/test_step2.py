"""Step 2 of design/rlsched_shell.md: records of requests, environment steps and device
operations, holding their command and keyed by the id their answer names."""

import dataclasses

import pytest

from rlsched.core.commands import Dispatch, Offload, Reload, StartEnvStep, SyncWeights
from rlsched.core.shell import PendingDeviceOp, PendingEnvStep, PendingOp, PendingRequest

DISPATCH = Dispatch(9, 4, 1, 2, 0, 30, 0, 50, 3, None)


def test_a_request_is_keyed_by_its_rid_and_holds_its_dispatch() -> None:
    op = PendingRequest(1.5, DISPATCH)
    assert isinstance(op, PendingOp) and op.sent == 1.5 and op.command is DISPATCH
    assert op.key == (PendingRequest, 9)
    assert [f.name for f in dataclasses.fields(op)] == ["sent", "command"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        op.sent = 2.0  # type: ignore[misc]
    assert not hasattr(op, "__dict__")


def test_a_shell_s_own_record_keeps_its_kind() -> None:
    @dataclasses.dataclass(frozen=True, slots=True)
    class Mine(PendingRequest):
        ends: bool

    op = Mine(0.0, DISPATCH, True)
    assert op.key == (PendingRequest, 9) and op.ends


def test_an_environment_step_is_keyed_by_trajectory_and_turn() -> None:
    op = PendingEnvStep(2.0, StartEnvStep(4, 3, 32.0))
    assert op.key == (PendingEnvStep, (4, 3))
    assert op.key != PendingEnvStep(2.0, StartEnvStep(3, 4, 32.0)).key


def test_a_device_operation_is_keyed_by_command_type_device_and_id() -> None:
    offload = Offload(7, (0, 1))
    assert PendingDeviceOp(0.0, offload, 1).key == (PendingDeviceOp, (Offload, 1, 7))
    assert PendingDeviceOp(0.0, offload, 0).key == (PendingDeviceOp, (Offload, 0, 7))
    assert PendingDeviceOp(0.0, Reload(8, (1,)), 1).key == (PendingDeviceOp, (Reload, 1, 8))
    # a sync is named by its version, which may equal an op_id: the type keeps them apart
    sync = PendingDeviceOp(0.0, SyncWeights(7, (1,)), 1)
    assert sync.key == (PendingDeviceOp, (SyncWeights, 1, 7))
    assert PendingDeviceOp(0.0, SyncWeights(2, (1,)), 1).key[1][2] == 2
    assert [f.name for f in dataclasses.fields(sync)] == ["sent", "command", "device"]
