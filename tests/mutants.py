"""Efficiency mutants of the generated core (issue 15 item 4).

Each mutant is a small, named, reversible patch of one method of the real core class, applied
in-process for the duration of a `with` block: the test suite carries the mutant, rlsched/ is
never touched. Every one of them keeps the core safe (nothing is lost, every generated
invariant holds on most worlds) and only wastes time; tests/test_sim_mutants.py proves that an
efficiency property of tests/test_sim_efficiency.py catches each, and benchmarks/mutant_kill.py
measures what each costs in simulated step time.

* `most_loaded`: placement picks the most-loaded eligible rank (still below its fair share)
  instead of the least-loaded one (design/rlsched_routing.md, Router.pick_rank).
* `sync_after_reload`: an expand sends the weights only once the reload finished, instead of
  with the Reload (design/rlsched_transitions.md, Transitions.begin_expand).
* `one_dispatch`: at most one dispatch per event, so ranks with room idle while turns wait
  until the next event (design/rlsched_routing.md, Turns.dispatch_queued).
* `stale_early`: the stale cutoff is one version too eager, dropping groups the new version
  could still train (design/rlsched_training.md, Training.drop_stale).

Two more waste memory once the shell reports it (design/rlsched_routing.md 0.6.0, issue 15
item 2); they run on the examples with memory (`memory`, sim_worlds.MEMORY_KV):

* `no_affinity`: a returning turn ignores the rank holding its prefix and goes to the roomiest
  rank (Router.place), re-prefilling its whole context.
* `over_plan`: a turn that fits nowhere is sent to the roomiest rank anyway (Router.place),
  planning more KV than the rank reported free (the rank queues or preempts).

One more, `stale_late` (the cutoff one version too lax), is not one of the four: the core's
generated invariants stop it too, but it proves the "kept past the bound" half of the exact
cutoff property is not hollow.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from rlsched.core.buffer import TrajectoryBuffer
from rlsched.core.routing import Router
from rlsched.core.transitions import Transitions
from rlsched.core.turns import Turns
from rlsched.pool import DeviceMode

ALL = ("colocate", "disaggregated", "timeshare")


@dataclass(frozen=True)
class Mutant:
    """A named patch: `target.attr` replaced by `make(original)` while applied. `killer` is
    the property of tests/test_sim_efficiency.py's Watch that catches it, `caught_on` the
    policies of examples/four_gpu.yaml it must be caught on; `crashes` when the core's own
    generated invariants also stop the run (after the property fired); `memory` when it is
    caught on the example with memory reported (sim_worlds.with_memory)."""

    name: str
    what: str
    target: type
    attr: str
    make: Callable[[Callable], Callable]
    killer: str
    caught_on: tuple[str, ...] = ALL
    crashes: bool = False
    memory: bool = False

    @contextmanager
    def applied(self) -> Iterator[None]:
        original = self.target.__dict__[self.attr]
        setattr(self.target, self.attr, self.make(original))
        try:
            yield
        finally:
            setattr(self.target, self.attr, original)


def _most_loaded(original: Callable) -> Callable:
    def pick_rank(self: Router, blocked: Container[int] = ()) -> int | None:
        pool = self.ctx.pool
        serving = pool.count(DeviceMode.ROLLOUT) + pool.count(DeviceMode.EXPANDING)
        fair = max(1, -(-self.ctx.buffer.unfinished // max(1, serving // pool.gpus_per_rank)))
        eligible = [
            (load, rank)
            for rank, load in enumerate(self.load)
            if self.routable(rank) and self.rank_version[rank] not in blocked and load < fair
        ]
        if not eligible:
            return None
        return max(eligible, key=lambda lr: (lr[0], -lr[1]))[1]

    return pick_rank


def _sync_after_reload(original: Callable) -> Callable:
    def begin_expand(self: Transitions, devices: tuple[int, ...]) -> None:
        # The current weights are not sent with the Reload: try_finish_expand sends them once
        # the device answers ReloadDone (its fallback for a device still behind).
        self.send_sync = lambda devices: None  # type: ignore[method-assign]
        try:
            original(self, devices)
        finally:
            del self.send_sync

    return begin_expand


def _one_dispatch(original: Callable) -> Callable:
    def dispatch_queued(self: Turns) -> None:
        router = self.router
        stats = self.ctx.stats
        before = stats.dispatched
        pick = Router.pick_rank

        def pick_once(blocked: Container[int] = ()) -> int | None:
            return None if stats.dispatched > before else pick(router, blocked)

        router.pick_rank = pick_once  # type: ignore[method-assign]
        try:
            original(self)
        finally:
            del router.pick_rank

    return dispatch_queued


def _no_affinity(original: Callable) -> Callable:
    def place(self: Router, traj, rank: int, fair: int) -> int | None:  # type: ignore[no-untyped-def]
        need = traj.context_tokens + traj.resume_tokens
        return rank if self.kv_free[rank] >= need else None

    return place


def _over_plan(original: Callable) -> Callable:
    def place(self: Router, traj, rank: int, fair: int) -> int | None:  # type: ignore[no-untyped-def]
        target = original(self, traj, rank, fair)
        return rank if target is None else target

    return place


def _stale_early(original: Callable) -> Callable:
    def stale_groups(self: TrajectoryBuffer, oldest_allowed: int) -> list:
        return original(self, oldest_allowed + 1)

    return stale_groups


def _stale_late(original: Callable) -> Callable:
    def stale_groups(self: TrajectoryBuffer, oldest_allowed: int) -> list:
        return original(self, oldest_allowed - 1)

    return stale_groups


MUTANTS: dict[str, Mutant] = {
    m.name: m
    for m in (
        Mutant(
            "most_loaded",
            "placement picks the most-loaded eligible rank",
            Router,
            "pick_rank",
            _most_loaded,
            "not the rank the placement rule picks",
        ),
        Mutant(
            "sync_after_reload",
            "weight sync sent only after the reload finished",
            Transitions,
            "begin_expand",
            _sync_after_reload,
            "reload without its weights",
            # Disaggregated never expands (its training devices stay apart): no reload.
            ("colocate", "timeshare"),
        ),
        Mutant(
            "one_dispatch",
            "one dispatch per event (not work-conserving)",
            Turns,
            "dispatch_queued",
            _one_dispatch,
            "idle rank while a turn waits",
        ),
        Mutant(
            "stale_early",
            "stale cutoff off by one (drops a group one version early)",
            TrajectoryBuffer,
            "stale_groups",
            _stale_early,
            "dropped within the bound",
        ),
        Mutant(
            "no_affinity",
            "a returning turn ignores the rank holding its prefix",
            Router,
            "place",
            _no_affinity,
            "not the rank the placement rule picks",
            memory=True,
        ),
        Mutant(
            "over_plan",
            "a turn that fits nowhere goes to the roomiest rank anyway",
            Router,
            "place",
            _over_plan,
            "planned more KV than reported",
            memory=True,
        ),
        Mutant(
            "stale_late",
            "stale cutoff off by one (keeps a group one version past the bound)",
            TrajectoryBuffer,
            "stale_groups",
            _stale_late,
            "kept past the bound",
            crashes=True,
        ),
    )
}
