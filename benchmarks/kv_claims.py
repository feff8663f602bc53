"""How a run's KV engines claim slots for joining requests: whose prefix each claim reused.

    python benchmarks/kv_claims.py CONFIG MODE [--steps 8]

Runs MODE of CONFIG for `--steps` steps on a local Ray cluster (`rlsched bench`'s own
`bench_mode`, no simulation) with every device worker's `KvEngine._claim` wrapped to record, per
claim, what it took and how many tokens the request then had to feed:

- `own`: a kept slot whose tokens are all a prefix of the context (the trajectory's own turns);
- `another's`: a kept slot whose tokens diverge from the context (another trajectory's);
- `free, copied`: a free slot holding a copy of a prefix another kept slot shares (engines 0.6);
- `free` / `evicted`: a free slot, or the least recently kept one, nothing reused.

It also prints the share of engine steps run as two passes (calibrate's `StepProbe`). Engines
0.5 took the longest shared prefix wherever it was, and trajectories took each other's slots
(benchmarks/RESULTS.md, "Slots kept for their own trajectories"); run this on a worktree of an
older commit, its rlsched first on `PYTHONPATH`, to see it. One patch point, for recording only:
the cluster's worker class (`engine_steps.with_workers`).
"""

from __future__ import annotations

import argparse
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from rlsched.runtime.calibrate import ProbeWorker


class ClaimWorker(ProbeWorker):
    """A probe worker whose KV engine records every slot claim as (kind, context, fed, free)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.claims: list[tuple[str, int, int, int]] = []
        engine = self.engine.engine  # the KV engine inside calibrate's StepProbe
        claim = engine._claim

        def recorded(context: list[int]) -> int:
            kept = dict(engine._kept)
            free = len(engine._free)
            slot = claim(context)
            valid = engine._slot_len[slot]
            if slot in kept:
                tokens = kept[slot]
                kind = "own" if list(tokens) == list(context[: len(tokens)]) else "another's"
            elif valid:
                kind = "free, copied"
            else:
                kind = "free" if free else "evicted"
            self.claims.append((kind, len(context), len(context) - valid, free))
            return slot

        engine._claim = recorded

    def take(self) -> dict[str, Any]:
        """What `ProbeWorker.take` hands over, and the claims recorded so far (then forgotten)."""
        claims, self.claims = self.claims, []
        return super().take() | {"claims": claims}


def main() -> None:
    from engine_steps import with_workers

    from rlsched.runtime.bench import bench_mode
    from rlsched.runtime.config import load_run_config

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("config", type=Path)
    parser.add_argument("mode", choices=("colocate", "disaggregated", "timeshare"))
    parser.add_argument("--steps", type=int, default=8)
    args = parser.parse_args()
    cfg = load_run_config(args.config)
    if cfg.rollout.engine != "kv":
        raise SystemExit(f"{args.config}: rollout.engine is {cfg.rollout.engine!r}, not 'kv'")
    with tempfile.TemporaryDirectory(prefix="kv-claims-") as out:
        result, taken = with_workers(
            ClaimWorker, lambda: bench_mode(cfg, args.mode, args.steps, Path(out), False)
        )
    print(f"{args.mode}: step time {result['step_time_s']:.3f} s")
    for device, record in enumerate(taken):
        claims, steps = record["claims"], record["steps"]
        if not claims:
            continue
        count, fed = Counter(), Counter()
        for kind, _context, tokens, _free in claims:
            count[kind] += 1
            fed[kind] += tokens
        free = sum(c[3] for c in claims) / len(claims)
        split = sum(1 for s in steps if s[7] > 1) / max(len(steps), 1)
        print(
            f"  device {device}: {len(claims)} claims ({free:.1f} slots free on average), "
            f"{split:.0%} of {len(steps)} steps in two passes"
        )
        for kind in ("own", "another's", "free, copied", "free", "evicted"):
            if count[kind]:
                print(f"    {kind:>12}: {count[kind]:5d} claims, {fed[kind]:6d} tokens fed")


if __name__ == "__main__":
    main()
