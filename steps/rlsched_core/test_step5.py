"""Step 5 of design/rlsched_core.md: admission, the version index and completion."""

import pytest

from rlsched.core.buffer import Group, Trajectory, TrajectoryBuffer, TrajState


def test_admit_creates_a_group_of_queued_trajectories() -> None:
    buf = TrajectoryBuffer(group_size=3, max_tokens=100)
    g0 = buf.admit_group(10)
    g1 = buf.admit_group(20)
    assert isinstance(g0, Group) and (g0.gid, g0.tids) == (0, (0, 1, 2))
    assert g1.tids == (3, 4, 5)
    traj = buf.trajs[4]
    assert isinstance(traj, Trajectory)
    assert (traj.gid, traj.prompt_tokens, traj.context_tokens, traj.max_tokens) == (1, 20, 20, 100)
    assert traj.state is TrajState.QUEUED and traj.turn_versions == [] and traj.rid is None
    assert traj.env_deadline is None and not traj.timed_out  # no environment session yet
    assert (traj.home, traj.home_epoch) == (-1, -1)  # no rank holds its prefix yet (0.7.0)
    assert buf.live_groups == 2 and buf.admitted_groups == 2 and buf.unfinished == 6
    buf.complete(buf.trajs[0])
    assert buf.unfinished == 5 and buf.completed == 1


@pytest.mark.parametrize("prompt", [0, 100, 1000])
def test_prompt_must_leave_room_to_generate(prompt: int) -> None:
    with pytest.raises(ValueError, match="VAL_INT_RANGE failed"):
        TrajectoryBuffer(2, 100).admit_group(prompt)


def test_group_keeps_its_oldest_version() -> None:
    buf = TrajectoryBuffer(2, 100)
    group = buf.admit_group(5)
    assert group.min_version is None
    buf.note_version(buf.trajs[0], 3)
    buf.note_version(buf.trajs[1], 4)
    assert group.min_version == 3
    buf.note_version(buf.trajs[1], 2)
    assert group.min_version == 2


def test_completion_makes_the_group_ready() -> None:
    buf = TrajectoryBuffer(2, 100)
    buf.admit_group(5)
    buf.trajs[0].state = TrajState.ENV
    assert buf.complete(buf.trajs[0]) is False
    assert buf.completed == 1 and list(buf.ready) == []
    assert buf.complete(buf.trajs[1]) is True
    assert list(buf.ready) == [0] and buf.completed == 2
    with pytest.raises(ValueError, match="VAL_IN_SET failed"):
        buf.complete(buf.trajs[1])  # already DONE


def test_trajectory_moves_only_along_its_table() -> None:
    """`Trajectory.move` is the lifecycle (design 0.7.0): allowed moves happen, any other is
    ValueError naming both states and leaves the state as it was."""
    traj = Trajectory(tid=0, gid=0, prompt_tokens=4, max_tokens=64, context_tokens=4)
    for target in (TrajState.RUNNING, TrajState.QUEUED, TrajState.RUNNING, TrajState.ENV):
        traj.move(target)
        assert traj.state is target
    with pytest.raises(ValueError, match="VAL_STATE_TRANSITION failed") as info:
        traj.move(TrajState.RUNNING)  # an env step answers first
    assert "ENV" in str(info.value) and "RUNNING" in str(info.value)
    assert traj.state is TrajState.ENV
    traj.move(TrajState.DONE)
    traj.move(TrajState.TRAINING)
    traj.move(TrajState.DONE)  # a failed step returns its batch
    with pytest.raises(ValueError, match="VAL_STATE_TRANSITION failed"):
        traj.move(TrajState.QUEUED)  # done work never waits again
    traj.move(TrajState.DROPPED)
    assert Trajectory.TRANSITIONS[TrajState.DROPPED] == frozenset()
    assert set(Trajectory.TRANSITIONS) == set(TrajState)
