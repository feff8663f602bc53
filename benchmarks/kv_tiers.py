"""Where KV beyond HBM pays on the paper config, and where a memory rank's time goes (issue 15).

Variants of examples/paper_160gpu.yaml's policies, each run on the same seeded workload:

* `--tiers`: per policy mode, HBM only, a host-memory KV tier per rank (`kv_host`: vLLM's CPU
  KV offloading; a turn that lands on another rank cannot use it), the pool (`kv_pool: global`,
  the headline), and the host tiers read by every rank as the pool (`kv_host` + `kv_pool`).
* `--migration`: timeshare with reissue, resume, and resume with the KV moved to the new rank
  (`kv_migration: move`), with and without the pool.
* `--profile POLICY`: where the rollout ranks' time goes (KV of decoding requests, of prefills,
  transfers, what the bound counts against all decoded work).
* `--four-gpu`: examples/four_gpu.yaml with and without a KV model of the 7B-class model it
  names on an 80 GB GPU (why that example stays memoryless).

Simulated figures are deterministic; wall time depends on the machine's load.

    python benchmarks/kv_tiers.py --tiers [--steps 3] [--modes timeshare,disaggregated]
    python benchmarks/kv_tiers.py --migration [--steps 3]
    python benchmarks/kv_tiers.py --profile timeshare [--steps 3]
    python benchmarks/kv_tiers.py --four-gpu
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rlsched.core.events import RequestAborted, RequestFinished  # noqa: E402
from rlsched.sim.metrics import summarize  # noqa: E402
from rlsched.sim.params import SimConfig, load_sim_config  # noqa: E402
from rlsched.sim.runner import run_policies  # noqa: E402
from rlsched.sim.shell import Simulation  # noqa: E402
from rlsched.sim.workload import Workload  # noqa: E402

PAPER = ROOT / "examples" / "paper_160gpu.yaml"
TIERS = {
    "hbm": {},
    "host": {"kv_host": True},
    "pool": {"kv_pool": "global"},
    "host+pool": {"kv_host": True, "kv_pool": "global"},
}
FIGURES = (
    ("step_time_s", "step (s)", "{:,.1f}"),
    ("rollout_tokens_per_s", "rollout tok/s", "{:,.0f}"),
    ("fraction_of_bound", "of bound", "{:.3f}"),
    ("prefill_per_decoded_token", "prefill/dec", "{:.2f}"),
    ("transferred_per_decoded_token", "copied/dec", "{:.2f}"),
    ("migrated", "migrated", "{:,}"),
    ("discarded_tokens", "discarded", "{:,}"),
    ("stale_dropped", "stale", "{:,}"),
)


def _variants(policies: dict[str, dict]) -> SimConfig:
    raw = yaml.safe_load(PAPER.read_text())
    raw["policies"] = policies
    return load_sim_config(raw)


def _table(sim: SimConfig, steps: int, jobs: int) -> None:
    runs = run_policies(sim, list(sim.policies), steps, jobs)
    print("| policy | " + " | ".join(label for _, label, _ in FIGURES) + " |")
    print("|---" * (len(FIGURES) + 1) + "|")
    for name, run in runs.items():
        cells = [fmt.format(run.summary[key]) for key, _, fmt in FIGURES]
        print(f"| {name} | " + " | ".join(cells) + " |")


def tiers(steps: int, modes: list[str], jobs: int) -> None:
    base = {
        "colocate": {"mode": "colocate"},
        "disaggregated": {"mode": "disaggregated", "train": 128},
        "timeshare": {"mode": "timeshare", "train": 128},
    }
    policies = {
        f"{mode}+{tier}": {**base[mode], **options}
        for mode in modes
        for tier, options in TIERS.items()
    }
    _table(_variants(policies), steps, jobs)


def migration(steps: int, jobs: int) -> None:
    policies = {}
    for tier in ("hbm", "pool"):
        for name, extra in (
            ("reissue", {"scheduler": {"migration": "reissue"}}),
            ("resume", {"scheduler": {"migration": "resume"}}),
            ("resume+move", {"scheduler": {"migration": "resume"}, "kv_migration": "move"}),
        ):
            policies[f"timeshare+{tier}+{name}"] = {
                "mode": "timeshare",
                "train": 128,
                **TIERS[tier],
                **extra,
            }
    _table(_variants(policies), steps, jobs)


class _Profiled(Simulation):
    """The same simulation, integrating each rank's state between its changes."""

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self.acc: dict[str, float] = defaultdict(float)
        self._last = [0.0] * len(self.ranks)
        self._state: list[tuple | None] = [None] * len(self.ranks)

    def _note(self, event) -> None:  # type: ignore[no-untyped-def]
        kind = type(event)
        if kind is RequestFinished or kind is RequestAborted:
            pending = self._requests.get(event.rid)
            if pending is not None:
                record = self._trajs.get(pending.tid)
                base = (record.context if record is not None else 0) + pending.resume
                capacity = self._capacity
                read = min(base, capacity) * (self._lone[1] / capacity + self._kv_s)
                self.acc["read_all"] += event.new_tokens * read
        super()._note(event)

    def _schedule_rank(self, rank: int) -> None:
        dt = self.now - self._last[rank]
        state = self._state[rank]
        if state is not None and dt > 0:
            decoding, kv, prefill_kv, transfer, prefill = state
            if decoding or prefill_kv or transfer or prefill:
                acc = self.acc
                acc["busy"] += dt
                acc["kv"] += dt * kv
                acc["prefill_kv"] += dt * prefill_kv
                acc["transfer"] += dt * transfer
                acc["prefill"] += dt * prefill
                acc["decoding"] += dt * decoding
        self._last[rank] = self.now
        model = self.ranks[rank]
        held = model.base_sum + len(model.targets) * model.progress - model.start_sum
        pre = model.prefilling[2] if model.prefilling is not None else 0
        moving = model.prefilling is not None and model.transfer_left > 0
        self._state[rank] = (len(model.targets), held, pre, moving, pre and not moving)
        super()._schedule_rank(rank)


def profile(policy: str, steps: int) -> None:
    sim = load_sim_config(PAPER)
    spec = sim.policies[policy]
    cfg = sim.policy_config(policy)
    work = Workload(sim.workload, sim.seed, cfg.scheduler.group_size, cfg.scheduler.max_tokens)
    options = {"kv_pool": spec.kv_pool, "kv_host": spec.kv_host, "kv_migration": spec.kv_migration}
    simulation = _Profiled(cfg, sim.cost, work, keep_spans=False, **options)
    result = simulation.run(steps)
    summary = summarize(result, sim.cost)
    acc = simulation.acc
    capacity, ranks, elapsed = result.kv_capacity, result.rollout_ranks, result.sim_time
    held = sum(result.batch_kv_s) / capacity
    read = sum(result.batch_read_s)
    trained = sum(r * t for r, t in zip(result.batch_train_ranks, result.batch_train_s))
    busy = acc["busy"]
    print(
        f"{policy}, {steps} steps: step {summary['step_time_s']:,.1f} s, bound "
        f"{summary['bound_step_time_s']:,.1f} s (critical path "
        f"{summary['critical_path_step_time_s']:,.1f}, work {summary['ideal_step_time_s']:,.1f})"
    )
    print(
        f"rank-seconds: {ranks} rollout ranks x {elapsed:,.0f} s = {ranks * elapsed:,.0f}; "
        f"training on them {trained:,.0f}; holding requests {busy:,.0f}"
    )
    print(
        f"the bound's memory need of the trained batches: KV held {held:,.0f}, KV read {read:,.0f}; "
        f"KV read of all decoded work {acc['read_all']:,.0f} "
        f"(trained share {read / max(acc['read_all'], 1e-9):.2f})"
    )
    print(
        f"while holding requests: decoding KV {acc['kv'] / busy / capacity:.3f} of capacity, "
        f"prefills' KV {acc['prefill_kv'] / busy / capacity:.3f}, "
        f"{acc['decoding'] / busy:.2f} requests decoding; "
        f"a transfer runs {acc['transfer'] / busy:.3f} and a prefill {acc['prefill'] / busy:.3f} "
        f"of the time"
    )
    print(
        f"stale trajectories dropped {summary['stale_dropped']}, migrated turns "
        f"{summary['migrated']}, discarded tokens {summary['discarded_tokens']:,}, "
        f"preemptions {summary['preemptions']}"
    )


def four_gpu() -> None:
    raw = yaml.safe_load((ROOT / "examples" / "four_gpu.yaml").read_text())
    plain = load_sim_config(raw)
    kv = {
        "layers": 28,  # Qwen2.5-7B config.json: num_hidden_layers
        "kv_heads": 4,  # num_key_value_heads
        "head_dim": 128,
        "dtype_bytes": 2,
        "gpu_memory_gb": 80,  # H100 SXM
        "memory_utilization": 0.9,
        "weights_gb": 15.2,  # 7.6B parameters in bf16
        "activation_gb": 2,
        "gpu_bandwidth_gb_per_s": 3350,
        "batch_tokens": 8192,
    }
    raw["cost"]["kv"] = {k: {"value": v, "source": "kv_tiers.py"} for k, v in kv.items()}
    memory = load_sim_config(raw)
    print(f"KV capacity of a one-GPU rank: {memory.cost.kv.capacity_tokens(1):,} tokens")
    before = run_policies(plain, list(plain.policies), plain.steps)
    after = run_policies(memory, list(memory.policies), memory.steps)
    print("| policy | step (s) | with memory | prefill/dec | with memory | KV utilization |")
    print("|---|---|---|---|---|---|")
    for name in plain.policies:
        a, b = before[name].summary, after[name].summary
        print(
            f"| {name} | {a['step_time_s']:.1f} | {b['step_time_s']:.1f} | "
            f"{a['prefill_per_decoded_token']:.2f} | {b['prefill_per_decoded_token']:.2f} | "
            f"{b['kv_utilization']:.3f} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiers", action="store_true")
    parser.add_argument("--migration", action="store_true")
    parser.add_argument("--profile", metavar="POLICY")
    parser.add_argument("--four-gpu", action="store_true")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--modes", default="colocate,disaggregated,timeshare")
    parser.add_argument("--jobs", type=int, default=1)
    args = parser.parse_args()
    if args.tiers:
        tiers(args.steps, args.modes.split(","), args.jobs)
    if args.migration:
        migration(args.steps, args.jobs)
    if args.profile:
        profile(args.profile, args.steps)
    if args.four_gpu:
        four_gpu()


if __name__ == "__main__":
    main()
