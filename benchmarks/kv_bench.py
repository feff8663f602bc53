"""The KV engine against the recompute engine on the bundled model (design/rlsched_engines.md).

Engine alone (default): episodes of an environment played in this process with continuous
batching, as the rollout workers drive an engine: every finished turn goes to the environment
at once and the next turn joins the running batch. Reports, per engine, generated tokens per
second (wall clock), tokens run through the model per generated token, and forward passes;
the engines alternate (`--repeats` pairs) so a busy machine slows both alike.

    python benchmarks/kv_bench.py                      # Vault, 7-token turns
    python benchmarks/kv_bench.py --env grid --turn-tokens 1
    python benchmarks/kv_bench.py --run examples/run/recall.yaml --steps 60
                                                       # whole `rlsched run`s, kv vs transformers
                                                       # (recall.yaml is the bundled run)
    python benchmarks/kv_bench.py --hidden 1024 --layers 12   # a larger model of the same shape
                                                       # (on a GPU: benchmarks/gpu_check.sh)

Both engines run on CUDA when torch sees a GPU, else on the CPU with one thread; each row
names the device.

Engine alone, the model is untrained: on Recall (`--env recall --turn-tokens 6 --max-turns 16`)
its episodes end at the first wrong window, one turn each, so only whole runs, where the policy
learns and its episodes lengthen, show that workload's ratio.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import torch
import yaml

from rlsched.engines.base import Sampling
from rlsched.engines.factory import make_engine
from rlsched.envs.base import make_env, resolve_env
from rlsched.model import ModelSpec, action_token_ids, load_tokenizer

BUNDLED = ModelSpec(arch="qwen2", hidden_size=64, layers=2, init_std=0.3, seed=0)
KWARGS = {
    "vault": {"length": 7, "max_turns": 8},
    "grid": {"size": 4, "max_steps": 24},
    "recall": {"width": 6, "max_turns": 16},
}


def sized(hidden: int, layers: int) -> ModelSpec:
    """The bundled model's shape at another width and depth (heads of 64, 4 query heads per KV
    head, a 4x MLP, as in qwen2 models); the bundled model itself at its own size."""
    if (hidden, layers) == (BUNDLED.hidden_size, BUNDLED.layers):
        return BUNDLED
    heads = max(1, hidden // 64)
    return BUNDLED.model_copy(
        update={
            "hidden_size": hidden,
            "layers": layers,
            "heads": heads,
            "kv_heads": max(1, heads // 4),
            "intermediate_size": 4 * hidden,
            "init_std": 0.02,
        }
    )


def play(
    kind: str,
    spec: ModelSpec,
    env_name: str,
    episodes: int,
    turn_tokens: int,
    max_turns: int,
    seed: int,
):
    """Play `episodes` episodes (groups of 8 share a reset seed) through engine `kind`."""
    torch.set_num_threads(1)
    words = resolve_env(env_name).words
    tokenizer = load_tokenizer(spec, words)
    allowed = action_token_ids(tokenizer, resolve_env(env_name).actions)
    engine = make_engine(kind, spec, tokenizer.get_vocab_size(), 64, seed)
    sampling = Sampling(1.0, allowed)
    envs, contexts, turns = {}, {}, {}
    started = time.perf_counter()
    for i in range(episodes):
        env = make_env(env_name, KWARGS.get(env_name, {}))
        observation, _ = env.reset(seed=seed * 10_000 + i // 8)
        envs[i], turns[i] = env, 0
        contexts[i] = tokenizer.encode(observation).ids
        engine.submit(i * 1000, contexts[i], turn_tokens, sampling, group=i // 8)
    generated = 0
    while engine.num_active:
        for out in engine.step():
            i = out.rid // 1000
            generated += len(out.token_ids)
            step = envs[i].step(tokenizer.decode(list(out.token_ids)))
            turns[i] += 1
            if step.done or turns[i] >= max_turns:
                continue
            contexts[i] += list(out.token_ids) + tokenizer.encode(step.observation).ids
            engine.submit(i * 1000 + turns[i], contexts[i], turn_tokens, sampling, group=i // 8)
    wall = time.perf_counter() - started
    return {
        "engine": kind,
        "device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu",
        "params_m": sum(p.numel() for p in engine.model.parameters()) / 1e6,
        "fast_pass": getattr(engine, "fast_pass", None),  # the KV engine's own Qwen2 pass
        "generated": generated,
        "tokens_computed": engine.tokens_computed,
        "computed_per_generated": engine.tokens_computed / generated,
        "forward_passes": engine.forward_passes,
        "tokens_per_s": generated / wall,
        "wall_s": wall,
    }


def engine_alone(args: argparse.Namespace) -> None:
    results: dict[str, list[dict]] = {"transformers": [], "kv": []}
    spec = sized(args.hidden, args.layers)
    for repeat in range(args.repeats):
        for kind in ("transformers", "kv"):
            row = play(
                kind, spec, args.env, args.episodes, args.turn_tokens, args.max_turns, repeat
            )
            results[kind].append(row)
            print(
                json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in row.items()})
            )
    med = {k: statistics.median(r["tokens_per_s"] for r in rows) for k, rows in results.items()}
    ratios = [
        kv["tokens_per_s"] / tf["tokens_per_s"]
        for kv, tf in zip(results["kv"], results["transformers"], strict=True)
    ]
    per_gen = {
        k: statistics.median(r["computed_per_generated"] for r in rows)
        for k, rows in results.items()
    }
    print(
        f"{args.env}, {args.turn_tokens}-token turns, {args.episodes} episodes x {args.repeats}, "
        f"{results['kv'][0]['params_m']:.1f}M parameters on {results['kv'][0]['device']}: "
        f"tokens/s recompute {med['transformers']:.0f}, kv {med['kv']:.0f} "
        f"(paired ratios {', '.join(f'{r:.2f}x' for r in ratios)}); tokens computed per generated "
        f"token recompute {per_gen['transformers']:.2f}, kv {per_gen['kv']:.2f}"
    )


def cache_floor(lines: list[dict]) -> tuple[int, int]:
    """Tokens an ideal cache feeds for the traced trajectories (every context token once, but
    not the last generated token nor the final observation, which no turn reads) and tokens
    generated: the floor of tokens computed per generated token that the workload imposes."""
    fed = made = 0
    for line in lines:
        for turns in line["samples"]:
            if not turns:
                continue
            gen = sum(int(t[0]) for t in turns)
            obs = sum(int(t[1]) for t in turns)
            fed += line["prompt_tokens"] + gen + obs - 1 - int(turns[-1][1])
            made += gen
    return fed, made


def whole_runs(args: argparse.Namespace) -> None:
    from rlsched.runtime.cluster import run_training
    from rlsched.runtime.config import load_run_config

    base = yaml.safe_load(Path(args.run).read_text())
    summaries: dict[str, list[dict]] = {"transformers": [], "kv": []}
    for _ in range(args.repeats):
        for kind in ("transformers", "kv"):
            config = dict(base, rollout=dict(base.get("rollout", {}), engine=kind))
            config["run"] = dict(base.get("run", {}), eval_episodes=0)
            with tempfile.TemporaryDirectory() as tmp:
                started = time.perf_counter()
                driver = run_training(
                    load_run_config(config), args.steps, None, Path(tmp) / "m.jsonl", None
                )
                wall = time.perf_counter() - started
            rows = driver.recorder.rows
            step_s = sum(r["step_time_s"] for r in rows)
            engines = driver.summary["engines"]
            fed, made = cache_floor(driver.trace_lines())
            row = {
                "engine": kind,
                "wall_s": round(wall, 1),
                "steps_s": round(step_s, 2),
                "generated": driver.gen_tokens,
                "tokens_computed": int(engines["tokens_computed"]),
                "computed_per_generated": round(engines["tokens_computed"] / driver.gen_tokens, 3),
                "floor_per_generated": round(fed / made, 3),
                "rollout_tokens_per_s": round(driver.gen_tokens / step_s, 1),
                "forward_s": round(engines["forward_s"], 2),
                "generated_per_forward_s": round(driver.gen_tokens / engines["forward_s"], 1),
                "forward_passes": int(engines["forward_passes"]),
                "invalidated_per_generated": round(
                    engines.get("tokens_invalidated", 0.0) / driver.gen_tokens, 3
                ),
                "rebuilt_per_generated": round(
                    engines.get("tokens_rebuilt", 0.0) / driver.gen_tokens, 3
                ),
                "padded_per_computed": round(
                    engines.get("tokens_padded", 0.0) / max(engines["tokens_computed"], 1.0), 2
                ),
                "train_s": round(sum(r["train_s"] or 0.0 for r in rows), 2),
                "mean_reward": round(statistics.mean(r["mean_reward"] for r in rows), 3),
            }
            summaries[kind].append(row)
            print(json.dumps(row), flush=True)
    pairs = list(zip(summaries["kv"], summaries["transformers"], strict=True))
    ratios = [kv["rollout_tokens_per_s"] / tf["rollout_tokens_per_s"] for kv, tf in pairs]
    inside = [kv["generated_per_forward_s"] / tf["generated_per_forward_s"] for kv, tf in pairs]
    # One training step runs at a time and lies inside its step's time, so no engine can
    # make the steps shorter than their training: the speed-up's ceiling on this run.
    ceiling = [kv["generated"] / kv["train_s"] / tf["rollout_tokens_per_s"] for kv, tf in pairs]
    print(
        f"{args.run}, {args.steps} steps: kv / recompute generated tokens per second of "
        f"training steps: {', '.join(f'{r:.2f}x' for r in ratios)}; per second of forward "
        f"passes: {', '.join(f'{r:.2f}x' for r in inside)}; ceiling for an engine that took no "
        f"time (steps no longer than their training): {', '.join(f'{r:.2f}x' for r in ceiling)}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="vault")
    parser.add_argument("--episodes", type=int, default=64)
    parser.add_argument("--turn-tokens", type=int, default=7)
    parser.add_argument("--max-turns", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--run", help="a run config: compare whole `rlsched run`s instead")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--hidden", type=int, default=BUNDLED.hidden_size, help="engine alone")
    parser.add_argument("--layers", type=int, default=BUNDLED.layers, help="engine alone")
    args = parser.parse_args()
    whole_runs(args) if args.run else engine_alone(args)


if __name__ == "__main__":
    main()
