"""Property tests of the scheduler core over random interleavings of events.

A small random "world" plays the shell: it executes every command (checking that it is
physically valid), delivers completion events in random order, races aborts against
completions, injects worker loss (during shrinks too) and sometimes delivers late events from
lost devices. After every event it checks the invariants:

* no request lost or duplicated: a trajectory never runs twice at once, every turn is
  dispatched in order and its environment step started exactly once, and at the end every
  trajectory is trained, dropped or still accounted for in the buffer;
* each completed trajectory is trained at most once, in complete groups;
* the staleness bound holds for every trained trajectory;
* every device is in exactly one mode, and modes agree with what the devices physically do;
* allocations are valid: requests only go to ROLLOUT ranks, offload only drained ranks,
  training only on offloaded devices; a shrink commits whole or is rolled back whole;
* every trajectory's state changes only along `Trajectory.TRANSITIONS` (tests/traj_moves.py);
* every command type has a handler (the world is a `Shell`: rlsched.core.shell refuses it
  otherwise), and the world's running requests are `PendingRequest` records in its `Ledger`;
* the initial layout comes from the `InitialLayout` command, device answers repeat the
  operation id of their command, and no turn is dispatched, nor environment step started, once
  the trajectory's idle environment session reached its deadline (the world sometimes enforces
  `Dispatch.env_deadline` itself by aborting the request).
"""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlsched.config import RlschedConfig
from rlsched.core.buffer import Trajectory, TrajState
from rlsched.core.commands import (
    Abort,
    Dispatch,
    DropStale,
    InitialLayout,
    LoadPrompts,
    Offload,
    Reload,
    StartEnvStep,
    SyncWeights,
    Train,
)
from rlsched.core.events import (
    EnvStepDone,
    EnvStepFailed,
    EnvStepTimedOut,
    OffloadDone,
    PromptsLoaded,
    ReloadDone,
    RequestAborted,
    RequestFinished,
    Started,
    TrainingDone,
    WeightsSynced,
    WorkerLost,
    WorkerRecovered,
)
from rlsched.core.machine import Scheduler
from rlsched.core.shell import Ledger, PendingRequest, Shell, handles
from rlsched.pool import DeviceMode, GpuPool
from tests.traj_moves import MoveWatch

SETTINGS = {
    "deadline": None,
    "derandomize": True,
    "database": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
}


class World(Shell):
    """A random shell: executes commands, checks them, and delivers events in random order."""

    def __init__(self, cfg: RlschedConfig, seed: int, loss_rate: float, max_losses: int) -> None:
        self.cfg = cfg
        self.rng = random.Random(seed)
        self.loss_rate = loss_rate
        self.max_losses = max_losses
        self.sched = Scheduler(cfg)
        n = cfg.num_devices
        self.tp = cfg.devices.gpus_per_rank
        self.S = cfg.scheduler.staleness
        self.n = n
        self.time = 0.0
        self.pending: list = []  # events not yet delivered
        self.awake = [False] * n  # known from the InitialLayout command
        self.layout_seen = False
        self.session_deadline: dict[int, float] = {}  # tid -> idle environment session deadline
        self.training = [False] * n
        self.offloading = [False] * n
        self.lost = [False] * n
        self.version = [0] * n
        self.produced = 0
        self.ledger = Ledger()  # running requests, until their terminal event is delivered
        self.rank_rids: dict[int, set[int]] = {e: set() for e in range(n // self.tp)}
        self.finished_turns: Counter = Counter()  # (tid, turn) -> accepted finishes
        self.env_started: set[tuple[int, int]] = set()
        self.env_pending: set[tuple[int, int]] = set()
        self.next_turn: dict[int, int] = {}
        self.min_version: dict[int, int] = {}
        self.trained: set[int] = set()
        self.in_batch: set[int] = set()
        self.dropped: set[int] = set()
        self.steps: dict[int, dict] = {}
        self.losses = 0
        self.min_alive_ranks = 2  # losses stop there unless lost workers are replaced
        self.recover_rate = 0.0
        self.recoveries = 0
        self.events = 0
        self.train_ok = 0
        self.rids_by_rank_history: dict[int, set[int]] = {}
        self.moves = MoveWatch()

    # ---------------------------------------------------------------- running the world

    def run(self, max_events: int, target_steps: int, start: bool = True) -> None:
        """Deliver events until `target_steps` successful steps or `max_events`; a world
        with nothing left to deliver before that is a deadlock."""
        if start:
            self.feed(Started(0.0))
        while self.events < max_events and self.train_ok < target_steps:
            if (
                self.losses < self.max_losses
                and self.rng.random() < self.loss_rate
                and self.lose_device()
            ):
                continue
            lost = any(self.lost)
            if lost and self.recover_rate and self.rng.random() < self.recover_rate:
                self.recover_device()
                continue
            if not self.pending:
                # nothing the core waits for can arrive: it must know (and say so) at once
                stall = self.sched.stall()
                assert stall is not None, "stalled world, but the core waits for an answer"
                assert lost and self.recover_rate, f"deadlock after {self.events} events: {stall}"
                self.recover_device()
                continue
            i = self.rng.randrange(len(self.pending))
            self.pending[i], self.pending[-1] = self.pending[-1], self.pending[i]
            self.deliver(self.pending.pop())

    def feed(self, event) -> None:
        self.events += 1
        shrink_before = self.sched.shrinking
        rolled_before = self.sched.stats.shrinks_rolled_back
        commands = self.sched.handle(event)
        for command in commands:
            self.execute(command)
        self.check(shrink_before, rolled_before)

    def deliver(self, item) -> None:
        kind, payload = item
        self.time += self.rng.choice((0.0, 0.5, 1.0))
        if kind == "finish" or kind == "abort":
            rid, tokens, late = payload
            op = self.ledger.close(PendingRequest, rid)
            deadline = op.command.env_deadline if op is not None else None
            expired = kind == "finish" and deadline is not None and self.time >= deadline
            if expired and self.rng.random() < 0.5:  # the shell enforces the session deadline
                kind, tokens = "abort", self.rng.randint(0, tokens)
            if op is not None:
                self.rank_rids[op.command.rank].discard(rid)
            event = (RequestFinished if kind == "finish" else RequestAborted)(
                self.time, rid, tokens
            )
            if op is not None and not late and kind == "finish":
                known = self.sched.buffer.trajs.get(op.command.tid)
                if known is not None and known.rid == rid:
                    self.finished_turns[(op.command.tid, op.command.turn)] += 1
            self.feed(event)
        elif kind == "env":
            tid, turn, timed_out, obs, done = payload
            self.env_pending.discard((tid, turn))
            self.next_turn[tid] = turn + 1
            if not timed_out and not done:
                self.session_deadline[tid] = self.time + self.cfg.scheduler.env_timeout_s
            if timed_out == "failed":  # the environment raised
                self.feed(EnvStepFailed(self.time, tid, turn))
            elif timed_out:
                self.feed(EnvStepTimedOut(self.time, tid, turn))
            else:
                self.feed(EnvStepDone(self.time, tid, turn, obs, done))
        elif kind == "offload":
            device, op_id = payload
            if not self.lost[device]:
                self.awake[device] = False
                self.offloading[device] = False
            self.feed(OffloadDone(self.time, device, op_id))
        elif kind == "reload":
            device, op_id = payload
            if not self.lost[device]:
                self.awake[device] = True
            self.feed(ReloadDone(self.time, device, op_id))
        elif kind == "sync":
            device, version = payload
            if not self.lost[device]:
                self.version[device] = max(self.version[device], version)
            self.feed(WeightsSynced(self.time, device, version))
        elif kind == "train":
            step, version = payload
            info = self.steps[step]
            info["done"] = True
            if info.get("dead"):  # a late answer from a step whose every device was lost
                self.feed(TrainingDone(self.time, step, version + 1, self.rng.random() < 0.5))
                return
            ok = not info["failed"]
            reported_ok = ok or self.rng.random() < 0.3  # a failed step may still say ok
            for d in info["devices"]:
                self.training[d] = False
            if ok:
                tids = info["tids"]
                assert not (tids & self.trained), "trajectory trained twice"
                self.trained |= tids
                self.produced = version + 1
                self.train_ok += 1
            self.in_batch -= info["tids"]
            self.feed(TrainingDone(self.time, step, version + 1, reported_ok))
        elif kind == "prompts":
            load_id, count = payload
            lens = tuple(self.rng.randint(1, 20) for _ in range(count))
            self.feed(PromptsLoaded(self.time, load_id, lens))
        else:  # pragma: no cover
            raise AssertionError(kind)

    def lose_device(self, prefer_shrinking: float = 0.5) -> bool:
        alive = [d for d in range(self.n) if not self.lost[d]]
        if len(alive) <= self.min_alive_ranks * self.tp:
            return False
        # prefer devices of a shrink or a training step in progress: the hard cases
        shrinking = [d for d in self.sched.shrinking if not self.lost[d]]
        training = [d for d in alive if self.training[d]]
        roll = self.rng.random()
        if shrinking and roll < prefer_shrinking:
            device = self.rng.choice(shrinking)
        elif training and roll < 0.8:
            device = self.rng.choice(training)
        else:
            device = self.rng.choice(alive)
        rank = device // self.tp
        self.losses += 1
        for d in range(rank * self.tp, rank * self.tp + self.tp):
            self.lost[d] = True
            self.awake[d] = False
            if self.training[d]:
                for info in self.steps.values():
                    if d in info["devices"] and not info["done"]:
                        info["failed"] = True
        # a step whose every device is lost has nobody left to answer (WorkerLost contract):
        # the core ends it at once and may train its batch again elsewhere
        dead_steps = set()
        for step, info in self.steps.items():
            if not info["done"] and all(self.lost[d] for d in info["devices"]):
                info["dead"] = True
                self.in_batch -= info["tids"]
                dead_steps.add(step)
        for rid in list(self.rank_rids[rank]):
            assert self.ledger.forget(self.ledger.get(PendingRequest, rid))
        self.rank_rids[rank].clear()
        # requests of the dead rank: their events mostly vanish, some arrive late
        kept = []
        for kind, payload in self.pending:
            if kind in ("finish", "abort") and payload[0] in self.dead_rids(rank):
                if self.rng.random() < 0.3:
                    kept.append((kind, (payload[0], payload[1], True)))
                continue
            if kind == "train" and payload[0] in dead_steps:
                if self.rng.random() < 0.3:
                    kept.append((kind, payload))
                continue
            kept.append((kind, payload))
        self.pending = kept
        self.feed(WorkerLost(self.time, device))
        return True

    def recover_device(self) -> None:
        """A lost rank's worker is replaced: asleep, initial weights. Nothing from the lost
        worker arrives after this (WorkerRecovered's contract)."""
        device = self.rng.choice([d for d in range(self.n) if self.lost[d]])
        rank = device // self.tp
        devices = set(range(rank * self.tp, rank * self.tp + self.tp))
        self.pending = [
            (kind, payload)
            for kind, payload in self.pending
            if not (kind in ("offload", "reload", "sync") and payload[0] in devices)
        ]
        for d in devices:
            self.lost[d] = self.awake[d] = self.training[d] = self.offloading[d] = False
            self.version[d] = 0
        self.recoveries += 1
        self.feed(WorkerRecovered(self.time, device))

    def dead_rids(self, rank: int) -> set[int]:
        return self.rids_by_rank_history.get(rank, set())

    # ---------------------------------------------------------------- executing commands

    def execute(self, command) -> None:
        assert self.layout_seen or isinstance(command, InitialLayout), (
            f"{command!r} before InitialLayout"
        )
        super().execute(command)

    @handles(InitialLayout)
    def layout(self, c: InitialLayout) -> None:
        assert not self.layout_seen, "InitialLayout sent twice"
        self.layout_seen = True
        assert sorted(c.rollout + c.offloaded) == list(range(self.n))
        for d in c.rollout:
            self.awake[d] = True

    @handles(LoadPrompts)
    def load_prompts(self, c: LoadPrompts) -> None:
        assert c.count >= 1
        self.pending.append(("prompts", (c.load_id, c.count)))

    @handles(Dispatch)
    def dispatch(self, c: Dispatch) -> None:
        sched = self.sched
        devices = range(c.rank * self.tp, c.rank * self.tp + self.tp)
        for d in devices:
            assert sched.pool.mode(d) is DeviceMode.ROLLOUT, "dispatch to non-ROLLOUT"
            assert self.awake[d] and not self.training[d] and not self.lost[d]
            assert not self.offloading[d], "dispatch to an rank being offloaded"
        assert c.version == min(self.version[d] for d in devices), "wrong weights version"
        assert c.version >= sched.version - self.S
        assert c.tid not in self.dropped and c.tid not in self.trained
        for op in self.ledger.outstanding(PendingRequest):
            assert op.command.tid != c.tid, f"trajectory {c.tid} running twice"
        assert c.turn == self.next_turn.get(c.tid, 0), "turn out of order"
        assert (c.tid, c.turn) not in self.env_started
        assert c.max_new_tokens >= 1
        assert c.env_deadline == self.session_deadline.get(c.tid), "wrong session deadline"
        assert c.env_deadline is None or self.time < c.env_deadline, "dispatch past deadline"
        assert (
            c.context_tokens + c.resume_tokens + c.max_new_tokens
            == self.cfg.scheduler.max_tokens
        )
        self.min_version[c.tid] = min(self.min_version.get(c.tid, c.version), c.version)
        self.ledger.open(PendingRequest(self.time, c))
        self.rank_rids[c.rank].add(c.rid)
        self.rids_by_rank_history.setdefault(c.rank, set()).add(c.rid)
        tokens = self.rng.randint(0, c.max_new_tokens)
        self.pending.append(("finish", (c.rid, tokens, False)))

    @handles(Abort)
    def abort(self, c: Abort) -> None:
        assert c.rids and len(set(c.rids)) == len(c.rids)
        for rid in c.rids:
            op = self.ledger.get(PendingRequest, rid)
            assert op is not None and op.command.rank == c.rank, "abort of unknown request"
            if self.rng.random() < 0.7:  # the abort wins the race
                for i, (kind, payload) in enumerate(self.pending):
                    if kind == "finish" and payload[0] == rid:
                        partial = self.rng.randint(0, payload[1])
                        self.pending[i] = ("abort", (rid, partial, False))
                        break

    @handles(Offload)
    def offload(self, c: Offload) -> None:
        for d in c.devices:
            assert self.awake[d] and not self.training[d] and not self.lost[d]
            assert not self.offloading[d]
            assert not self.rank_rids[d // self.tp], "offload of an undrained rank"
            self.offloading[d] = True
            self.pending.append(("offload", (d, c.op_id)))

    @handles(Reload)
    def reload(self, c: Reload) -> None:
        for d in c.devices:
            assert not self.awake[d] and not self.training[d] and not self.lost[d]
            self.pending.append(("reload", (d, c.op_id)))

    @handles(SyncWeights)
    def sync(self, c: SyncWeights) -> None:
        assert c.version == self.produced == self.sched.version
        for d in c.devices:
            assert not self.lost[d] and not self.training[d]
            self.pending.append(("sync", (d, c.version)))

    @handles(Train)
    def train(self, c: Train) -> None:
        assert c.devices and len(set(c.devices)) == len(c.devices)
        for d in c.devices:
            assert not self.awake[d] and not self.training[d] and not self.lost[d]
            assert not self.offloading[d]
            self.training[d] = True
        assert c.version == self.produced
        tids = {s.tid for s in c.samples}
        assert len(tids) == len(c.samples) == self.cfg.scheduler.train_batch_size
        per_group = Counter(s.gid for s in c.samples)
        assert set(per_group.values()) == {self.cfg.scheduler.group_size}, "incomplete group"
        assert not (tids & self.trained), "trained twice"
        assert not (tids & self.dropped), "training a dropped trajectory"
        assert not (tids & self.in_batch), "trajectory in two batches"
        for s in c.samples:
            assert c.version - self.min_version[s.tid] <= self.S, "staleness bound exceeded"
            assert all(c.version - v <= self.S for v in s.turn_versions)
            assert len(s.turn_versions) >= 1
            # a turn closed after its session timed out starts no environment step
            assert s.timed_out or (s.tid, len(s.turn_versions) - 1) in self.env_started
        self.in_batch |= tids
        self.steps[c.step] = {
            "devices": c.devices,
            "tids": tids,
            "failed": False,
            "done": False,
        }
        self.pending.append(("train", (c.step, c.version)))

    @handles(DropStale)
    def drop_stale(self, c: DropStale) -> None:
        tids = set(c.tids)
        assert not (tids & self.trained) and not (tids & self.in_batch)
        assert len(c.tids) == len(c.gids) * self.cfg.scheduler.group_size
        self.dropped |= tids

    @handles(StartEnvStep)
    def start_env_step(self, c: StartEnvStep) -> None:
        key = (c.tid, c.turn)
        assert key not in self.env_started, "environment step started twice"
        assert self.finished_turns[key] == 1 or self.cfg.scheduler.migration == "resume"
        assert c.deadline == self.time + self.cfg.scheduler.env_timeout_s
        session = self.session_deadline.get(c.tid)
        assert session is None or self.time < session, "env step of a timed-out session"
        self.env_started.add(key)
        self.env_pending.add(key)
        roll = self.rng.random()
        ended = "failed" if 0.05 <= roll < 0.08 else roll < 0.05
        payload = (c.tid, c.turn, ended, self.rng.randint(0, 8), roll > 0.6)
        self.pending.append(("env", payload))

    # ---------------------------------------------------------------- invariants

    def check(self, shrink_before: tuple[int, ...], rolled_before: int) -> None:
        sched = self.sched
        self.moves.check(sched.buffer)  # no trajectory made a move the table does not list
        sched.check_invariants()
        pool = sched.pool
        for d in range(self.n):
            mode = pool.mode(d)
            assert (mode is DeviceMode.LOST) == self.lost[d]
            if mode is DeviceMode.ROLLOUT:
                assert self.awake[d] and not self.training[d]
            elif mode is DeviceMode.TRAINING:
                assert self.training[d]
            elif mode is DeviceMode.OFFLOADED:
                assert not self.awake[d] and not self.offloading[d]
        if sched.stats.shrinks_rolled_back > rolled_before:
            for d in shrink_before:
                mode = pool.mode(d)
                assert mode is not DeviceMode.TRAINING and mode is not DeviceMode.OFFLOADED
                if mode is DeviceMode.SHRINKING:  # offload under way, or a fresh shrink began
                    assert d in sched.reload_pending or d in sched.shrinking
        s = sched.stats
        assert s.shrinks == s.shrinks_committed + s.shrinks_rolled_back + bool(sched.shrinking)
        if sched.stall() is not None:  # a stall is never claimed while an answer is owed
            for kind, payload in self.pending:
                if kind in ("finish", "abort"):
                    assert payload[0] not in sched.router.requests, "stall, a request owed"
                elif kind == "prompts":
                    assert payload[0] != sched.turns.load_pending, "stall, a prompt load owed"
                elif kind == "env":
                    traj = sched.buffer.trajs.get(payload[0])
                    owed = traj is not None and traj.state.name == "ENV"
                    assert not (owed and traj.turn == payload[1]), "stall, an env step owed"

    def final_accounting(self) -> None:
        """Every trajectory ever dispatched is trained, dropped, or live in the buffer in a
        state the world agrees with."""
        sched = self.sched
        live = sched.buffer.trajs
        assert not (self.trained & self.dropped)
        for tid in self.min_version:
            states = (tid in self.trained) + (tid in self.dropped) + (tid in live)
            assert states == 1, f"trajectory {tid} lost or duplicated"
        running = self.ledger.outstanding(PendingRequest)
        world_running = {op.command.tid: op.command.rid for op in running}
        for tid, traj in live.items():
            if traj.rid is not None:
                assert world_running.get(tid) == traj.rid, f"request of {tid} lost"
            if traj.state.name == "ENV":
                assert (tid, traj.turn) in self.env_pending
        b = sched.buffer
        assert b.admitted_groups == b.trained_groups + b.dropped_groups + b.live_groups


def make_world(cfg: RlschedConfig, seed: int, loss: float, max_losses: int) -> World:
    return World(cfg, seed, loss, max_losses)


@st.composite
def configs(draw, modes=("colocate", "disaggregated", "timeshare")) -> RlschedConfig:
    mode = draw(st.sampled_from(modes))
    tp = draw(st.sampled_from((1, 1, 2)))
    ranks = draw(st.integers(2, 6))
    n = ranks * tp
    group_size = draw(st.integers(1, 4))
    batch = group_size * draw(st.integers(1, 4))
    devices: dict = {"count": n, "gpus_per_rank": tp}
    if mode != "colocate":
        devices["train"] = tp * draw(st.integers(1, ranks - 1))
    shrink = draw(
        st.one_of(
            st.just({}),
            st.builds(lambda t: {"trigger": t}, st.integers(1, batch)),
            st.builds(lambda f: {"fraction": f}, st.sampled_from((0.25, 0.5, 1.0))),
        )
    )
    scheduler = {
        "mode": mode,
        "train_batch_size": batch,
        "group_size": group_size,
        "staleness": draw(st.integers(1 if mode == "timeshare" else 0, 2)),
        "shrink": shrink,
        "max_turns": draw(st.integers(1, 5)),
        "max_tokens": draw(st.sampled_from((24, 64, 400))),
        "env_timeout_s": draw(st.sampled_from((30.0, 30.0, 4.0))),
        "migration": draw(st.sampled_from(("reissue", "resume"))),
        "max_inflight_per_rank": draw(st.integers(1, 4)),
    }
    return RlschedConfig.model_validate({"devices": devices, "scheduler": scheduler})


@settings(max_examples=1500, **SETTINGS)
@given(
    cfg=configs(),
    seed=st.integers(0, 2**32 - 1),
    loss=st.sampled_from((0.0, 0.005, 0.02, 0.05)),
    max_losses=st.integers(0, 4),
)
def test_random_schedules_keep_invariants(cfg, seed, loss, max_losses):
    world = make_world(cfg, seed, loss, max_losses)
    world.run(max_events=3000, target_steps=6)
    world.final_accounting()


@settings(max_examples=500, **SETTINGS)
@given(cfg=configs(), seed=st.integers(0, 2**32 - 1))
def test_without_losses_training_progresses(cfg, seed):
    world = make_world(cfg, seed, 0.0, 0)
    world.run(max_events=6000, target_steps=4)
    world.final_accounting()
    assert world.train_ok >= 4, f"too slow: {world.events} events"
    assert world.sched.stats.train_steps == world.train_ok


@settings(max_examples=300, **SETTINGS)
@given(cfg=configs(modes=("timeshare", "colocate")), seed=st.integers(0, 2**32 - 1))
def test_worker_lost_mid_shrink_rolls_back_whole(cfg, seed):
    world = make_world(cfg, seed, 0.0, 0)
    world.feed(Started(0.0))
    # run until a shrink is in progress, then lose one of its devices
    while not world.sched.shrinking and world.pending and world.events < 3000:
        world.deliver(world.pending.pop(world.rng.randrange(len(world.pending))))
    if (
        world.sched.shrinking
        and len([d for d in range(world.n) if not world.lost[d]]) > 2 * world.tp
    ):
        before = world.sched.stats.shrinks_rolled_back
        world.max_losses = 1
        world.loss_rate = 1.0
        world.lose_device(prefer_shrinking=1.0)
        assert world.sched.stats.shrinks_rolled_back == before + 1
        world.loss_rate = 0.0
    world.run(max_events=world.events + 3000, target_steps=world.train_ok + 1, start=False)
    world.final_accounting()


@settings(max_examples=400, **SETTINGS)
@given(
    cfg=configs(),
    seed=st.integers(0, 2**32 - 1),
    loss=st.sampled_from((0.005, 0.02, 0.05)),
    recover=st.sampled_from((0.0, 0.01, 0.05)),
)
def test_recovered_workers_rejoin_and_training_goes_on(cfg, seed, loss, recover):
    """Losses down to one rank (the only training device too), each lost worker replaced at
    a random moment or when the world stalls: the core names every stall at once, a
    replaced rank rejoins, and training keeps going with every trajectory accounted for."""
    world = make_world(cfg, seed, loss, max_losses=6)
    world.min_alive_ranks = 1
    world.recover_rate = recover if recover else 1e-9  # 1e-9: replaced only on a stall
    world.run(max_events=8000, target_steps=4)
    world.final_accounting()
    assert world.train_ok >= 4, f"too slow: {world.events} events, {world.sched.stats}"
    s = world.sched.stats
    assert s.devices_recovered == world.recoveries <= s.devices_lost
    assert s.train_steps == world.train_ok


@settings(max_examples=300, **SETTINGS)
@given(
    n=st.integers(1, 12),
    tp=st.sampled_from((1, 2, 3)),
    ops=st.lists(
        st.tuples(
            st.sampled_from(("shrink", "expand", "offload", "rollout", "train", "finish", "lose")),
            st.lists(st.integers(-1, 13), max_size=4),
        ),
        max_size=25,
    ),
)
def test_pool_allocations_stay_valid(n, tp, ops):
    n = n * tp
    pool = GpuPool(n, tp)
    for op, targets in ops:
        try:
            if op == "shrink":
                ranks = pool.shrink_sampler(targets)
                assert ranks and all(
                    pool.mode(d) is DeviceMode.SHRINKING for r in ranks for d in pool.gpus_of(r)
                )
            elif op == "expand":
                ranks = pool.expand_sampler(targets)
                assert ranks and all(pool.mode(d) is DeviceMode.EXPANDING for d in targets)
            elif op == "train":
                pool.start_training(tuple(targets))
            else:
                for d in targets:
                    {
                        "offload": pool.mark_offloaded,
                        "rollout": pool.mark_rollout,
                        "finish": pool.finish_training,
                        "lose": pool.mark_lost,
                    }[op](d)
        except (ValueError, IndexError):
            pass
        pool.check()
        assert sum(pool.count(m) for m in DeviceMode) == n


def test_trajectory_moves_follow_the_table_and_take_every_edge(monkeypatch):
    """Every state change of every trajectory, recorded at `Trajectory.move` (which the real
    method then carries out) over worlds with losses, session timeouts and every mode: each is
    an edge of `Trajectory.TRANSITIONS`, and each edge of the table is taken (a table wider than
    the lifecycle would allow a move no world makes)."""
    taken: Counter = Counter()
    move = Trajectory.move

    def recording_move(traj: Trajectory, target: TrajState) -> None:
        taken[traj.state, target] += 1
        move(traj, target)

    monkeypatch.setattr(Trajectory, "move", recording_move)
    for seed in range(60):
        mode = ("colocate", "disaggregated", "timeshare")[seed % 3]
        devices = {"count": 4, "gpus_per_rank": 1}
        if mode != "colocate":
            devices["train"] = 2
        scheduler = {
            "mode": mode,
            "train_batch_size": 4,
            "group_size": 2,
            "staleness": 1,
            "max_turns": 3,
            "max_tokens": 64,
            "env_timeout_s": 4.0 if seed % 2 else 30.0,
            "migration": "resume" if seed % 4 < 2 else "reissue",
            "max_inflight_per_rank": 2,
        }
        cfg = RlschedConfig.model_validate({"devices": devices, "scheduler": scheduler})
        world = make_world(cfg, seed, loss=0.02, max_losses=3)
        world.run(max_events=3000, target_steps=6)
        world.final_accounting()
    edges = {(a, b) for a, targets in Trajectory.TRANSITIONS.items() for b in targets}
    assert set(taken) <= edges, set(taken) - edges
    assert set(taken) == edges, (
        f"never taken: {sorted((a.name, b.name) for a, b in edges - set(taken))}"
    )


def test_a_move_the_table_does_not_list_is_refused():
    """A completed trajectory cannot wait again, a dropped one never moves: ValueError naming
    both states, and the state is left as it was."""
    traj = Trajectory(tid=7, gid=0, prompt_tokens=4, max_tokens=64, context_tokens=4)
    traj.move(TrajState.RUNNING)
    traj.move(TrajState.ENV)
    traj.move(TrajState.DONE)
    with pytest.raises(ValueError, match="VAL_STATE_TRANSITION") as info:
        traj.move(TrajState.QUEUED)
    assert "DONE" in str(info.value) and "QUEUED" in str(info.value)
    assert traj.state is TrajState.DONE
    traj.move(TrajState.DROPPED)
    for target in TrajState:
        with pytest.raises(ValueError, match="VAL_STATE_TRANSITION"):
            traj.move(target)
    assert traj.state is TrajState.DROPPED
