"""Step 13 of design/rlsched_sim.md: figures and the ideal bound."""

from pathlib import Path

import pytest

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


KV = {
    name: {"value": value, "source": "illustrative"}
    for name, value in {
        "layers": 28,
        "kv_heads": 4,
        "head_dim": 128,
        "dtype_bytes": 2,
        "gpu_memory_gb": 24,
        "memory_utilization": 0.9,
        "weights_gb": 19,
        "activation_gb": 1,
        "gpu_bandwidth_gb_per_s": 300,
        "batch_tokens": 2048,
    }.items()
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
    if memory:
        assert result.kv_capacity == 27_901
        assert 0.0 < summary["kv_utilization"] <= 1.0
        assert summary["preemptions"] == sum(rank.preemptions for rank in sim_run.ranks)
        assert result.prefill_tokens == sum(rank.prefilled for rank in sim_run.ranks)
    else:
        assert summary["kv_utilization"] == 0.0 and summary["preemptions"] == 0
