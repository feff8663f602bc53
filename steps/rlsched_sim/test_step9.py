"""Step 9 of design/rlsched_sim.md: the records of a run and a constructed simulation."""

from pathlib import Path

from rlsched.sim.params import load_sim_config
from rlsched.sim.shell import SimResult, Simulation
from rlsched.sim.workload import Workload

ROOT = Path(__file__).resolve().parents[2]


def test_simulation_builds_one_rank_model_per_rank() -> None:
    sim = load_sim_config(ROOT / "examples" / "paper_160gpu.yaml")
    cfg = sim.policy_config("timeshare")
    work = Workload(sim.workload, 0, cfg.scheduler.group_size, cfg.scheduler.max_tokens)
    simulation = Simulation(cfg, sim.cost, work, name="ts")
    assert len(simulation.ranks) == 20
    assert simulation.ranks[0].cap == 50.0
    assert simulation.timeline.num_devices == 160
    assert simulation.result.name == "ts" and simulation.result.train_devices == tuple(
        range(32, 160)
    )


def test_sim_time_is_the_last_step() -> None:
    result = SimResult("x", 4, 1, (2, 3), 2)
    assert result.sim_time == 0.0
    result.step_done.extend([10.0, 25.5])
    assert result.sim_time == 25.5
