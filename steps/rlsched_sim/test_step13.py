"""Step 13 of design/rlsched_sim.md: figures and the ideal bound."""

from pathlib import Path

import pytest
from kv_world import KV as WORLD_KV

from rlsched.sim.metrics import Work, bound_seconds, expected_work, ideal_seconds, summarize
from rlsched.sim.params import load_sim_config
from rlsched.sim.shell import SimResult, Simulation
from rlsched.sim.workload import Workload

ROOT = Path(__file__).resolve().parents[2]
SIM = load_sim_config(ROOT / "examples" / "four_gpu.yaml")
FIELDS = {
    "step_time_s",
    "rollout_tokens_per_s",
    "trajectories_per_h",
    "utilization",
    "fraction_of_ideal",
    "tail_latency_s",
    "timeouts",
    "stale_dropped",
    "discarded_tokens",
    "train_devices_rollout_share",
}


def test_ideal_is_device_seconds_over_devices() -> None:
    cost = (
        SIM.cost
    )  # 1,500 tokens/s per rank of 1 device, 2e-5 s/prefill token, 1e-3 s/trained token
    work = Work(decode_tokens=3000, prefill_tokens=50_000, train_tokens=2000)
    assert ideal_seconds(work, cost, 4, 1) == pytest.approx((2.0 + 1.0 + 2.0) / 4)
    assert ideal_seconds(work, cost, 4, 2) == pytest.approx((4.0 + 2.0 + 2.0) / 4)


@pytest.mark.parametrize("policy", ["colocate", "disaggregated", "timeshare"])
def test_every_policy_stays_within_the_ideal(policy: str) -> None:
    cfg = SIM.policy_config(policy)
    result = Simulation(cfg, SIM.cost, Workload(SIM.workload, 3, 4, 16384)).run(3)
    summary = summarize(result, SIM.cost)
    assert FIELDS <= summary.keys()
    assert 0.0 < summary["fraction_of_ideal"] <= 1.0
    assert summary["trajectories_per_h"] == pytest.approx(3 * 32 * 3600 / result.sim_time)
    assert 0.0 < summary["utilization"] <= 1.0


def test_expected_work_cuts_turns_and_tokens() -> None:
    cfg = SIM.policy_config("timeshare")
    work = Workload(SIM.workload, 0, 4, 16384)
    full = expected_work(work, cfg, 8)
    short = cfg.model_copy(update={"scheduler": cfg.scheduler.model_copy(update={"max_turns": 1})})
    one_turn = expected_work(work, short, 8)
    assert 0 < one_turn.decode_tokens < full.decode_tokens
    assert one_turn.prefill_tokens < full.prefill_tokens


def _result(staleness: int, paths: list[float], trains: list[float], done: int) -> SimResult:
    result = SimResult("hand", 4, 1, (), done, staleness=staleness)
    result.batch_path_s = paths
    result.batch_train_s = trains
    result.step_done = [float(k) for k in range(done)]
    return result


def test_critical_path_bound_by_hand() -> None:
    # staleness 1: batch k waits for step k-2; f1 = 100 + 10, f2 = max(110, 50) + 10,
    # f3 = max(120, f1 + 80) + 10
    assert bound_seconds(_result(1, [100.0, 50.0, 80.0], [10.0] * 3, 3)) == pytest.approx(200.0)
    # synchronous: each batch waits for the previous step: 110, 110 + 50 + 10, 170 + 80 + 10
    assert bound_seconds(_result(0, [100.0, 50.0, 80.0], [10.0] * 3, 3)) == pytest.approx(260.0)
    # a batch handed to training but not finished does not count
    assert bound_seconds(_result(0, [100.0, 50.0, 80.0], [10.0] * 3, 2)) == pytest.approx(170.0)
    assert bound_seconds(_result(0, [], [], 0)) == 0.0


HOST_ONLY = ("host_gb", "host_gb_per_s", "pool_gb_per_s", "link_gb_per_s")
KV = {
    name: {"value": value, "source": "illustrative"}
    for name, value in WORLD_KV.items()
    if name not in HOST_ONLY  # HBM only: no host tier, pool or link here
}


@pytest.mark.parametrize("memory", [False, True])
@pytest.mark.parametrize("policy", ["colocate", "disaggregated", "timeshare"])
def test_no_policy_beats_the_bound_and_the_figures_are_honest(policy: str, memory: bool) -> None:
    data = SIM.model_dump()
    if memory:
        data["cost"]["kv"] = KV  # 1.6 GB per GPU over 57,344 bytes per token: 27,901 tokens
    sim = load_sim_config(data)
    cfg = sim.policy_config(policy)
    sim_run = Simulation(cfg, sim.cost, Workload(sim.workload, 3, 4, 16384))
    result = sim_run.run(3)
    summary = summarize(result, sim.cost)
    assert summary["ideal_step_time_s"] <= summary["bound_step_time_s"] <= summary["step_time_s"]
    assert 0.0 < summary["fraction_of_bound"] <= 1.0
    assert summary["fraction_of_ideal"] <= summary["fraction_of_bound"]
    assert 0.0 < summary["decode_utilization"] <= 1.0
    assert summary["prefill_per_decoded_token"] == pytest.approx(
        result.prefill_tokens / result.decoded_tokens
    )
    assert summary["critical_path_step_time_s"] <= summary["bound_step_time_s"]
    copied = result.kv_loaded + result.kv_fetched + result.kv_moved
    assert summary["transferred_per_decoded_token"] == pytest.approx(copied / result.decoded_tokens)
    assert summary["kv_transfers"] == {
        "host": result.kv_loaded,
        "pool": result.kv_fetched,
        "moved": result.kv_moved,
    }
    if memory:
        assert result.kv_capacity == 27_901
        assert 0.0 < summary["kv_utilization"] <= 1.0
        assert summary["preemptions"] == sum(rank.preemptions for rank in sim_run.ranks)
        assert result.prefill_tokens == sum(rank.prefilled for rank in sim_run.ranks)
    else:
        assert summary["kv_utilization"] == 0.0 and summary["preemptions"] == 0


def _memory_result(capacity: int, train_ranks: list[int], read: float = 0.0) -> SimResult:
    result = _result(1, [100.0, 50.0, 80.0], [10.0] * 3, 3)
    result.kv_capacity = capacity
    result.rollout_ranks = 2
    result.batch_kv_s = [30_000.0, 20_000.0, 10_000.0]
    result.batch_read_s = [read] * 3
    result.batch_train_ranks = train_ranks
    return result


def test_memory_bound_by_hand() -> None:
    # 2 rollout ranks of 100 tokens; batches need 300, 200 and 100 rank-seconds of KV, and each
    # training step takes one of the two ranks for 10 s: step 1 starts at (300 + 0) / 2 = 150,
    # step 2 at (500 + 10) / 2 = 255, step 3 at (600 + 20) / 2 = 310 (the critical path gives
    # 100, 160 and 240 there): f = 160, 265, 320
    assert bound_seconds(_memory_result(100, [1, 1, 1])) == pytest.approx(320.0)
    # training on ranks that never roll out takes no rollout time away: 150, 250, 300
    assert bound_seconds(_memory_result(100, [0, 0, 0])) == pytest.approx(310.0)
    # the critical path alone, and memory that never binds, give the bound without memory
    assert bound_seconds(_memory_result(100, [1, 1, 1]), memory=False) == pytest.approx(200.0)
    assert bound_seconds(_memory_result(10**9, [1, 1, 1])) == pytest.approx(200.0)
    # no memory model (0 capacity): the KV need is ignored
    assert bound_seconds(_memory_result(0, [1, 1, 1])) == pytest.approx(200.0)
    # the KV reads need more than the KV held (400 rank-seconds a batch against 300, 200, 100):
    # step 1 at (400 + 0) / 2 = 200, step 2 at (800 + 10) / 2 = 405, step 3 at (1200 + 20) / 2
    # = 610: f = 210, 415, 620; reads below the KV held change nothing
    assert bound_seconds(_memory_result(100, [1, 1, 1], read=400.0)) == pytest.approx(620.0)
    assert bound_seconds(_memory_result(100, [1, 1, 1], read=100.0)) == pytest.approx(320.0)


def _memory_bound_world() -> tuple:
    """One device, 16 single-turn requests of 1,000 prompt + 1,000 generated tokens at 10
    tokens/s, 4,000 tokens of KV (1,000 bytes a token, 4 MB left): two or three requests fit."""
    from rlsched.config import RlschedConfig

    cfg = RlschedConfig.model_validate(
        {
            "devices": {"count": 1},
            "scheduler": {
                "mode": "colocate",
                "train_batch_size": 16,
                "group_size": 1,
                "staleness": 0,
                "max_turns": 1,
                "max_tokens": 10_000,
            },
        }
    )
    s = lambda v: {"value": v, "source": "step check"}  # noqa: E731
    kv = {
        "layers": 1,
        "kv_heads": 1,
        "head_dim": 500,
        "dtype_bytes": 1,
        "gpu_memory_gb": 1,
        "memory_utilization": 1,
        "weights_gb": 0.996,
        "activation_gb": 0,
        "gpu_bandwidth_gb_per_s": 1,
        "batch_tokens": 1000,
    }
    data = {
        "decode_rank_tokens_per_s": s(1000),
        "decode_request_tokens_per_s": s(10),
        "prefill_s_per_token": s(1e-5),
        "train_s_per_token": s(1e-4),
        "train_fixed_s": s(0),
        "sync_s": s(0),
        "offload_s": s(0),
        "reload_s": s(0),
        "kv": {k: s(v) for k, v in kv.items()},
    }
    from rlsched.sim.params import CostModel, WorkloadModel

    cost = CostModel.model_validate(data)
    d = lambda v: {"median": v, "source": "step check"}  # noqa: E731
    model = WorkloadModel.model_validate(
        {
            "prompt_tokens": d(1000),
            "turns": d(1),
            "turns_within_group_sigma": s(0),
            "gen_tokens": d(1000),
            "obs_tokens": d(0.5),
            "env_step_s": d(0.01),
        }
    )
    return cfg, cost, model


def test_a_memory_bound_world_is_held_to_its_memory() -> None:
    """Each request holds 1,000 to 2,000 tokens for 1,000 tokens at >= 0.101 s (0.1 s a step
    and its own KV read): 16 x 1,499,500 x 0.101 token-seconds over 4,000 tokens = 606 s before
    training; the critical path (one request alone, 101 s) and the work (16,000 tokens at 1,000
    a second) are far below, so the memory term is the bound. The run stays within 1.33x of
    it: two requests run together for most of the time and hold 2,000 to 4,000 tokens of the
    4,000 (a third fits only while the first two are short)."""
    cfg, cost, model = _memory_bound_world()
    result = Simulation(cfg, cost, Workload(model, 0, 1, 10_000)).run(1)
    assert result.kv_capacity == 4000 and result.rollout_ranks == 1
    latency = 0.1 + 1000 * 1000 / 1e9
    need = 16 * sum(range(1000, 2000)) * latency
    assert result.batch_kv_s == [pytest.approx(need)]
    # the reads: 16,000 tokens, each 1,000 tokens of start KV at 0.1 / 4,000 + 1e-6 s a token
    assert result.batch_read_s == [pytest.approx(16_000 * 1000 * (0.1 / 4000 + 1e-6))]
    summary = summarize(result, cost)
    train = 16 * 2000 * 1e-4
    assert summary["bound_step_time_s"] == pytest.approx(need / 4000 + train)
    assert summary["critical_path_step_time_s"] < 0.25 * summary["bound_step_time_s"]
    assert summary["ideal_step_time_s"] < 0.1 * summary["bound_step_time_s"]
    assert 0.75 < summary["fraction_of_bound"] <= 1.0
