"""Search random simulated worlds, with fresh randomness, for waste the scheduler controls.

The suite's efficiency properties (tests/test_sim_efficiency.py) run a fixed, derandomized
sample of worlds so that CI never depends on luck; this script draws new ones each time, as a
bug hunt: plain worlds and Seer's variants (context order, divided rollout, both), each
without memory or with a rank's KV reported (the suite's memory worlds), two steps each, every
run checked by the suite's own watch (work conservation, the placement rule, the
overlapped sync, the stale cutoff, no empty dispatches). Run from the repository root:

    python benchmarks/efficiency_search.py --worlds 2000

Prints how many worlds were drawn and how many broke a property, with the first few reports;
exits 1 when any did. Not a test: its sample is random by design.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from sim_worlds import with_memory, worlds  # noqa: E402
from test_sim_efficiency import run_watched, with_variant  # noqa: E402

VARIANTS: list[dict[str, object]] = [
    {},
    {"placement": "context"},
    {"chunk_tokens": 64},
    {"placement": "context", "chunk_tokens": 64},
]
# None: no memory reported; else the rank's weights in GB under the suite's memory figures
# (tests/sim_worlds.py MEMORY_KV), from roomy to nearly full
MEMORY: list[float | None] = [None, 16.0, 17.0, 17.5, 17.9]


Broken = list[tuple[dict[str, object], float | None, list[str]]]


def search(count: int) -> tuple[int, Broken]:
    """Draw `count` worlds; returns how many ran and, per failure, its variant, memory and
    broken rules."""
    ran = 0
    broken: Broken = []

    @settings(
        max_examples=count,
        derandomize=False,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(worlds(), st.sampled_from(VARIANTS), st.sampled_from(MEMORY))
    def one(world, variant: dict[str, object], weights_gb: float | None) -> None:
        nonlocal ran
        cfg, cost, model, seed = world
        if variant:
            cfg = with_variant(cfg.model_dump(mode="json"), variant)
        if weights_gb is not None:
            cost = with_memory(cost, weights_gb=weights_gb)
        ran += 1
        report = run_watched(cfg, cost, model, seed, steps=2).report()
        if report:
            broken.append((variant, weights_gb, sorted(report)))

    one()
    return ran, broken


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worlds", type=int, default=2000, help="worlds to draw")
    args = parser.parse_args()
    start = time.perf_counter()
    ran, broken = search(args.worlds)
    seconds = time.perf_counter() - start
    print(f"efficiency_search: {ran} worlds, {len(broken)} broke a property ({seconds:.0f} s)")
    for variant, weights_gb, rules in broken[:5]:
        memory = f"{weights_gb} GB of weights" if weights_gb is not None else "no memory"
        print(f"  variant {variant or 'plain'}, {memory}: {', '.join(rules)}")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
