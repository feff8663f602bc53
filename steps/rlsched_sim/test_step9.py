"""Step 9 of design/rlsched_sim.md: the records of a run and a constructed simulation."""

from pathlib import Path

from rlsched.sim.params import load_sim_config
from rlsched.sim.shell import SimResult, Simulation, TrajRecord
from rlsched.sim.workload import Workload

ROOT = Path(__file__).resolve().parents[2]


def test_simulation_builds_one_rank_model_per_rank() -> None:
    sim = load_sim_config(ROOT / "examples" / "paper_160gpu.yaml")
    cfg = sim.policy_config("timeshare")
    work = Workload(sim.workload, 0, cfg.scheduler.group_size, cfg.scheduler.max_tokens)
    simulation = Simulation(cfg, sim.cost, work, name="ts")
    assert len(simulation.ranks) == 20
    # the paper's ranks have memory (cost.kv): a 20 ms lone step, 212,973 tokens of KV
    assert simulation.ranks[0].step_s == 1 / 50.0
    assert simulation.ranks[0].capacity == 212_973 == simulation.result.kv_capacity
    assert simulation.result.staleness == 1
    four = load_sim_config(ROOT / "examples" / "four_gpu.yaml")
    plain = Simulation(
        four.policy_config("timeshare"), four.cost, Workload(four.workload, 0, 4, 16384)
    )
    assert plain.ranks[0].cap == 60.0 and plain.result.kv_capacity == 0
    assert simulation.timeline.num_devices == 160
    assert simulation.result.name == "ts" and simulation.result.train_devices == tuple(
        range(32, 160)
    )


def test_sim_time_is_the_last_step() -> None:
    result = SimResult("x", 4, 1, (2, 3), 2)
    assert result.sim_time == 0.0
    result.step_done.extend([10.0, 25.5])
    assert result.sim_time == 25.5


def test_a_new_simulation_holds_its_inputs_and_starts_empty() -> None:
    sim = load_sim_config(ROOT / "examples" / "paper_160gpu.yaml")
    cfg = sim.policy_config("timeshare")
    work = Workload(sim.workload, 0, cfg.scheduler.group_size, cfg.scheduler.max_tokens)
    seen: list[object] = []
    simulation = Simulation(cfg, sim.cost, work, observer=seen.append)
    assert simulation.cfg is cfg and simulation.cost is sim.cost and simulation.workload is work
    assert simulation.observer == seen.append and simulation.result.name == "timeshare"
    assert (simulation.now, simulation._seq, simulation._next_gid) == (0.0, 0, 0)
    assert simulation._trajs == {} and simulation._requests == {} and simulation._heap == []


def test_records_start_at_zero() -> None:
    record = TrajRecord(gid=1, prompt=2)
    assert (record.context, record.gen_kept, record.obs, record.first_dispatch) == (0, 0, 0, None)
    assert (record.last_event, record.cached_rank, record.cached_tokens) == (0.0, -1, 0)
    assert record.cached_epoch == -1
    result = SimResult("x", 4, 1, (2, 3), 2)
    counters = (
        result.events,
        result.decoded_tokens,
        result.prefill_tokens,
        result.useful_tokens,
        result.live_kept_tokens,
        result.trained_trajectories,
        result.trained_prefill_tokens,
        result.trained_context_tokens,
        result.timeouts,
        result.stale_dropped,
    )
    assert counters == (0,) * 10 and result.wall_s == 0.0 and result.timeline is None


def test_ranks_read_kv_at_the_cost_model_rate_and_show_their_load() -> None:
    """The memory ranks read KV at the cost model's rate for the pool's tensor parallelism, and a
    rank that takes load shows rollout on exactly its own devices (idle ones stay idle)."""
    sim = load_sim_config(ROOT / "examples" / "paper_160gpu.yaml")
    cfg = sim.policy_config("timeshare")
    work = Workload(sim.workload, 0, cfg.scheduler.group_size, cfg.scheduler.max_tokens)
    simulation = Simulation(cfg, sim.cost, work)
    tp = simulation.core.pool.gpus_per_rank
    assert tp > 1
    assert simulation.ranks[0].kv_s == sim.cost.kv.read_s_per_token(tp) > 0
    assert {simulation.timeline.kind(d) for d in range(cfg.num_devices)} == {"idle"}
    simulation.ranks[1].submit(0.0, 0, 0, 100, 50)
    simulation._schedule_rank(1)
    kinds = [simulation.timeline.kind(d) for d in range(3 * tp)]
    assert kinds == ["idle"] * tp + ["rollout"] * tp + ["idle"] * tp
