"""Offload, reload and weight-sync times of the rollout engines on a GPU (benchmarks/gpu_check.sh).

For each engine (`vllm`, `kv`): build it on the model, then `--repeats` times: offload (vLLM
`sleep(1)`: weights to host, KV cache dropped), reload (`wake_up`), and a weight sync
(`load_weights` of the full state, as a training step's export arrives). Each figure is the
median in milliseconds with the bytes moved; one JSON line per engine. Without vLLM installed
its line says so and the KV engine is still measured.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import time

import torch

from rlsched.engines.base import Sampling
from rlsched.engines.factory import make_engine
from rlsched.model import ModelSpec, build_model

SMALL = ModelSpec(hidden_size=256, layers=4, heads=8, kv_heads=4, intermediate_size=1024)
VOCAB = 1024


def timed(fn) -> float:
    torch.cuda.synchronize()
    started = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - started) * 1e3


def measure(kind: str, spec: ModelSpec, repeats: int) -> dict:
    engine = make_engine(kind, spec, VOCAB, 8, 0)
    state = {n: p.detach().clone() for n, p in build_model(spec, VOCAB).named_parameters()}
    nbytes = sum(t.numel() * t.element_size() for t in state.values())
    offload, reload, sync = [], [], []
    for version in range(1, repeats + 1):
        engine.submit(version, [3, 4, 5], 8, Sampling(temperature=1.0))
        while engine.num_active:
            engine.step()
        offload.append(timed(engine.offload))
        reload.append(timed(engine.reload))
        sync.append(timed(lambda v=version: engine.load_weights(state, v)))
    if hasattr(engine, "shutdown"):
        engine.shutdown()
    return {
        "engine": kind,
        "device": torch.cuda.get_device_name(0),
        "param_mib": round(nbytes / 2**20, 2),
        "offload_ms": round(statistics.median(offload), 2),
        "reload_ms": round(statistics.median(reload), 2),
        "sync_ms": round(statistics.median(sync), 2),
        "repeats": repeats,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--model", help="a local checkpoint directory (default: a small model)")
    parser.add_argument("--json", help="also append each line to this file")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("gpu_switch: no CUDA GPU visible to torch here; nothing measured")
    spec = ModelSpec(path=args.model) if args.model else SMALL
    for kind in ("vllm", "kv"):
        if kind == "vllm" and importlib.util.find_spec("vllm") is None:
            line = {"engine": kind, "skipped": "vLLM is not installed"}
        else:
            line = measure(kind, spec, args.repeats)
        print(json.dumps(line), flush=True)
        if args.json:
            with open(args.json, "a") as out:
                out.write(json.dumps(line) + "\n")


if __name__ == "__main__":
    main()
