"""The efficiency properties catch the mutants that once passed every efficiency test (issue 15).

Each mutant of tests/mutants.py keeps the core safe and only wastes time: placement on the
most-loaded rank, the weight sync held back until the reload finished, one dispatch per event,
a stale cutoff one version early. Here each one must break the property of
tests/test_sim_efficiency.py's Watch named as its `killer`, on the four-GPU example (every policy
listed) and on a small random world from sim_worlds, while the unmutated core keeps every
property on the same runs. If a property stops catching its mutant, this file fails.

benchmarks/mutant_kill.py measures what each mutant costs in simulated step time.
"""

from __future__ import annotations

import pytest
from hypothesis import Phase, find, settings
from mutants import MUTANTS
from sim_worlds import SETTINGS, with_memory, worlds
from test_sim_efficiency import EXAMPLE, Watch, run_watched

from rlsched.sim.params import load_sim_config
from rlsched.sim.shell import Simulation
from rlsched.sim.workload import Workload


def test_every_mutant_has_a_killer() -> None:
    names = set(Watch(load_sim_config(EXAMPLE).policy_config("timeshare")).violations)
    assert {m.killer for m in MUTANTS.values()} <= names
    assert all(m.caught_on for m in MUTANTS.values())


def run_mutant(mutant: str, cfg, cost, model, seed: int, steps: int) -> Watch:  # type: ignore[no-untyped-def]
    """A watched run with `mutant` applied. A mutant that `crashes` may be stopped by the
    core's own invariants (AssertionError): the watch keeps what it saw until then."""
    sch = cfg.scheduler
    watch = Watch(cfg)
    work = Workload(model, seed, sch.group_size, sch.max_tokens)
    watch.sim = Simulation(cfg, cost, work, observer=watch, check_invariants=True)
    with MUTANTS[mutant].applied():
        try:
            watch.sim.run(steps)
        except AssertionError:
            if not MUTANTS[mutant].crashes:
                raise
    return watch


def run_example(policy: str, mutant: str | None, memory: bool = False) -> Watch:
    sim_cfg = load_sim_config(EXAMPLE)
    cfg = sim_cfg.policy_config(policy)
    cost = with_memory(sim_cfg.cost) if memory else sim_cfg.cost
    if mutant is None:
        return run_watched(cfg, cost, sim_cfg.workload, sim_cfg.seed, steps=4)
    return run_mutant(mutant, cfg, cost, sim_cfg.workload, sim_cfg.seed, steps=4)


@pytest.mark.parametrize("mutant", list(MUTANTS))
def test_four_gpu_example_catches_the_mutant(mutant: str) -> None:
    killer = MUTANTS[mutant].killer
    for policy in MUTANTS[mutant].caught_on:
        watch = run_example(policy, mutant, MUTANTS[mutant].memory)
        assert watch.violations[killer], f"{mutant} not caught by '{killer}' on {policy}"


def test_mutants_leave_the_core_unpatched() -> None:
    """Applying a mutant and leaving its block restores the real method: the unmutated core
    keeps every property afterwards (the control for the runs above)."""
    for mutant in MUTANTS.values():
        before = mutant.target.__dict__[mutant.attr]
        with mutant.applied():
            assert mutant.target.__dict__[mutant.attr] is not before
        assert mutant.target.__dict__[mutant.attr] is before
    assert run_example("timeshare", None).report() == {}
    assert run_example("timeshare", None, memory=True).report() == {}


def in_memory(mutant: str, world):  # type: ignore[no-untyped-def]
    """The world as the mutant is caught in it: with memory for a memory mutant."""
    cfg, cost, model, seed = world
    # A small rank (0.5 GB GPUs, 0.1 GB of weights): 5,231 tokens of KV on one GPU, 12,207 on
    # two, so memory binds on the random worlds' short contexts.
    if MUTANTS[mutant].memory:
        cost = with_memory(cost, gpu_memory_gb=0.5, weights_gb=0.1, activation_gb=0.05)
    return cfg, cost, model, seed


def caught(mutant: str, world) -> bool:
    watch = run_mutant(mutant, *in_memory(mutant, world), steps=2)
    return bool(watch.violations[MUTANTS[mutant].killer])


# `over_plan` needs a turn that fits no rank, which the first 40 derandomized random worlds do
# not produce even with small ranks (their contexts are a few hundred tokens); it is caught on
# every policy of the four-GPU example with memory (test_four_gpu_example_catches_the_mutant).
RANDOM_WORLD_MUTANTS = [name for name in MUTANTS if name != "over_plan"]


@pytest.mark.parametrize("mutant", RANDOM_WORLD_MUTANTS)
def test_a_small_random_world_catches_the_mutant(mutant: str) -> None:
    """The first derandomized random world (no shrinking) on which the property catches the
    mutant; the unmutated core keeps every property on that same world."""
    search = settings(**{**SETTINGS, "max_examples": 40, "phases": [Phase.generate]})
    world = find(worlds(), lambda w: caught(mutant, w), settings=search)
    cfg, cost, model, seed = in_memory(mutant, world)
    assert run_watched(cfg, cost, model, seed, steps=2).report() == {}
