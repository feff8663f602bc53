"""The kill table of the efficiency mutants (issue 15 item 4; tests/mutants.py).

For every mutant: the efficiency property of tests/test_sim_efficiency.py that catches it (and
how often it fires on examples/four_gpu.yaml, 4 steps, per policy), and what the mutant costs
in simulated step time against the unmutated core on examples/paper_160gpu.yaml (`--steps`
steps, its seed) and on examples/four_gpu.yaml ("stopped": the core's own invariants stopped
the mutated run before the steps were done). The memory mutants (`no_affinity`, `over_plan`)
are counted on the four-GPU example with memory (tests/sim_worlds.py, with_memory); their step
times on the paper config use its own `cost.kv`. Simulated time is deterministic: the wall
time of this script depends on the machine's load, the table does not.

    python benchmarks/mutant_kill.py [--steps 3] [--policies timeshare,disaggregated,colocate]
                                     [--mutants most_loaded,...]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from mutants import MUTANTS  # noqa: E402
from sim_worlds import with_memory  # noqa: E402
from test_sim_mutants import run_mutant  # noqa: E402

from rlsched.sim.params import load_sim_config  # noqa: E402
from rlsched.sim.runner import run_policy  # noqa: E402

PAPER = ROOT / "examples" / "paper_160gpu.yaml"
FOUR = ROOT / "examples" / "four_gpu.yaml"


def step_times(config: Path, policies: list[str], steps: int, mutant: str | None) -> dict:
    """Mean simulated step time per policy, with `mutant` applied (None: the real core); None
    where the core's own invariants stopped the mutated run."""
    sim = load_sim_config(config)
    out: dict[str, float | None] = {}
    for policy in policies:
        if mutant is None:
            out[policy] = run_policy(sim, policy, steps).summary["step_time_s"]
            continue
        with MUTANTS[mutant].applied():
            try:
                out[policy] = run_policy(sim, policy, steps).summary["step_time_s"]
            except AssertionError:
                out[policy] = None
    return out


def kills(mutant: str, policies: list[str]) -> dict[str, int]:
    """How many times the mutant's killer fires on the four-GPU example, per policy."""
    sim = load_sim_config(FOUR)
    found = {}
    for policy in policies:
        cfg = sim.policy_config(policy)
        cost = with_memory(sim.cost) if MUTANTS[mutant].memory else sim.cost
        watch = run_mutant(mutant, cfg, cost, sim.workload, sim.seed, steps=4)
        found[policy] = len(watch.violations[MUTANTS[mutant].killer])
    return found


def effect(mutated: float | None, base: float) -> str:
    return "stopped" if mutated is None else f"{100 * (mutated / base - 1):+.1f}%"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3, help="paper run's training steps")
    parser.add_argument("--four-steps", type=int, default=4, help="four-GPU run's steps")
    parser.add_argument("--policies", default="timeshare,disaggregated,colocate")
    parser.add_argument("--mutants", default=",".join(MUTANTS), help="which mutants to measure")
    args = parser.parse_args()
    policies = args.policies.split(",")
    chosen = args.mutants.split(",")
    unknown = sorted(set(chosen) - set(MUTANTS))
    if unknown:
        parser.error(f"--mutants: unknown {', '.join(unknown)} (known: {', '.join(MUTANTS)})")
    started = time.perf_counter()
    paper = {None: step_times(PAPER, policies, args.steps, None)}
    four = {None: step_times(FOUR, policies, args.four_steps, None)}
    fired = {}
    for name in chosen:
        fired[name] = kills(name, policies)
        paper[name] = step_times(PAPER, policies, args.steps, name)
        four[name] = step_times(FOUR, policies, args.four_steps, name)
        print(f"# {name} measured ({time.perf_counter() - started:.0f} s)", file=sys.stderr)
    short = {"timeshare": "t", "disaggregated": "d", "colocate": "c"}
    keys = "/".join(short.get(p, p) for p in policies)
    print(
        f"Step time of each mutant against the real core; paper_160gpu {args.steps} steps and "
        f"four_gpu {args.four_steps} steps, seed of each file; policies {keys}."
    )
    print()
    print(
        f"| mutant | killed by | violations on four_gpu ({keys}) | "
        f"paper step time ({keys}) | four_gpu step time ({keys}) |"
    )
    print("|---|---|---|---|---|")
    base_p = " / ".join(f"{paper[None][p]:.1f} s" for p in policies)
    base_f = " / ".join(f"{four[None][p]:.1f} s" for p in policies)
    print(f"| (real core) | - | {' / '.join('0' for _ in policies)} | {base_p} | {base_f} |")
    for name in chosen:
        mutant = MUTANTS[name]
        v = " / ".join(str(fired[name][p]) for p in policies)
        p_eff = " / ".join(effect(paper[name][p], paper[None][p]) for p in policies)
        f_eff = " / ".join(effect(four[name][p], four[None][p]) for p in policies)
        print(f"| `{name}`: {mutant.what} | {mutant.killer} | {v} | {p_eff} | {f_eff} |")
    print()
    print(f"wall {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
