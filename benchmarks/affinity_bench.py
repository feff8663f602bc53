"""Where returning turns go under prefix affinity (issue 15 item 2).

Runs one policy of a simulator config whose ranks have memory (`cost.kv`) twice: with the
shell reporting memory to the core (design/rlsched_sim.md 0.5.0: the core places by prefix
affinity, design/rlsched_routing.md 0.6.0) and with a shell that reports nothing (the core
places least-loaded, as before). For each: dispatches, returning turns (a turn after the
first), how many of those went to the rank that served the trajectory's previous turn, the mean
KV a dispatch needs, prefill tokens per decoded token, preemptions and the simulated step time.
Simulated figures are deterministic; the wall time depends on the machine's load.

    python benchmarks/affinity_bench.py [--config examples/paper_160gpu.yaml]
                                        [--policy timeshare] [--steps 1]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rlsched.core.commands import Dispatch  # noqa: E402
from rlsched.sim.params import load_sim_config  # noqa: E402
from rlsched.sim.shell import Simulation  # noqa: E402
from rlsched.sim.workload import Workload  # noqa: E402


class Silent(Simulation):
    """The same memory model; the shell tells the core nothing about it."""

    def _kv_tokens(self) -> int | None:
        return None


def measure(config: Path, policy: str, steps: int, cls: type[Simulation]) -> dict:
    sim_cfg = load_sim_config(config)
    cfg = sim_cfg.policy_config(policy)
    work = Workload(
        sim_cfg.workload, sim_cfg.seed, cfg.scheduler.group_size, cfg.scheduler.max_tokens
    )
    counts = {"dispatches": 0, "returning": 0, "same_rank": 0, "kv_needed": 0}
    last_rank: dict[int, int] = {}

    def observe(event, commands) -> None:  # type: ignore[no-untyped-def]
        for command in commands:
            if type(command) is not Dispatch:
                continue
            counts["dispatches"] += 1
            counts["kv_needed"] += command.context_tokens + command.resume_tokens
            previous = last_rank.get(command.tid)
            if previous is not None:
                counts["returning"] += 1
                counts["same_rank"] += previous == command.rank
            last_rank[command.tid] = command.rank

    simulation = cls(cfg, sim_cfg.cost, work, observer=observe, keep_spans=False)
    started = time.perf_counter()
    result = simulation.run(steps)
    prefilled = sum(rank.prefilled for rank in simulation.ranks)
    return {
        **counts,
        "kv_per_dispatch": counts["kv_needed"] / max(1, counts["dispatches"]),
        "same_rank_share": counts["same_rank"] / max(1, counts["returning"]),
        "prefill_per_decoded_token": prefilled / max(1, result.decoded_tokens),
        "preemptions": sum(rank.preemptions for rank in simulation.ranks),
        "step_time_s": result.sim_time / steps,
        "wall_s": time.perf_counter() - started,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=ROOT / "examples" / "paper_160gpu.yaml")
    parser.add_argument("--policy", default="timeshare")
    parser.add_argument("--steps", type=int, default=1)
    args = parser.parse_args()
    for name, cls in (("memory reported (affinity)", Simulation), ("nothing reported", Silent)):
        row = measure(args.config, args.policy, args.steps, cls)
        print(
            f"affinity_bench: {args.policy} {args.steps} step(s), {name}: "
            f"dispatches={row['dispatches']} returning={row['returning']} "
            f"same_rank={row['same_rank']} ({row['same_rank_share']:.1%}) "
            f"kv_per_dispatch={row['kv_per_dispatch']:.0f} "
            f"prefill_per_decoded_token={row['prefill_per_decoded_token']:.2f} "
            f"preemptions={row['preemptions']} step_time_s={row['step_time_s']:.1f} "
            f"wall_s={row['wall_s']:.1f}"
        )


if __name__ == "__main__":
    main()
