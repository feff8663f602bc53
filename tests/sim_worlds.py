"""Random small simulated worlds shared by the simulator's property suites."""

from __future__ import annotations

from hypothesis import HealthCheck
from hypothesis import strategies as st

from rlsched.config import RlschedConfig
from rlsched.sim.params import CostModel, WorkloadModel

SETTINGS = {
    "deadline": None,
    "max_examples": 30,
    "derandomize": True,
    "suppress_health_check": [HealthCheck.too_slow],
}


def _s(value: float) -> dict:
    return {"value": value, "source": "property test"}


def _d(median: float, sigma: float, lo: float, hi: float) -> dict:
    return {"median": median, "sigma": sigma, "min": lo, "max": hi, "source": "property test"}


@st.composite
def worlds(draw: st.DrawFn) -> tuple[RlschedConfig, CostModel, WorkloadModel, int]:
    mode = draw(st.sampled_from(["colocate", "disaggregated", "timeshare"]))
    per_rank = draw(st.sampled_from([1, 2]))
    ranks = draw(st.integers(2, 5))
    devices = {"count": ranks * per_rank, "gpus_per_rank": per_rank}
    if mode != "colocate":
        devices["train"] = draw(st.integers(1, ranks - 1)) * per_rank
    group = draw(st.sampled_from([1, 2, 4]))
    scheduler = {
        "mode": mode,
        "group_size": group,
        "train_batch_size": group * draw(st.integers(1, 4)),
        "staleness": draw(st.integers(1, 2)) if mode == "timeshare" else draw(st.integers(0, 2)),
        "max_turns": draw(st.integers(1, 8)),
        "max_tokens": draw(st.sampled_from([2_000, 20_000])),
        "env_timeout_s": draw(st.sampled_from([5.0, 60.0, 600.0])),
        "migration": draw(st.sampled_from(["reissue", "resume"])),
        "max_inflight_per_rank": draw(st.integers(1, 16)),
    }
    if draw(st.booleans()):
        scheduler["shrink"] = {"fraction": draw(st.sampled_from([0.25, 0.5, 1.0]))}
    cfg = RlschedConfig.model_validate({"devices": devices, "scheduler": scheduler})
    cost = CostModel.model_validate({
        "decode_rank_tokens_per_s": _s(draw(st.sampled_from([50.0, 400.0]))),
        "decode_request_tokens_per_s": _s(draw(st.sampled_from([5.0, 30.0]))),
        "prefill_s_per_token": _s(draw(st.sampled_from([0.0, 1e-4, 1e-3]))),
        "prefix_cache": draw(st.booleans()),
        "train_s_per_token": _s(draw(st.sampled_from([1e-4, 1e-2]))),
        "train_fixed_s": _s(draw(st.sampled_from([0.0, 3.0]))),
        "sync_s": _s(draw(st.sampled_from([0.0, 2.0]))),
        "offload_s": _s(draw(st.sampled_from([0.0, 1.0]))),
        "reload_s": _s(draw(st.sampled_from([0.0, 1.0]))),
    })
    model = WorkloadModel.model_validate({
        "prompt_tokens": _d(100, 0.5, 1, 1500),
        "turns": _d(draw(st.sampled_from([1.0, 3.0])), draw(st.sampled_from([0.0, 1.0])), 1, 8),
        "turns_within_group_sigma": _s(0.5),
        "gen_tokens": _d(80, draw(st.sampled_from([0.0, 1.0])), 1, 1000),
        "obs_tokens": _d(20, 1.0, 0, 300),
        "env_step_s": _d(1.0, draw(st.sampled_from([0.0, 1.5])), 0.01, 120),
    })
    return cfg, cost, model, draw(st.integers(0, 10_000))


# A 7B-class model on one 24 GB GPU (test figures, not a claim): 2 x 28 x 4 x 128 x 2 bytes a
# token and (24 x 0.9 - 17 - 3.3) GB left, 22,670 tokens of KV a rank; memory-bound for the
# four-GPU example's 32 requests a rank (design/rlsched_memory.md, issue 15).
MEMORY_KV = {
    "layers": 28,
    "kv_heads": 4,
    "head_dim": 128,
    "dtype_bytes": 2,
    "gpu_memory_gb": 24,
    "memory_utilization": 0.9,
    "weights_gb": 17,
    "activation_gb": 3.3,
    "gpu_bandwidth_gb_per_s": 900,
    "batch_tokens": 2048,
}


def with_memory(cost: CostModel, **over: float) -> CostModel:
    """`cost` with MEMORY_KV's rank memory (`over` replaces figures), so the shell reports
    memory and the core places by prefix affinity (design/rlsched_routing.md 0.6.0)."""
    kv = {k: _s(v) for k, v in {**MEMORY_KV, **over}.items()}
    return CostModel.model_validate({**cost.model_dump(), "kv": kv})
