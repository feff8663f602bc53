"""Step 13 of design/rlsched_sim.md: figures and the ideal bound."""

from pathlib import Path

import pytest

from rlsched.sim.metrics import Work, expected_work, ideal_seconds, summarize
from rlsched.sim.params import load_sim_config
from rlsched.sim.shell import Simulation
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
