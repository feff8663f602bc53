"""A small memory-bound world for the simulator's step checks: the four-GPU example with a
7B-class KV model on 24 GB GPUs (27,901 tokens a rank), a host tier, a pool and a link."""

from pathlib import Path

from rlsched.sim.params import SimConfig, load_sim_config

ROOT = Path(__file__).resolve().parents[1]

KV = {
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
    "host_gb": 0.5,  # 8,719 tokens of host memory a rank: small enough to evict
    "host_gb_per_s": 16,
    "pool_gb_per_s": 16,
    "link_gb_per_s": 32,
}


def kv_world(policies: dict) -> SimConfig:
    """four_gpu.yaml with KV figures and `policies` instead of its own."""
    data = load_sim_config(ROOT / "examples" / "four_gpu.yaml").model_dump()
    data["cost"]["kv"] = {k: {"value": v, "source": "step check"} for k, v in KV.items()}
    data["policies"] = policies
    return load_sim_config(data)
