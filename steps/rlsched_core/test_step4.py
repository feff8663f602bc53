"""Step 4 of design/rlsched_core.md: training batches, stale drops, environment steps."""

import dataclasses

from rlsched.core.commands import Command, DropStale, StartEnvStep, Train, TrainSample


def test_train_carries_samples_with_turn_versions() -> None:
    samples = (TrainSample(0, 0, (1, 1, 2), False), TrainSample(1, 0, (2,), True))
    train = Train(step=3, devices=(6, 7), version=2, samples=samples)
    assert isinstance(train, Command) and not isinstance(samples[0], Command)
    assert train.samples[0].turn_versions == (1, 1, 2) and train.samples[1].timed_out
    assert [f.name for f in dataclasses.fields(Train)] == ["step", "devices", "version", "samples"]


def test_drop_and_env_commands() -> None:
    drop = DropStale(gids=(1,), tids=(8, 9))
    env = StartEnvStep(tid=8, turn=2, deadline=630.5)
    assert isinstance(drop, Command) and isinstance(env, Command)
    assert (env.tid, env.turn, env.deadline) == (8, 2, 630.5)
    assert drop == DropStale((1,), (8, 9))
