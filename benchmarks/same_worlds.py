"""The property suites' test worlds at another commit and in this tree drive the core through
exactly the same events and commands: a refactor of the worlds (or of what they share with the
shells) keeps what the suites explore.

    python benchmarks/same_worlds.py --vs cbb23c3 --examples 300

For each drawn example (the suites' own config strategies, a seed, losses), the world of
tests/test_core_properties.py and the one of tests/test_core_review.py run once from REV's file
and once from this tree's, each `Scheduler.handle` call is recorded (the event and the commands
it returned), and the two records must be equal. The core is this tree's in both runs.
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from rlsched.core.machine import Scheduler  # noqa: E402

LOG: list[tuple[object, tuple[object, ...]]] = []


def _recording(real):  # type: ignore[no-untyped-def]
    def handle(self, event):  # type: ignore[no-untyped-def]
        out = real(self, event)
        LOG.append((event, tuple(out)))
        return out

    return handle


def load_at(rev: str, path: str, name: str, into: Path):  # type: ignore[no-untyped-def]
    """The module `path` as it was at `rev`, imported as `name`."""
    text = subprocess.run(
        ["git", "show", f"{rev}:{path}"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout
    file = into / f"{name}.py"
    file.write_text(text, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, file)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def trace(make):  # type: ignore[no-untyped-def]
    LOG.clear()
    world = make()
    world.run(max_events=3000, target_steps=6)
    return list(LOG), world


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vs", required=True, help="the commit whose worlds to compare with")
    parser.add_argument("--examples", type=int, default=100, help="drawn examples per suite")
    args = parser.parse_args()
    Scheduler.handle = _recording(Scheduler.handle)
    with tempfile.TemporaryDirectory() as tmp:
        old_p = load_at(args.vs, "tests/test_core_properties.py", "old_properties", Path(tmp))
        old_r = load_at(args.vs, "tests/test_core_review.py", "old_review", Path(tmp))
        import tests.test_core_properties as new_p
        import tests.test_core_review as new_r

        quiet = list(HealthCheck)
        same = settings(
            max_examples=args.examples,
            deadline=None,
            derandomize=True,
            database=None,
            suppress_health_check=quiet,
        )
        count = {"properties": 0, "review": 0, "handled": 0}

        @same
        @given(
            cfg=new_p.configs(),
            seed=st.integers(0, 2**32 - 1),
            loss=st.sampled_from((0.0, 0.02, 0.05)),
            losses=st.integers(0, 4),
        )
        def properties(cfg, seed, loss, losses):  # type: ignore[no-untyped-def]
            a, old = trace(lambda: old_p.World(cfg, seed, loss, losses))
            b, new = trace(lambda: new_p.World(cfg, seed, loss, losses))
            assert a == b and old.train_ok == new.train_ok and a
            count["properties"] += 1
            count["handled"] += len(a)

        @same
        @given(
            cfg=new_r.configs(),
            seed=st.integers(0, 2**32 - 1),
            loss=st.sampled_from((0.0, 0.05, 0.1)),
            losses=st.integers(0, 4),
            own=st.sampled_from((0.0, 0.4)),
        )
        def review(cfg, seed, loss, losses, own):  # type: ignore[no-untyped-def]
            kw = {"loss_rate": loss, "max_losses": losses, "own_aborts": own}
            a, old = trace(lambda: old_r.ReviewWorld(cfg, seed, **kw))
            b, new = trace(lambda: new_r.ReviewWorld(cfg, seed, **kw))
            assert a == b and old.kept_partials == new.kept_partials and a
            count["review"] += 1
            count["handled"] += len(a)

        properties()
        review()
    print(
        f"identical to {args.vs}: {count['properties']} World and {count['review']} ReviewWorld "
        f"examples, {count['handled']} handled events with their commands"
    )


if __name__ == "__main__":
    main()
