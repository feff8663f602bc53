"""CPU time per simulated event of one policy of examples/paper_160gpu.yaml, in a given tree.

Runs `Simulation.run` on the tree's own config and code under `time.process_time` (CPU time,
so less sensitive to the machine's load than wall time), without spans. Alternate two trees in
one session to compare them:

    python benchmarks/sim_event_cost.py ROOT POLICY STEPS
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any


def import_tree(root: str) -> None:
    """Import rlsched from ROOT (SystemExit when another copy comes first)."""
    sys.path.insert(0, root)
    import rlsched

    if not rlsched.__file__.startswith(str(Path(root).resolve())):
        raise SystemExit(f"rlsched imported from {rlsched.__file__}, not from {root}")


def simulation(root: str, policy: str) -> Any:
    """A `Simulation` of `policy` of ROOT's examples/paper_160gpu.yaml, ROOT's own code, no spans."""
    import_tree(root)
    from rlsched.sim.params import load_sim_config
    from rlsched.sim.shell import Simulation
    from rlsched.sim.workload import Workload

    sim = load_sim_config(Path(root) / "examples" / "paper_160gpu.yaml")
    spec = sim.policies[policy]
    cfg = sim.policy_config(policy)
    work = Workload(sim.workload, sim.seed, cfg.scheduler.group_size, cfg.scheduler.max_tokens)
    # Older trees have fewer of the options beyond HBM; pass those the tree knows.
    options = {
        key: getattr(spec, key)
        for key in ("kv_pool", "kv_host", "kv_migration")
        if hasattr(spec, key)
    }
    return Simulation(cfg, sim.cost, work, keep_spans=False, **options)


def main() -> None:
    root, policy, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
    sim = simulation(root, policy)
    start = time.process_time()
    result = sim.run(steps)
    cpu = time.process_time() - start
    print(
        f"{root} {policy}: {result.events} events, {cpu:.2f} s CPU, "
        f"{cpu / result.events * 1e6:.1f} us/event, step {result.sim_time / steps:.1f} s"
    )


if __name__ == "__main__":
    main()
