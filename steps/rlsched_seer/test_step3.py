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


def test_older_batches_rank_first_in_both_orders() -> None:
    config = RlschedConfig.model_validate(
        {
            "devices": {"count": 2},
            "scheduler": {"mode": "colocate", "train_batch_size": 4, "group_size": 2},
        }
    )
    assert make_placement(config.model_copy(), lambda t: 1).__class__ is FifoPlacement
    context_cfg = config.model_copy(
        update={"scheduler": config.scheduler.model_copy(update={"placement": "context"})}
    )
    oracle_cfg = config.model_copy(
        update={"scheduler": config.scheduler.model_copy(update={"placement": "oracle"})}
    )
    assert make_placement(context_cfg).groups_per_batch == 2
    assert make_placement(oracle_cfg, lambda t: 1).groups_per_batch == 2
    buf = TrajectoryBuffer(2, 10**6)
    groups = [[buf.trajs[t] for t in buf.admit_group(5).tids] for _ in range(3)]
    # groups 0 and 1 are the first batch, group 2 the second
    queue = ContextAwarePlacement(fifo_every=100, groups_per_batch=2)
    for group in groups:
        for traj in group:
            queue.push(traj)
    assert queue.priority(groups[2][0]) == (4 - 2, 0)  # the second batch's probe
    assert queue.priority(groups[0][1]) == (-1, 0)  # the first batch's unknown sample
    # the first batch's probes, then its unknown samples, before the second batch's probe
    assert [queue.pop() for _ in range(4)] == [
        groups[0][0],
        groups[1][0],
        groups[0][1],
        groups[1][1],
    ]
    assert queue.pop() is groups[2][0]
    lengths = {groups[0][0].tid: 1, groups[2][0].tid: 1000}
    oracle = OraclePlacement(lambda t: lengths[t.tid], fifo_every=100, groups_per_batch=2)
    oracle.push(groups[2][0])
    oracle.push(groups[0][0])
    assert oracle.pop() is groups[0][0]  # older batch first, though 1,000 tokens shorter
    assert OraclePlacement(lambda t: 7).priority(groups[2][0]) == (0, -7)  # no batches: length
