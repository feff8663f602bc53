"""Step 9 of design/rlsched_sim.md: the records of a run and a constructed simulation."""

from pathlib import Path

import pytest

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


def test_step_ranks_run_a_step_in_passes_when_the_cost_model_says_so() -> None:
    four = load_sim_config(ROOT / "examples" / "four_gpu.yaml")
    s = {"value": 0.001, "source": "a test"}
    names = ("step_fixed_s", "step_row_s", "step_token_s", "step_context_s", "step_join_s")
    data = four.model_dump(mode="json", exclude_none=True)
    data["cost"] |= {name: s for name in names}
    cfg = four.policy_config("timeshare")
    work = Workload(four.workload, 0, 4, 16384)
    one = Simulation(cfg, load_sim_config(data).cost, work)
    assert {(r.split_tokens, r.pass_s) for r in one.ranks} == {(None, 0.0)}  # one pass a step
    data["cost"] |= {"step_split_tokens": {"value": 64, "source": "a test"}, "step_pass_s": s}
    two = Simulation(cfg, load_sim_config(data).cost, work)
    assert {(r.split_tokens, r.pass_s) for r in two.ranks} == {(64, 0.001)}
    assert isinstance(two.ranks[0].split_tokens, int)


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
    assert simulation._trajs == {} and len(simulation.ledger) == 0 and simulation._heap == []
    assert simulation.result.transition_s == {} and simulation._transitions.shrink_since is None


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


def test_a_policy_s_kv_options_give_its_ranks_a_host_tier_and_moved_kv() -> None:
    """0.7.0: `kv_host` sizes each rank's host tier from host_gb and prices its loads at
    host_gb_per_s; `kv_migration: move` prices moved KV at link_gb_per_s; the ranks that ever
    roll out are all but disaggregated's training ranks."""
    sim = load_sim_config(ROOT / "examples" / "paper_160gpu.yaml")
    kv = sim.cost.kv
    token = kv.bytes_per_token(8)
    assert token == 48_128
    for name in ("timeshare", "disaggregated"):
        cfg = sim.policy_config(name)
        work = Workload(sim.workload, 0, cfg.scheduler.group_size, cfg.scheduler.max_tokens)
        plain = Simulation(cfg, sim.cost, work)
        rank = plain.ranks[0]
        assert (rank.host_capacity, rank.host_s, rank.move_s, rank.fetch_s) == (0, 0.0, 0.0, 0.0)
        options = {"kv_pool": "global", "kv_host": True, "kv_migration": "move"}
        tiered = Simulation(cfg, sim.cost, work, **options)
        rank = tiered.ranks[7]
        assert rank.host_capacity == int(kv.host_gb.value * 1e9 // token)
        assert rank.host_s == pytest.approx(token / (kv.host_gb_per_s.value * 1e9))
        assert rank.move_s == pytest.approx(token / (kv.link_gb_per_s.value * 1e9))
        assert rank.fetch_s == pytest.approx(token / (kv.pool_gb_per_s.value * 1e9))
        assert (tiered._host, tiered._move, tiered._pool) == (True, True, True)
    assert plain.result.rollout_ranks == 4 and plain._rollout_ranks == {0, 1, 2, 3}
    timeshare = Simulation(sim.policy_config("timeshare"), sim.cost, work)
    assert timeshare.result.rollout_ranks == 20
    four = load_sim_config(ROOT / "examples" / "four_gpu.yaml")
    work = Workload(four.workload, 0, 4, 16384)
    memoryless = Simulation(four.policy_config("timeshare"), four.cost, work, kv_host=True)
    assert memoryless._host is False and memoryless._capacity == 0
