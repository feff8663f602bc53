"""A forward pass's fixed cost against its cost per padded position, for `KvEngine(split_tokens)`.

`split_tokens` (design/rlsched_engines.md, "A wide feed runs apart") is a pass's fixed cost
counted in padded positions. This measures both on the device torch picks (CUDA when there is
one): the fixed cost is a KV step of one decoding row; the cost per position is the slope of a
recompute pass of 64 rows between two context lengths (every position of those passes is fed).
Prints one JSON line per model size with the quotient.

    python benchmarks/pass_cost.py                  # the bundled model
    python benchmarks/pass_cost.py --hidden 1024 --layers 12
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch
from kv_bench import BUNDLED, sized

from rlsched.engines.base import Sampling
from rlsched.engines.factory import make_engine
from rlsched.model import ModelSpec

VOCAB = 40
SAMPLING = Sampling(1.0, tuple(range(3, VOCAB)))


def step_ms(kind: str, spec: ModelSpec, rows: int, context: int, steps: int) -> float:
    """Median milliseconds of an engine step with `rows` requests of `context` tokens."""
    engine = make_engine(kind, spec, VOCAB, 64, 0)
    for r in range(rows):
        engine.submit(r, [3 + (r + i) % 30 for i in range(context)], steps + 4, SAMPLING)
    engine.step()  # the prompts' prefill
    times = []
    for _ in range(steps):
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        started = time.perf_counter()
        engine.step()
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        times.append((time.perf_counter() - started) * 1e3)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hidden", type=int, default=BUNDLED.hidden_size)
    parser.add_argument("--layers", type=int, default=BUNDLED.layers)
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    torch.set_num_threads(1)
    spec = sized(args.hidden, args.layers)
    fixed = step_ms("kv", spec, 1, 20, args.steps)
    short, long = 20, 60
    narrow = step_ms("transformers", spec, 64, short, args.steps)
    wide = step_ms("transformers", spec, 64, long, args.steps)
    per_position = (wide - narrow) / (64 * (long - short))
    print(
        json.dumps(
            {
                "device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu",
                "hidden": spec.hidden_size,
                "layers": spec.layers,
                "one_row_kv_step_ms": round(fixed, 3),
                "recompute_64_rows_ms": {short: round(narrow, 2), long: round(wide, 2)},
                "per_position_us": round(per_position * 1e3, 3),
                "split_tokens": round(fixed / per_position) if per_position > 0 else None,
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
