"""Step 10 of design/rlsched_sim.md: heap order, rank wake-ups and device activity."""

import heapq
from pathlib import Path

import pytest

from rlsched.core.commands import Dispatch
from rlsched.core.events import (
    EnvStepDone,
    EnvStepTimedOut,
    RequestAborted,
    RequestFinished,
    Started,
)
from rlsched.sim.params import load_sim_config
from rlsched.sim.shell import PendingRequest, Simulation, TrajRecord
from rlsched.sim.workload import Workload

ROOT = Path(__file__).resolve().parents[2]


def _simulation() -> Simulation:
    sim = load_sim_config(ROOT / "examples" / "four_gpu.yaml")
    cfg = sim.policy_config("timeshare")
    return Simulation(cfg, sim.cost, Workload(sim.workload, 0, 4, 16384))


def _pending(
    simulation: Simulation, rid: int, tid: int, rank: int, resume: int, chunk: int, ends: bool
) -> None:
    """Open the ledger record of request `rid` of `tid` on `rank` (`chunk` 0: not chunked)."""
    dispatch = Dispatch(rid, tid, 0, 0, rank, 0, resume, chunk or 10_000, 0, None, bool(chunk))
    simulation.ledger.open(PendingRequest(0.0, dispatch, ends))


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
    assert not simulation._stale(0, 10.0)
    rank.submit(0.0, 2, 100, 600)  # its prefill slows decode: the first wake-up is stale
    simulation._schedule_rank(0)  # as every change of a rank's work is followed (0.13.0)
    assert simulation._stale(0, 10.0)
    wake = simulation._wake[0]
    assert wake is not None and wake != 10.0 and not simulation._stale(0, wake)
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
    _pending(simulation, 0, 0, 1, 0, 64, False)  # tid 0 on rank 1, no kept tokens
    simulation._note(RequestFinished(1.0, 0, 64))
    record = simulation._trajs[0]
    assert (record.context, record.gen_kept, record.cached_tokens) == (100, 0, 164)
    _pending(simulation, 1, 0, 1, 64, 64, True)  # the turn's last chunk
    simulation._note(RequestFinished(2.0, 1, 64, stopped=True))
    assert (record.context, record.gen_kept, record.cached_tokens) == (228, 128, 228)
    assert record.cached_rank == 1 and len(simulation.ledger) == 0


def test_note_keeps_each_trajectory_record_as_events_arrive() -> None:
    """Tokens, observations, the trajectory's critical path and its last event, per event kind;
    events of a trajectory the shell no longer tracks change nothing."""
    simulation = _simulation()
    rate = simulation.cost.decode_rank_tokens_per_s.value
    cap = simulation.cost.decode_request_tokens_per_s.value
    prefill = simulation.cost.prefill_s_per_token.value
    lone = min(rate, cap)  # no KV model on four_gpu: a lone request decodes at the cap
    record = TrajRecord(5, 10, context=10)
    simulation._trajs[5] = record
    _pending(simulation, 7, 5, 1, 0, 0, False)
    simulation._note(RequestFinished(3.0, 7, 30))
    assert (record.context, record.gen_kept, record.cached_tokens) == (40, 30, 40)
    assert (record.cached_rank, record.last_event) == (1, 3.0)
    assert record.path_s == pytest.approx(30 / lone) and len(simulation.ledger) == 0
    simulation._note(EnvStepDone(4.0, 5, 0, 12, False))
    assert (record.context, record.obs, record.last_event) == (52, 12, 4.0)
    assert record.path_s == pytest.approx(30 / lone + 12 * prefill)
    simulation._note(EnvStepDone(5.0, 5, 1, 3, True))  # the last observation is no prefill
    assert (record.context, record.obs, record.last_event) == (55, 15, 5.0)
    assert record.path_s == pytest.approx(30 / lone + 12 * prefill)
    _pending(simulation, 8, 5, 1, 0, 0, False)
    simulation._note(RequestAborted(6.0, 8, 4))
    assert (record.context, record.gen_kept, record.last_event) == (55, 30, 6.0)
    assert len(simulation.ledger) == 0
    simulation._note(EnvStepTimedOut(7.0, 5, 2))
    assert (record.context, record.last_event) == (55, 7.0)
    # a trajectory that is gone (trained or dropped): its late events are absorbed
    _pending(simulation, 9, 99, 0, 0, 0, False)
    simulation._note(RequestFinished(8.0, 9, 5))
    simulation._note(EnvStepDone(8.0, 99, 0, 5, False))
    simulation._note(EnvStepTimedOut(8.0, 99, 0))
    assert set(simulation._trajs) == {5} and record.last_event == 7.0


def test_a_longer_context_makes_a_lone_token_slower_with_memory() -> None:
    """With a KV model, a request's lone speed falls as its context grows (reading its KV)."""
    sim = load_sim_config(ROOT / "examples" / "paper_160gpu.yaml")
    cfg = sim.policy_config("timeshare")
    work = Workload(sim.workload, 0, cfg.scheduler.group_size, cfg.scheduler.max_tokens)
    simulation = Simulation(cfg, sim.cost, work)
    assert simulation._kv_s > 0
    paths = []
    for tid, context in ((0, 10), (1, 100_000)):
        simulation._trajs[tid] = TrajRecord(tid, context, context=context)
        _pending(simulation, tid, tid, 0, 0, 0, False)
        simulation._note(RequestFinished(1.0, tid, 50))
        paths.append(simulation._trajs[tid].path_s)
    assert 0 < paths[0] < paths[1]


def test_a_finished_request_adds_the_kv_it_held_to_its_trajectory_need() -> None:
    """The memory bound's input (0.7.0): n tokens from position b on, each held at
    min(position, capacity) for the lone-stream latency at b."""
    sim = load_sim_config(ROOT / "examples" / "paper_160gpu.yaml")
    cfg = sim.policy_config("timeshare")
    work = Workload(sim.workload, 0, cfg.scheduler.group_size, cfg.scheduler.max_tokens)
    simulation = Simulation(cfg, sim.cost, work)
    capacity = simulation._capacity
    assert capacity == 212_973
    step_s, kv_s = 1 / 50.0, simulation._kv_s
    # 1,000 context + 200 kept tokens, 300 new: positions 1,200 .. 1,499
    simulation._trajs[0] = TrajRecord(0, 1000, context=1000)
    _pending(simulation, 0, 0, 2, 200, 0, False)
    simulation._note(RequestFinished(1.0, 0, 300))
    latency = step_s + 1200 * kv_s
    held = sum(range(1200, 1500))
    assert simulation._trajs[0].kv_need == pytest.approx(held * latency)
    read = 300 * 1200 * (step_s / capacity + kv_s)
    assert simulation._trajs[0].kv_read_s == pytest.approx(read)
    # near the capacity: positions past it count at the capacity
    base = capacity - 10
    simulation._trajs[1] = TrajRecord(1, base, context=base)
    _pending(simulation, 1, 1, 2, 0, 0, False)
    simulation._note(RequestFinished(1.0, 1, 30))
    held = sum(range(base, capacity)) + 20 * capacity
    assert simulation._trajs[1].kv_need == pytest.approx(held * (step_s + base * kv_s))
    read = 30 * base * (step_s / capacity + kv_s)
    assert simulation._trajs[1].kv_read_s == pytest.approx(read)
    over = TrajRecord(2, 0, context=capacity + 500)  # a lone request past the capacity
    simulation._trajs[2] = over
    _pending(simulation, 2, 2, 2, 0, 0, False)
    simulation._note(RequestFinished(1.0, 2, 10))
    assert over.kv_read_s == pytest.approx(10 * capacity * (step_s / capacity + kv_s))
    # without a memory model nothing is needed
    plain = _simulation()
    plain._trajs[0] = TrajRecord(0, 10, context=10)
    _pending(plain, 0, 0, 1, 0, 0, False)
    plain._note(RequestFinished(1.0, 0, 30))
    assert plain._trajs[0].kv_need == 0.0 == plain._trajs[0].kv_read_s and plain._capacity == 0
