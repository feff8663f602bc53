"""Step 3 of design/rlsched_shell.md: records of training steps, prompt loads and recoveries."""

import dataclasses

from rlsched.core.commands import LoadPrompts, Train, TrainSample
from rlsched.core.shell import PendingOp, PendingPrompts, PendingRecovery, PendingTrain


def test_a_training_step_is_keyed_by_its_step() -> None:
    train = Train(5, (2, 3), 4, (TrainSample(0, 0, (3, 4), False),))
    op = PendingTrain(9.0, train)
    assert isinstance(op, PendingOp) and op.command is train and op.key == (PendingTrain, 5)


def test_a_prompt_load_is_keyed_by_its_load_id() -> None:
    op = PendingPrompts(0.5, LoadPrompts(11, 2))
    assert op.key == (PendingPrompts, 11) and op.command.count == 2


def test_a_recovery_is_keyed_by_its_device_and_keeps_the_shell_s_handle() -> None:
    handle = object()
    op = PendingRecovery(3.0, 6, handle)
    assert op.key == (PendingRecovery, 6) and op.worker is handle and op.sent == 3.0
    assert [f.name for f in dataclasses.fields(op)] == ["sent", "device", "worker"]
