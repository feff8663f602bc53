"""Step 11 of design/rlsched_sim.md: commands executed against the models."""

from pathlib import Path

from rlsched.core.commands import Dispatch, LoadPrompts
from rlsched.core.events import PromptsLoaded, Started
from rlsched.sim.params import load_sim_config
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
