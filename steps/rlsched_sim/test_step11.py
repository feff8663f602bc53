"""Step 11 of design/rlsched_sim.md: commands executed against the models."""

from pathlib import Path

from rlsched.config import RlschedConfig
from rlsched.core.commands import Dispatch, LoadPrompts
from rlsched.core.events import PromptsLoaded, Started
from rlsched.sim.params import CostModel, WorkloadModel, load_sim_config
from rlsched.sim.shell import Simulation
from rlsched.sim.workload import Workload

ROOT = Path(__file__).resolve().parents[2]


def test_started_loads_prompts_and_dispatches_on_the_ranks() -> None:
    sim = load_sim_config(ROOT / "examples" / "four_gpu.yaml")
    cfg = sim.policy_config("colocate")
    work = Workload(sim.workload, 0, 4, 16384)
    seen = []
    simulation = Simulation(cfg, sim.cost, work, observer=lambda e, c: seen.append((e, c)))
    simulation._feed(Started(0.0))
    load = next(c for c in seen[0][1] if isinstance(c, LoadPrompts))
    at, _, answer, _ = simulation._heap[0]
    assert at == 0.0 and isinstance(answer, PromptsLoaded) and answer.load_id == load.load_id
    assert answer.prompt_tokens == tuple(work.prompt_tokens(g) for g in range(load.count))
    import heapq

    heapq.heappop(simulation._heap)
    simulation._feed(answer)
    dispatched = [c for c in seen[1][1] if isinstance(c, Dispatch)]
    assert len(dispatched) == 2 * 32  # (staleness 1 + 1) batches of 32 trajectories
    assert sum(r.load for r in simulation.ranks) == len(dispatched)
    assert simulation.result.prefill_tokens == sum(d.context_tokens for d in dispatched)
    assert all(simulation.timeline.kind(d) == "rollout" for d in range(4))


def _chunked_simulation() -> Simulation:
    """One device, turns of exactly 50 tokens, chunks of 25."""
    cfg = RlschedConfig.model_validate({
        "devices": {"count": 1},
        "scheduler": {"mode": "colocate", "train_batch_size": 1, "group_size": 1, "staleness": 0,
                      "max_tokens": 10_000, "chunk_tokens": 25},
    })
    s = lambda v: {"value": v, "source": "step check"}  # noqa: E731
    cost = CostModel.model_validate({
        "decode_rank_tokens_per_s": s(100), "decode_request_tokens_per_s": s(10),
        "prefill_s_per_token": s(0.01), "prefix_cache": False, "train_s_per_token": s(0.001),
        "train_fixed_s": s(2), "sync_s": s(0), "offload_s": s(0), "reload_s": s(0),
    })
    d = lambda v: {"median": v, "source": "step check"}  # noqa: E731
    model = WorkloadModel.model_validate({
        "prompt_tokens": d(100), "turns": d(2), "turns_within_group_sigma": s(0),
        "gen_tokens": d(50), "obs_tokens": d(10), "env_step_s": d(1.0),
    })
    return Simulation(cfg, cost, Workload(model, 0, 1, 10_000))


def test_a_dispatch_records_whether_it_reaches_the_end_of_its_turn() -> None:
    """The shell knows the turn's length (0.3.0): a dispatch that can generate all the turn
    still lacks will end the turn (its finish says `stopped`); one cut by the chunk will not."""
    simulation = _chunked_simulation()
    simulation._dispatch(Dispatch(0, 0, 0, 0, 0, 100, 0, 25, 0, None))  # 25 of 50
    simulation._dispatch(Dispatch(1, 0, 0, 0, 0, 100, 25, 25, 0, None))  # the last 25
    simulation._dispatch(Dispatch(2, 0, 0, 0, 0, 100, 10, 100, 0, None))  # 40 left, room for 100
    ends = {rid: simulation._requests[rid][4] for rid in (0, 1, 2)}
    assert ends == {0: False, 1: True, 2: True}
    assert [simulation._requests[rid][3] for rid in (0, 1, 2)] == [True, True, True]
