"""Step 14 of design/rlsched_sim.md: several policies, in worker processes, same results."""

from pathlib import Path

from rlsched.sim.params import load_sim_config
from rlsched.sim.runner import ideal_of, run_policies

ROOT = Path(__file__).resolve().parents[2]


def test_parallel_runs_equal_sequential_runs() -> None:
    sim = load_sim_config(ROOT / "examples" / "four_gpu.yaml")
    names = list(sim.policies)
    seen: list[tuple[str, int]] = []
    sequential = run_policies(sim, names, 2, jobs=1)
    parallel = run_policies(sim, names, 2, jobs=2, progress=lambda n, d: seen.append((n, d)))
    for name in names:
        a = {k: v for k, v in sequential[name].summary.items() if k != "wall_s"}
        b = {k: v for k, v in parallel[name].summary.items() if k != "wall_s"}
        assert a == b
        assert parallel[name].result.timeline.spans == sequential[name].result.timeline.spans
    assert sorted(seen) == sorted((n, d) for n in names for d in (1, 2))
    ideal = ideal_of(sim, 2)
    assert ideal["step_time_s"] <= min(r.summary["step_time_s"] for r in sequential.values())
