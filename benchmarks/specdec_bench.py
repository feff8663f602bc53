"""Grouped speculative decoding: acceptance length and speed-up on a tiny trained model (CPU).

Model: the phrase model of steps/specdec_model.py (2-layer Llama, hidden 64, vocabulary 48,
trained for a few seconds on documents made of 12 fixed phrases, so a group's sampled responses
share n-grams the way a GRPO group's do). Workload: `--groups` prompts, `--group-size`
responses each, `--tokens` new tokens per response, sampled at temperature 1 (GRPO) and greedy.

Drafters compared, all through the same draft-and-verify loop (`SpeculativeDecoder`):
* none: plain decoding, one token per forward pass (the baseline);
* request: a drafter per request, indexing only its own prompt and tokens (prompt lookup, what
  vLLM's `ngram` does);
* group: one drafter per group, shared by its requests, decoded round-robin (Seer's grouped
  drafting).
Greedy output is checked against the baseline's (it must be identical). Wall time is the median
of `--runs`; speed-up is the baseline's time over the drafter's. Prints a Markdown table.

`--engine` measures the same workload through the rollout engines instead (every request of
every group submitted at once, `max_batch` 64, as the runtime's device worker drives them):
* recompute: `TransformersEngine`, the recompute engine (one batched forward per token over
  the left-padded full contexts, no KV cache);
* kv: `SpeculativeEngine` with `drafter: none` (a KV cache per request, one pass per request
  per token);
* batched, batched+group: `KvEngine` (continuous batching over a KV cache, engines 0.4.0),
  without drafts or drafting from the group, every request's verification in one batched pass;
* kv+request, kv+group: `SpeculativeEngine` drafting from the request's own context or from its
  group (Seer's grouped speculative decoding), one pass per request per round.
Greedy outputs of all engines must be identical.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run from a checkout
sys.path.insert(0, str(ROOT / "steps"))

import torch
from specdec_model import phrase_model, phrases

from rlsched.engines.base import Sampling, SpecSettings
from rlsched.engines.hf import TransformersEngine
from rlsched.engines.kv import KvEngine
from rlsched.engines.speculative import SpeculativeEngine
from rlsched.specdec.decoder import SpecStats, SpeculativeDecoder
from rlsched.specdec.drafter import GroupDrafter

ENGINES = ("recompute", "kv", "kv+request", "kv+group", "batched", "batched+group")


def run(model, prompts, drafter: str, size: int, tokens: int, temperature: float, seed: int):
    generator = torch.Generator().manual_seed(seed)
    total, outputs = SpecStats(), []
    start = time.perf_counter()
    for prompt in prompts:
        if drafter == "request":
            results = [
                SpeculativeDecoder(model, GroupDrafter()).generate(
                    prompt, tokens, temperature=temperature, generator=generator
                )
                for _ in range(size)
            ]
        else:
            shared = GroupDrafter() if drafter == "group" else None
            results = SpeculativeDecoder(model, shared).generate_group(
                prompt, size, tokens, temperature=temperature, generator=generator
            )
        for result in results:
            total = total + result.stats
            outputs.append(result.tokens)
    return time.perf_counter() - start, total, outputs


def run_engine(model, prompts, kind: str, size: int, tokens: int, temperature: float, seed: int):
    """All requests submitted at once to one engine, stepped until done; returns wall time,
    the engine (for its counters) and the outputs in request order."""
    if kind == "recompute":
        engine = TransformersEngine(model, max_batch=64, seed=seed)
    elif kind.startswith("batched"):
        settings = SpecSettings(drafter="group") if kind == "batched+group" else None
        engine = KvEngine(model, max_batch=64, seed=seed, settings=settings)
    else:
        drafter = {"kv": "none", "kv+request": "request", "kv+group": "group"}[kind]
        settings = SpecSettings(drafter=drafter)
        engine = SpeculativeEngine(model, max_batch=64, seed=seed, settings=settings)
    sampling = Sampling(temperature=temperature)
    start = time.perf_counter()
    for g, prompt in enumerate(prompts):
        for i in range(size):
            engine.submit(g * size + i, prompt, tokens, sampling, group=g)
    outputs = {}
    while engine.num_active:
        outputs.update((o.rid, o.token_ids) for o in engine.step())
    return time.perf_counter() - start, engine, [outputs[r] for r in sorted(outputs)]


def engine_table(model, prompts, args) -> None:
    print(
        "| sampling | engine | forward passes | tokens/pass | tokens through the model | "
        "acceptance length | wall | speed-up over recompute |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for temperature, label in ((1.0, "temperature 1"), (0.0, "greedy")):
        base_time = base_outputs = None
        for kind in ENGINES:
            times = []
            for r in range(args.runs):
                wall, engine, outputs = run_engine(
                    model, prompts, kind, args.group_size, args.tokens, temperature, seed=r
                )
                times.append(wall)
            wall = statistics.median(times)
            if kind == "recompute":
                base_time, base_outputs = wall, outputs
            elif temperature == 0.0 and outputs != base_outputs:
                raise SystemExit(f"greedy output of the {kind} engine differs from recompute")
            generated = sum(len(o) for o in outputs)
            spec = getattr(engine, "spec", None)
            length = (
                f"{spec.acceptance_length:.2f}" if spec is not None and spec.drafted else "1.00"
            )
            print(
                f"| {label} | {kind} | {engine.forward_passes} | "
                f"{generated / engine.forward_passes:.2f} | {engine.tokens_computed:,} | "
                f"{length} | {wall * 1000:.0f} ms | {base_time / wall:.2f}x |"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--groups", type=int, default=4)
    parser.add_argument("--group-size", type=int, default=8)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--engine", action="store_true", help="compare the rollout engines")
    args = parser.parse_args()
    torch.set_num_threads(1)
    began = time.perf_counter()
    model = phrase_model(seed=0)
    trained_s = time.perf_counter() - began
    chunks = phrases(0)
    prompts = [chunks[i] + chunks[(i + 5) % len(chunks)][:3] for i in range(args.groups)]
    print(
        f"{args.groups} groups x {args.group_size} responses x {args.tokens} new tokens; "
        f"phrase model trained in {trained_s:.1f} s; median of {args.runs} runs; "
        f"torch {torch.__version__}, 1 thread, Python {platform.python_version()} on "
        f"{platform.machine()} (cpu)"
    )
    print()
    if args.engine:
        engine_table(model, prompts, args)
        return
    print(
        "| sampling | drafter | tokens/round (acceptance length) | accepted/drafted | "
        "forward passes | tokens/pass | wall | speed-up |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for temperature, label in ((1.0, "temperature 1"), (0.0, "greedy")):
        base_time = None
        base_outputs = None
        for drafter in ("none", "request", "group"):
            times = []
            for r in range(args.runs):
                wall, stats, outputs = run(
                    model, prompts, drafter, args.group_size, args.tokens, temperature, seed=r
                )
                times.append(wall)
            wall = statistics.median(times)
            if drafter == "none":
                base_time, base_outputs = wall, outputs
            elif temperature == 0.0 and outputs != base_outputs:
                raise SystemExit(
                    f"greedy output of the {drafter} drafter differs from plain decoding"
                )
            rate = stats.accepted / stats.drafted if stats.drafted else 0.0
            length = f"{stats.acceptance_length:.2f}" if drafter != "none" else "1.00"
            print(
                f"| {label} | {drafter} | {length} | {rate:.2f} | {stats.forward_passes} | "
                f"{stats.tokens / stats.forward_passes:.2f} | {wall * 1000:.0f} ms | "
                f"{base_time / wall:.2f}x |"
            )


if __name__ == "__main__":
    main()
