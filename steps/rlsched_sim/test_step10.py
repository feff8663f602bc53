"""Step 10 of design/rlsched_sim.md: heap order, rank wake-ups and device activity."""

import heapq
from pathlib import Path

from rlsched.core.events import RequestFinished, Started
from rlsched.sim.params import load_sim_config
from rlsched.sim.shell import Simulation, TrajRecord
from rlsched.sim.workload import Workload

ROOT = Path(__file__).resolve().parents[2]


def _simulation() -> Simulation:
    sim = load_sim_config(ROOT / "examples" / "four_gpu.yaml")
    cfg = sim.policy_config("timeshare")
    return Simulation(cfg, sim.cost, Workload(sim.workload, 0, 4, 16384))


def test_events_at_equal_times_keep_insertion_order() -> None:
    simulation = _simulation()
    first, second, third = Started(0.1), Started(0.2), Started(0.3)
    simulation._push(2.0, first)
    simulation._push(1.0, second)
    simulation._push(1.0, third)
    popped = [heapq.heappop(simulation._heap)[2] for _ in range(3)]
    assert popped == [second, third, first]


def test_rank_wakeups_are_superseded_and_activity_follows_load() -> None:
    simulation = _simulation()
    rank = simulation.ranks[0]
    rank.submit(0.0, 1, 0, 600)  # 10 s at the cap of 60 tokens/s
    simulation._schedule_rank(0)
    assert simulation.timeline.kind(0) == "rollout"
    rank.submit(0.0, 2, 100, 600)  # its prefill pauses decode: the first wake-up is stale
    assert simulation._stale(0, 10.0)
    simulation._set_op((1,), "offload")
    assert simulation.timeline.kind(1) == "offload"
    simulation._end_op((1,), "offload", None)
    assert simulation.timeline.kind(1) == "idle"


def test_a_whole_chunk_that_stopped_closes_the_turn_in_the_record() -> None:
    """`_note` follows the core's rule (0.3.0): a chunked request that returned its whole chunk
    ended a chunk (tokens kept out of the context, cached on its rank) unless it `stopped`."""
    sim = load_sim_config(ROOT / "examples" / "four_gpu.yaml")
    cfg = sim.policy_config("timeshare")
    mapping = cfg.model_dump()
    mapping["scheduler"]["chunk_tokens"] = 64
    cfg = type(cfg).model_validate(mapping)
    simulation = Simulation(cfg, sim.cost, Workload(sim.workload, 0, 4, 16384))
    simulation._trajs[0] = TrajRecord(0, 100, context=100)
    simulation._requests[0] = (0, 1, 0, True, False)  # tid 0 on rank 1, no kept tokens
    simulation._note(RequestFinished(1.0, 0, 64))
    record = simulation._trajs[0]
    assert (record.context, record.gen_kept, record.cached_tokens) == (100, 0, 164)
    simulation._requests[1] = (0, 1, 64, True, True)  # the turn's last chunk
    simulation._note(RequestFinished(2.0, 1, 64, stopped=True))
    assert (record.context, record.gen_kept, record.cached_tokens) == (228, 128, 228)
    assert record.cached_rank == 1 and simulation._requests == {}
