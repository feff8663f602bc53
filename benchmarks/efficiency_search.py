"""Search random simulated worlds, with fresh randomness, for waste the scheduler controls.

The suite's efficiency properties (tests/test_sim_efficiency.py) run a fixed, derandomized
sample of worlds so that CI never depends on luck; this script draws new ones each time, as a
bug hunt: plain worlds and Seer's variants (context order, divided rollout, both), two steps
each, every run checked by the suite's own watch (work conservation, the placement rule, the
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
from sim_worlds import worlds  # noqa: E402
from test_sim_efficiency import run_watched, with_variant  # noqa: E402

VARIANTS: list[dict[str, object]] = [
    {},
    {"placement": "context"},
    {"chunk_tokens": 64},
    {"placement": "context", "chunk_tokens": 64},
]


def search(count: int) -> tuple[int, list[tuple[dict[str, object], list[str]]]]:
    """Draw `count` worlds; returns how many ran and the (variant, broken rules) of each failure."""
    ran = 0
    broken: list[tuple[dict[str, object], list[str]]] = []

    @settings(
        max_examples=count,
        derandomize=False,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(worlds(), st.sampled_from(VARIANTS))
    def one(world, variant: dict[str, object]) -> None:
        nonlocal ran
        cfg, cost, model, seed = world
        if variant:
            cfg = with_variant(cfg.model_dump(mode="json"), variant)
        ran += 1
        report = run_watched(cfg, cost, model, seed, steps=2).report()
        if report:
            broken.append((variant, sorted(report)))

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
    for variant, rules in broken[:5]:
        print(f"  variant {variant or 'plain'}: {', '.join(rules)}")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
