"""Trajectory moves as the property worlds see them (design/rlsched_core.md 0.7.0).

Between two events a trajectory may move several times (finished, its environment step done,
queued and dispatched again in one event), so a world that only sees states after each event
checks that every change it sees is a path of `Trajectory.TRANSITIONS`: a trajectory that was
DONE or TRAINING never runs or waits again, and a new trajectory starts QUEUED.
"""

from __future__ import annotations

from rlsched.core.buffer import Trajectory, TrajectoryBuffer, TrajState


def reachable(transitions: dict[TrajState, frozenset[TrajState]]) -> dict[TrajState, set]:
    """Each state -> the states reachable from it in one or more moves of `transitions`."""
    closure = {s: set(transitions.get(s, ())) for s in TrajState}
    changed = True
    while changed:
        changed = False
        for state, targets in closure.items():
            more = set().union(*(closure[t] for t in targets)) - targets if targets else set()
            if more:
                targets |= more
                changed = True
    return closure


REACHABLE = reachable(Trajectory.TRANSITIONS)


class MoveWatch:
    """The live trajectories' states after the last event; `check` asserts that every change
    since then is a path of the table."""

    def __init__(self) -> None:
        self.states: dict[int, TrajState] = {}

    def check(self, buffer: TrajectoryBuffer) -> None:
        states = {}
        for tid, traj in buffer.trajs.items():
            before = self.states.get(tid, TrajState.QUEUED)  # admitted QUEUED
            after = traj.state
            assert after is before or after in REACHABLE[before], (
                f"trajectory {tid} went {before.name} -> {after.name}, "
                "no path of Trajectory.TRANSITIONS"
            )
            states[tid] = after
        self.states = states
