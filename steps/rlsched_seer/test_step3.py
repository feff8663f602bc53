"""Step 3 of design/rlsched_seer.md: the oracle order and the factory."""

import pytest

from rlsched.config import RlschedConfig
from rlsched.core.buffer import Trajectory, TrajectoryBuffer
from rlsched.core.hooks import FifoPlacement
from rlsched.core.seer import ContextAwarePlacement, OraclePlacement, make_placement


def test_oracle_serves_the_longest_true_length_first() -> None:
    buf = TrajectoryBuffer(4, 1000)
    trajs = [buf.trajs[t] for t in buf.admit_group(5).tids]
    lengths = {trajs[0].tid: 5, trajs[1].tid: 500, trajs[2].tid: 50, trajs[3].tid: 500}
    asked: list[int] = []

    def oracle(traj: Trajectory) -> int:
        asked.append(traj.tid)
        return lengths[traj.tid]

    queue = OraclePlacement(oracle, fifo_every=100)
    for traj in trajs:
        queue.push(traj)
    queue.finished(trajs[0])  # nothing to learn
    assert [queue.pop() for _ in range(4)] == [trajs[1], trajs[3], trajs[2], trajs[0]]
    assert sorted(asked) == sorted(lengths)  # asked once per push, never re-ranked


def test_oracle_ignores_progress_at_chunk_ends() -> None:
    buf = TrajectoryBuffer(3, 1000)
    trajs = [buf.trajs[t] for t in buf.admit_group(5).tids]
    queue = OraclePlacement(lambda traj: 10 * traj.tid, fifo_every=100)
    for traj in trajs[1:]:
        queue.push(traj)
    trajs[0].resume_tokens = 400
    queue.push(trajs[0], front=True)  # a chunk end: nothing to learn, nothing re-entered
    assert queue._groups[trajs[0].gid].bound == 0
    assert len(queue._heaps[None]) == 3
    assert [queue.pop() for _ in range(3)] == [trajs[2], trajs[1], trajs[0]]


def test_make_placement_follows_the_config() -> None:
    def cfg(kind: str) -> RlschedConfig:
        return RlschedConfig.model_validate(
            {"devices": {"count": 2}, "scheduler": {"mode": "colocate", "placement": kind}}
        )

    assert type(make_placement(cfg("fifo"))) is FifoPlacement
    assert type(make_placement(cfg("context"))) is ContextAwarePlacement
    assert type(make_placement(cfg("oracle"), lambda traj: 1)) is OraclePlacement
    with pytest.raises(ValueError, match="VAL_NOT_NONE failed in make_placement"):
        make_placement(cfg("oracle"))
