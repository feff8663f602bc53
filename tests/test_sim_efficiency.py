"""Efficiency properties: the scheduler keeps devices busy with work that is trained.

The safety suites (test_core_properties, test_core_review) prove that nothing is lost; these
prove that nothing is wasted for a reason the scheduler controls. Each is checked after every
event of simulated runs, on the four-GPU example and on random small worlds:

* A group's first request runs on the trainer's current weights, and no later request of a
  group runs on older weights than the group already has (a dispatch never makes a group
  staler). Issue 7 defect 1: prompts dispatched before a weight sync landed were dropped.
* A rank receiving a request holds at most its fair share: the unfinished trajectories over
  the ranks serving rollout (those in rollout or coming back to it). Issue 7 defect 2: after
  an expand the whole queue went to the first rank back.
* Timeshare releases the training devices only when the next batch has reached the trigger:
  the most complete groups that could form it hold `trigger` finished trajectories. Issue 7
  defect 3: the trigger counted trajectories across every live batch, so the training devices
  were offloaded again right after they returned.
* A complete group is never dropped as stale after a fresher group was trained in its place.
* Work conservation: after every event no rank with room (wholly in rollout, below its in-flight
  cap and its fair share, fresh enough for the staleness bound) idles while a queued turn it
  may take waits (one it cannot make staler: any turn on current weights, else one whose group
  already runs on weights at least as old). With memory reported the turn must also fit the
  rank's free KV, and nothing is owed while some queued turn fits no rank with room: the queue
  then waits for memory, first come first served (routing 0.6.0).
* Placement by the documented rule (design/rlsched_routing.md, Router.pick_rank): each
  dispatch goes to the least-loaded rank that may take its turn, lowest id on ties, loads
  counted as they were when it was placed. When the shell reports memory (routing 0.6.0,
  issue 15 item 2) the rule is prefix affinity: the trajectory's home (the rank its last turn
  finished on, while that rank's epoch holds) when the home may take the turn and has the
  free KV for it, else the eligible rank with the most free KV (ties: less loaded, lowest id);
  and no dispatch plans more KV than its rank reported free, less what was planned there
  since (rebuilt here from `Started.kv_tokens`, each answer's `kv_free` and the dispatches;
  a rank leaving rollout is accounted empty). Under divided rollout a turn's need is its
  context, its kept tokens and the chunk's new tokens (routing 0.8.0, Seer's Algorithm 2).
* Weight sync overlapped with reload (design/rlsched_transitions.md, begin_expand): a Reload
  of a device behind the trainer goes out with (or after) the SyncWeights that brings it
  current, never waiting for the reload to finish first.
* The exact stale cutoff (design/rlsched_core.md, BoundedStaleness): a group is dropped
  exactly when the trainer's version minus the oldest version it ran on exceeds the bound,
  never within it (work thrown away) and never kept past it.
* No dispatch asks for a turn that has nothing left to generate: the tokens it keeps already
  make the whole turn. With divided rollout a turn whose length is a multiple of the chunk
  used to cost one more, empty dispatch (with its re-prefill), because the core took its last
  chunk for a chunk end (`RequestFinished.stopped`, design/rlsched_core.md 0.5.0). Tokens kept
  by an abort in resume mode are left out: an abort can land at the instant its request
  completes, which the engine model answers with every token.

Work conservation and placement failed on some random worlds that the derandomized examples
do not draw (found with HYPOTHESIS_PROFILE=explore): a queued turn stayed under its group's
version at queue time (None before the group started), so a rank behind the trainer idled
beside a started group's first turns. The core refiles them since design/rlsched_core.md
0.11.0 (design/rlsched_routing.md `Turns.send`); the world that found it is the last test of
this file.

The group versions, loads and rank versions these checks use are rebuilt from the commands and
events of the run, or read as facts (requests in flight, weights on a device) from the core;
the rules are restated here from the design documents, not taken from the core's code. Four
mutants of the core that only waste time (tests/mutants.py) must each break one of them:
tests/test_sim_mutants.py.

Seer's orders and divided rollout (issue 9; design/rlsched_seer.md) must keep them all: the
same runs repeat with the context-aware and oracle placements and with chunked turns.

On main before these fixes (b97a5c2) the first three fail on the four-GPU example:
`git checkout b97a5c2 -- rlsched && python -m pytest tests/test_sim_efficiency.py`.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sim_worlds import SETTINGS, _d, _s, with_memory, worlds

from rlsched.config import RlschedConfig
from rlsched.core.buffer import Trajectory, TrajState
from rlsched.core.commands import Command, Dispatch, DropStale, Reload, SyncWeights, Train
from rlsched.core.events import (
    Event,
    RequestAborted,
    RequestFinished,
    Started,
    TrainingDone,
    WorkerRecovered,
)
from rlsched.pool import DeviceMode
from rlsched.sim.params import CostModel, WorkloadModel, load_sim_config, policy_mapping
from rlsched.sim.shell import Simulation
from rlsched.sim.workload import Workload

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "four_gpu.yaml"
SERVING = (DeviceMode.ROLLOUT, DeviceMode.EXPANDING)


class Watch:
    """Observer that checks the efficiency properties after every event of one run."""

    def __init__(self, cfg: RlschedConfig) -> None:
        self.cfg = cfg
        self.sim: Simulation | None = None
        self.min_version: dict[int, int] = {}
        self.passed_over: set[int] = set()
        self.shrinks = 0
        self.dispatches = 0
        self.turn_of: dict[int, tuple[int, int]] = {}  # rid -> (tid, turn) of every dispatch
        self.abort_kept: set[tuple[int, int]] = set()  # turns holding tokens kept by an abort
        self.group_min: dict[int, int] = {}  # gid -> oldest version any of its dispatches had
        self.sync_asked: dict[int, int] = {}  # device -> newest version a SyncWeights sent it
        self.bound = cfg.scheduler.staleness
        self.cap = cfg.scheduler.max_inflight_per_rank
        self.chunk = cfg.scheduler.chunk_tokens  # divided rollout: a chunk plans its new tokens
        self.kv_cap: int | None = None  # a rank's KV capacity, once the shell reported it
        self.kv_free: list[int] = []  # last reported free KV less what was planned since
        self.rank_of: dict[int, int] = {}  # rid -> rank of every dispatch
        self.serving: list[bool] = []  # rank wholly in rollout at the last event
        self.violations: dict[str, list[str]] = {
            "idle rank while a turn waits": [],
            "not the rank the placement rule picks": [],
            "planned more KV than reported": [],
            "reload without its weights": [],
            "dropped within the bound": [],
            "kept past the bound": [],
            "dispatched a turn with nothing left": [],
            "started on old weights": [],
            "made staler": [],
            "over fair share": [],
            "early shrink": [],
            "dropped after a fresher group trained": [],
        }

    def __call__(self, event: Event, commands: list[Command]) -> None:
        assert self.sim is not None
        core = self.sim.core
        where = f"t={core.now:.3f} {type(event).__name__}"
        dispatched: set[int] = set()
        if isinstance(event, RequestAborted) and event.new_tokens:
            turn = self.turn_of.get(event.rid)
            if turn is not None:
                self.abort_kept.add(turn)
        if isinstance(event, WorkerRecovered):
            for device in core.pool.gpus_of(core.pool.rank_of(event.device)):
                self.sync_asked.pop(device, None)
        self._note_memory(event)
        self._check_placement(where, commands)
        reloads: list[int] = []
        for command in commands:
            if isinstance(command, Dispatch):
                self.dispatches += 1
                dispatched.add(command.rank)
                self._check_left(where, command)
                old = self.min_version.get(command.gid)
                if old is None:
                    self.min_version[command.gid] = command.version
                    if command.version != core.version:
                        self._flag("started on old weights", where, command, core.version)
                elif command.version < old:
                    self._flag("made staler", where, command, old)
            elif isinstance(command, Train):
                self._note_batch(command)
            elif isinstance(command, DropStale):
                for gid in set(command.gids) & self.passed_over:
                    self._flag("dropped after a fresher group trained", where, gid)
                self._check_dropped(where, command)
            elif isinstance(command, SyncWeights):
                for device in command.devices:
                    self.sync_asked[device] = max(self.sync_asked.get(device, 0), command.version)
            elif isinstance(command, Reload):
                reloads.extend(command.devices)
        self._check_reload(where, reloads)
        self._note_left_rollout()
        self._check_fair_share(where, dispatched)
        if core.stats.shrinks > self.shrinks:
            self.shrinks = core.stats.shrinks
            self._check_trigger(where)
        if isinstance(event, TrainingDone):
            self._check_kept(where)
        self._check_idle(where)

    def _rank_version(self, rank: int) -> int:
        """The weights a rank serves: the oldest its devices hold (a fact the core records)."""
        core = self.sim.core
        return min(core.transitions.dev_version[d] for d in core.pool.gpus_of(rank))

    def _room(self) -> tuple[list[int], int]:
        """Each rank's weights version (None unless it may take a request: wholly in rollout,
        fresh enough for the bound) and the fair share of a rank."""
        core = self.sim.core
        pool = core.pool
        unfinished = sum(
            1
            for t in core.buffer.trajs.values()
            if t.state in (TrajState.QUEUED, TrajState.RUNNING, TrajState.ENV)
        )
        serving = pool.count(DeviceMode.ROLLOUT) + pool.count(DeviceMode.EXPANDING)
        fair = max(1, math.ceil(unfinished / max(1, serving // pool.gpus_per_rank)))
        oldest = core.version - self.bound
        versions = []
        for rank in range(pool.num_ranks):
            version = self._rank_version(rank)
            rollout = all(pool.mode(d) is DeviceMode.ROLLOUT for d in pool.gpus_of(rank))
            versions.append(version if rollout and version >= oldest else None)
        return versions, fair

    def _fits(self, gid: int, version: int) -> bool:
        """A turn of group `gid` may run on weights `version` without making its group staler."""
        started = self.group_min.get(gid)
        return version >= self.sim.core.version or (started is not None and started <= version)

    def _note_memory(self, event: Event) -> None:
        """The memory the shell reported: capacity once, then each answer's free KV."""
        if isinstance(event, Started) and event.kv_tokens is not None:
            ranks = self.sim.core.pool.num_ranks
            self.kv_cap = event.kv_tokens
            self.kv_free = [event.kv_tokens] * ranks
        elif isinstance(event, (RequestFinished, RequestAborted)):
            rank = self.rank_of.get(event.rid)
            if rank is not None and self.kv_cap is not None and event.kv_free is not None:
                self.kv_free[rank] = event.kv_free

    def _note_left_rollout(self) -> None:
        """A rank that left rollout (a shrink or a loss) is accounted empty from then on."""
        pool = self.sim.core.pool
        now = [pool.rank_in_rollout(rank) for rank in range(pool.num_ranks)]
        if self.kv_cap is not None and self.serving:
            for rank, (was, serving) in enumerate(zip(self.serving, now, strict=True)):
                if was and not serving:
                    self.kv_free[rank] = self.kv_cap
        self.serving = now

    def _home(self, tid: int) -> int | None:
        """The rank holding the prefix of trajectory `tid` (facts the core records: the rank
        its last turn finished on and that rank's epoch), or None."""
        router = self.sim.core.router
        traj = self.sim.core.buffer.trajs[tid]
        if traj.home >= 0 and router.epoch[traj.home] == traj.home_epoch:
            return traj.home
        return None

    def _check_placement(self, where: str, commands: list[Command]) -> None:
        dispatches = [c for c in commands if isinstance(c, Dispatch)]
        if not dispatches:
            return
        load = list(self.sim.core.router.load)
        for command in dispatches:
            load[command.rank] -= 1
        versions, fair = self._room()
        memory = self.kv_cap is not None
        free = self.kv_free
        for command in dispatches:
            self.rank_of[command.rid] = command.rank
            need = command.context_tokens + command.resume_tokens
            if self.chunk is not None:
                need += command.max_new_tokens
            if memory:
                need = min(need, self.kv_cap)  # a turn larger than the cache runs alone
            eligible = [
                rank
                for rank, version in enumerate(versions)
                if version is not None
                and load[rank] < min(self.cap, fair)
                and self._fits(command.gid, version)
                and (not memory or free[rank] >= need)
            ]
            if memory:
                if free[command.rank] < need:
                    self._flag(
                        "planned more KV than reported",
                        where,
                        command,
                        f"free {free[command.rank]}",
                    )
                home = self._home(command.tid)
                if home is not None and home in eligible:
                    best = home
                else:
                    best = max(eligible, key=lambda r: (free[r], -load[r], -r), default=None)
                wrong = best is not None and best != command.rank
                free[command.rank] -= need
            else:
                best = min(eligible, key=lambda r: (load[r], r), default=None)
                wrong = best is not None and (load[best], best) < (load[command.rank], command.rank)
            if wrong:
                self._flag(
                    "not the rank the placement rule picks",
                    where,
                    command.rank,
                    load[command.rank],
                    "best",
                    best,
                )
            load[command.rank] += 1
            old = self.group_min.get(command.gid)
            if old is None or command.version < old:
                self.group_min[command.gid] = command.version

    def _check_idle(self, where: str) -> None:
        core = self.sim.core
        load = core.router.load
        versions, fair = self._room()
        free = {
            rank: version
            for rank, version in enumerate(versions)
            if version is not None and load[rank] < min(self.cap, fair)
        }
        if not free:
            return
        queued = [t for t in core.buffer.trajs.values() if t.state is TrajState.QUEUED]
        if self.kv_cap is not None:
            kv = self.kv_free
            for traj in queued:
                need = min(self._need(traj), self.kv_cap)
                takers = [r for r, v in free.items() if self._fits(traj.gid, v)]
                if takers and all(kv[r] < need for r in takers):
                    return  # the queue waits for memory, first come first served
        for traj in queued:
            need = self._need(traj)
            for rank, version in free.items():
                if self.kv_cap is not None and self.kv_free[rank] < min(need, self.kv_cap):
                    continue
                if self._fits(traj.gid, version):
                    self._flag(
                        "idle rank while a turn waits",
                        where,
                        f"rank {rank} (load {load[rank]}, weights {version} of {core.version})",
                        f"trajectory {traj.tid} (group {traj.gid} from {self.group_min.get(traj.gid)})",
                    )
                    return

    def _need(self, traj: Trajectory) -> int:
        """KV a dispatch of the queued turn of `traj` plans: context and kept tokens, and under
        divided rollout the new tokens of its chunk."""
        need = traj.context_tokens + traj.resume_tokens
        if self.chunk is not None:
            need += max(0, min(self.chunk, traj.max_tokens - need))
        return need

    def _check_reload(self, where: str, devices: list[int]) -> None:
        core = self.sim.core
        for device in devices:
            current = core.transitions.dev_version[device] >= core.version
            if not current and self.sync_asked.get(device, 0) < core.version:
                self._flag("reload without its weights", where, device, core.version)

    def _check_dropped(self, where: str, command: DropStale) -> None:
        version = self.sim.core.version
        for gid in command.gids:
            started = self.group_min.get(gid)
            if started is not None and version - started <= self.bound:
                self._flag("dropped within the bound", where, gid, started, version)

    def _check_kept(self, where: str) -> None:
        core = self.sim.core
        for gid, group in core.buffer.groups.items():
            started = self.group_min.get(gid)
            if not group.training and started is not None and core.version - started > self.bound:
                self._flag("kept past the bound", where, gid, started, core.version)

    def _flag(self, name: str, *what: object) -> None:
        self.violations[name].append(" ".join(map(str, what)))

    def _check_left(self, where: str, command: Dispatch) -> None:
        turn = (command.tid, command.turn)
        self.turn_of[command.rid] = turn
        if not command.resume_tokens or turn in self.abort_kept:
            return
        gen = self.sim.workload.turns(command.gid, command.tid)[command.turn].gen
        if gen <= command.resume_tokens:
            self._flag("dispatched a turn with nothing left", where, command, gen)

    def _note_batch(self, command: Train) -> None:
        groups = self.sim.core.buffer.groups
        freshest = max(groups[s.gid].min_version for s in command.samples)
        for gid in self.sim.core.buffer.ready:
            if groups[gid].min_version < freshest:
                self.passed_over.add(gid)

    def _check_fair_share(self, where: str, ranks: set[int]) -> None:
        if not ranks:
            return
        core = self.sim.core
        pool = core.pool
        serving = sum(
            all(pool.mode(d) in SERVING for d in pool.gpus_of(rank))
            for rank in range(pool.num_ranks)
        )
        unfinished = sum(1 for t in core.buffer.trajs.values() if t.state.value != "done")
        fair = max(1, math.ceil(unfinished / max(serving, 1)))
        for rank in sorted(ranks):
            if core.router.load[rank] > fair:
                self._flag("over fair share", where, rank, core.router.load[rank], fair)

    def _check_trigger(self, where: str) -> None:
        core = self.sim.core
        if self.cfg.scheduler.mode != "timeshare":
            return
        gpb = self.cfg.groups_per_batch
        done = [g.done for g in core.buffer.groups.values() if not g.training]
        progress = sum(heapq.nlargest(gpb, done))
        if progress < self.cfg.shrink_trigger:
            self._flag("early shrink", where, progress, self.cfg.shrink_trigger)

    def report(self) -> dict[str, list[str]]:
        """The violations found, first three of each kind."""
        return {k: v[:3] for k, v in self.violations.items() if v}


def run_watched(cfg: RlschedConfig, cost, model, seed: int, steps: int) -> Watch:
    sch = cfg.scheduler
    watch = Watch(cfg)
    work = Workload(model, seed, sch.group_size, sch.max_tokens)
    watch.sim = Simulation(cfg, cost, work, observer=watch, check_invariants=True)
    watch.sim.run(steps)
    return watch


def example_runs() -> Iterator[tuple[str, RlschedConfig]]:
    sim_cfg = load_sim_config(EXAMPLE)
    for name in sim_cfg.policies:
        yield name, sim_cfg.policy_config(name)


@pytest.mark.parametrize("name", [name for name, _ in example_runs()])
def test_four_gpu_example_wastes_nothing_the_scheduler_controls(name: str) -> None:
    sim_cfg = load_sim_config(EXAMPLE)
    watch = run_watched(
        sim_cfg.policy_config(name), sim_cfg.cost, sim_cfg.workload, sim_cfg.seed, steps=4
    )
    assert watch.dispatches > 100
    assert watch.report() == {}


@settings(**SETTINGS)
@given(worlds())
def test_random_worlds_waste_nothing_the_scheduler_controls(world) -> None:
    cfg, cost, model, seed = world
    watch = run_watched(cfg, cost, model, seed, steps=2)
    assert watch.report() == {}


SEER_VARIANTS = {
    "context": {"placement": "context"},
    "oracle": {"placement": "oracle"},
    "divided": {"chunk_tokens": 64},
    "context+divided": {"placement": "context", "chunk_tokens": 64},
}


def with_variant(mapping: dict, variant: dict) -> RlschedConfig:
    """A scheduler config with Seer's settings `variant` on top of `mapping`."""
    scheduler = {**mapping["scheduler"], **variant}
    return RlschedConfig.model_validate({**mapping, "scheduler": scheduler})


@pytest.mark.parametrize("variant", list(SEER_VARIANTS))
@pytest.mark.parametrize("name", [name for name, _ in example_runs()])
def test_seers_orders_and_chunks_waste_nothing_on_the_four_gpu_example(
    name: str, variant: str
) -> None:
    sim_cfg = load_sim_config(EXAMPLE)
    cfg = with_variant(policy_mapping(sim_cfg, name), SEER_VARIANTS[variant])
    watch = run_watched(cfg, sim_cfg.cost, sim_cfg.workload, sim_cfg.seed, steps=4)
    assert watch.dispatches > 100
    if "divided" in variant:
        assert watch.sim.core.stats.chunk_ends > 0
    assert watch.report() == {}


@settings(**{**SETTINGS, "max_examples": 15})
@given(worlds(), st.sampled_from(list(SEER_VARIANTS.values())))
def test_random_worlds_waste_nothing_with_seers_orders_and_chunks(world, variant) -> None:
    cfg, cost, model, seed = world
    cfg = with_variant(cfg.model_dump(), variant)
    watch = run_watched(cfg, cost, model, seed, steps=2)
    assert watch.report() == {}


def memory_run(name: str, variant: dict | None = None) -> Watch:
    """The four-GPU example with memory (sim_worlds.MEMORY_KV): the shell reports it, the core
    places by prefix affinity."""
    sim_cfg = load_sim_config(EXAMPLE)
    cfg = with_variant(policy_mapping(sim_cfg, name), variant or {})
    cost = with_memory(sim_cfg.cost)
    return run_watched(cfg, cost, sim_cfg.workload, sim_cfg.seed, steps=4)


@pytest.mark.parametrize("name", [name for name, _ in example_runs()])
def test_four_gpu_example_with_memory_places_by_prefix_affinity(name: str) -> None:
    watch = memory_run(name)
    core = watch.sim.core
    assert watch.dispatches > 100 and watch.kv_cap == core.router.kv_cap == 22_670 - 226
    assert core.stats.finished > 100
    assert watch.report() == {}


@pytest.mark.parametrize("variant", list(SEER_VARIANTS))
def test_seers_orders_and_chunks_with_memory_waste_nothing(variant: str) -> None:
    watch = memory_run("timeshare", SEER_VARIANTS[variant])
    assert watch.dispatches > 100 and watch.kv_cap is not None
    assert watch.report() == {}


@settings(**{**SETTINGS, "max_examples": 20})
@given(worlds(), st.sampled_from([16.0, 17.0, 17.5, 17.9]))
def test_random_worlds_with_memory_waste_nothing(world, weights_gb: float) -> None:
    cfg, cost, model, seed = world
    watch = run_watched(cfg, with_memory(cost, weights_gb=weights_gb), model, seed, steps=2)
    assert watch.kv_cap is not None
    assert watch.report() == {}


def test_a_rank_behind_the_trainer_takes_a_started_groups_first_turns() -> None:
    """A world found by HYPOTHESIS_PROFILE=explore: timeshare on four single-GPU ranks, one
    request per rank. After the first step rank 1 still holds weights 1 while the trainer holds
    2, and trajectory 25 of group 12 (started on weights 1) waits for its first turn: by the
    rule of design/rlsched_routing.md (a rank behind the trainer takes only turns it cannot
    make staler) rank 1 may take it; before core 0.11.0 it idled until its sync landed."""
    cfg = RlschedConfig.model_validate(
        {
            "devices": {"count": 4, "gpus_per_rank": 1, "train": 1},
            "scheduler": {
                "mode": "timeshare",
                "group_size": 2,
                "train_batch_size": 8,
                "staleness": 2,
                "max_turns": 1,
                "max_tokens": 2000,
                "env_timeout_s": 600.0,
                "migration": "reissue",
                "max_inflight_per_rank": 1,
            },
        }
    )
    cost = CostModel.model_validate(
        {
            "decode_rank_tokens_per_s": _s(50.0),
            "decode_request_tokens_per_s": _s(30.0),
            "prefill_s_per_token": _s(0.0),
            "prefix_cache": False,
            "train_s_per_token": _s(1e-4),
            "train_fixed_s": _s(3.0),
            "sync_s": _s(2.0),
            "offload_s": _s(0.0),
            "reload_s": _s(1.0),
        }
    )
    model = WorkloadModel.model_validate(
        {
            "prompt_tokens": _d(100, 0.5, 1, 1500),
            "turns": _d(3.0, 0.0, 1, 8),
            "turns_within_group_sigma": _s(0.5),
            "gen_tokens": _d(80, 1.0, 1, 1000),
            "obs_tokens": _d(20, 1.0, 0, 300),
            "env_step_s": _d(1.0, 1.5, 0.01, 120),
        }
    )
    watch = run_watched(cfg, cost, model, 0, steps=3)
    assert watch.violations["idle rank while a turn waits"] == []
