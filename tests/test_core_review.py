"""Review tests of the scheduler core's semantics, independent of tests/test_core_properties.py.

The world below keeps its own model of every trajectory (context, kept partial tokens, and the
policy version of the oldest token kept in each turn) and checks the core's commands against
it, instead of reading the core's records. It also plays the shell the way the vocabulary
allows but the first property world does not: engines abort requests on their own (a legal
`RequestAborted` answer, e.g. vLLM's `pause_generation(mode="abort")`), weight syncs land on
ranks in any order (so rank versions differ and are not monotonic across dispatches), nothing
on a lost GPU answers (a training step whose every GPU is lost never sends `TrainingDone`),
and events may be delivered twice.

The world also models the idle environment session (design/rlsched_core.md 0.2.0): a
trajectory whose session reached its deadline (`env_timeout_s` after its last environment step
finished) is never dispatched nor given an environment step again; it ends flagged, keeping a
turn that finished but dropping one that was interrupted; the world sometimes enforces the
deadline itself by aborting the request.

Targeted tests pin down the cases the review found or checked by hand: a lost training set,
resume versus reissue migration, the environment timeout, the shrink trigger, staleness 0,
losing every GPU, late duplicate device answers and prompt loads (operation ids), the idle
session timeout, rejected events, and the initial layout command.
"""

from __future__ import annotations

import random
from collections import Counter, deque

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlsched.config import RlschedConfig
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
)
from rlsched.core.machine import Scheduler
from rlsched.core.shell import Ledger, PendingRequest, Shell, handles
from rlsched.pool import DeviceMode
from tests.traj_moves import MoveWatch

SETTINGS = {
    "deadline": None,
    "derandomize": True,
    "database": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
}


def make_cfg(mode: str = "timeshare", count: int = 4, train=None, tp: int = 1, **sch):
    devices = {"count": count, "gpus_per_rank": tp}
    if train is not None:
        devices["train"] = train
    scheduler = {
        "mode": mode,
        "train_batch_size": 2,
        "group_size": 1,
        "staleness": 1,
        "max_turns": 2,
        "max_tokens": 100,
        "env_timeout_s": 30.0,
        "migration": "reissue",
        "max_inflight_per_rank": 4,
    }
    scheduler.update(sch)
    return RlschedConfig.model_validate({"devices": devices, "scheduler": scheduler})


def snapshot(sched: Scheduler) -> tuple:
    """What an ignored event must not change."""
    stats = {k: getattr(sched.stats, k) for k in sched.stats.__slots__}
    stats.pop("events")
    stats.pop("ignored_events")
    b = sched.buffer
    return (
        tuple(sched.pool.mode(d) for d in range(sched.pool.num_gpus)),
        sched.version,
        sched.step,
        sched.in_flight,
        sched.training,
        sched.shrinking,
        (b.completed, b.admitted_groups, b.trained_groups, b.dropped_groups, tuple(b.ready)),
        tuple(sorted(stats.items())),
    )


class ReviewWorld(Shell):
    """A random shell with its own model of every trajectory (its running requests are
    `PendingRequest` records in its ledger)."""

    def __init__(
        self,
        cfg: RlschedConfig,
        seed: int,
        *,
        loss_rate: float = 0.0,
        max_losses: int = 0,
        own_aborts: float = 0.0,
        duplicates: float = 0.0,
        hit_training: float = 0.5,
        slow_sync: float = 0.0,
    ) -> None:
        self.cfg = cfg
        sch = cfg.scheduler
        self.S = sch.staleness
        self.resume = sch.migration == "resume"
        self.max_tokens = sch.max_tokens
        self.group_size = sch.group_size
        self.rng = random.Random(seed)
        self.loss_rate, self.max_losses = loss_rate, max_losses
        self.own_aborts, self.duplicates = own_aborts, duplicates
        self.hit_training = hit_training
        self.slow_sync = slow_sync  # weight syncs lag: ranks hold different versions longer
        self.sched = Scheduler(cfg)
        self.moves = MoveWatch()
        self.tp = cfg.devices.gpus_per_rank
        self.n = cfg.num_devices
        self.time = 0.0
        self.pending: list[tuple] = []
        self.lost: set[int] = set()
        self.awake: set[int] = set()  # from the InitialLayout command
        self.offloading: set[int] = set()
        self.training_gpus: set[int] = set()
        self.prompts: list[int] = []
        self.model: dict[int, dict] = {}
        self.ledger = Ledger()  # running requests, until answered or their rank is lost
        self.dropped: set[int] = set()
        self.trained: set[int] = set()
        self.steps: dict[int, dict] = {}
        self.expect_env: set[tuple[int, int]] = set()
        self.kept_partials = 0  # partial tokens of accepted aborts (kept or discarded)
        self.train_ok = 0
        self.events = 0
        self.losses = 0
        self.shrink_completed: list[int] = []  # buffer.completed when each shrink began
        self.shrink_ready: list[int] = []

    # ---------------------------------------------------------------- driving

    def run(self, max_events: int, target_steps: int) -> None:
        self.feed(Started(0.0))
        while self.events < max_events and self.train_ok < target_steps:
            rate = self.loss_rate * (4 if self.training_gpus else 1)  # steps are short
            if self.losses < self.max_losses and self.rng.random() < rate and self.lose():
                continue
            assert self.pending, f"deadlock after {self.events} events: {self.sched.stats}"
            i = self.rng.randrange(len(self.pending))
            for _ in range(3):
                if self.pending[i][0] != "sync" or self.rng.random() >= self.slow_sync:
                    break
                i = self.rng.randrange(len(self.pending))
            self.pending[i], self.pending[-1] = self.pending[-1], self.pending[i]
            self.deliver(self.pending.pop())

    def feed(self, event, expect_env: set | None = None) -> list:
        self.events += 1
        shrinks = self.sched.stats.shrinks
        self.expect_env = set(expect_env or ())
        out = self.sched.handle(event)
        if self.sched.stats.shrinks > shrinks:
            self.shrink_completed.append(self.sched.buffer.completed)
            self.shrink_ready.append(len(self.sched.buffer.ready))
        for c in out:
            self.execute(c)
        assert not self.expect_env, f"turns closed without an environment step: {self.expect_env}"
        self.moves.check(self.sched.buffer)  # only moves along Trajectory.TRANSITIONS
        self.sched.check_invariants()
        if (
            self.duplicates
            and self.rng.random() < self.duplicates
        ):
            before = snapshot(self.sched)
            ignored = self.sched.stats.ignored_events
            assert self.sched.handle(event) == [], f"duplicate {event} caused commands"
            assert snapshot(self.sched) == before, f"duplicate {event} changed the state"
            assert self.sched.stats.ignored_events in (ignored, ignored + 1)
        return out

    def deliver(self, item: tuple) -> None:
        self.time += self.rng.choice((0.0, 0.5, 1.0))
        kind = item[0]
        if kind == "prompts":
            _, load_id, count = item
            lens = tuple(self.rng.randint(1, min(20, self.max_tokens - 1)) for _ in range(count))
            self.prompts.extend(lens)
            self.feed(PromptsLoaded(self.time, load_id, lens))
        elif kind == "answer":
            _, rid, aborted, tokens = item
            if not aborted and self.rng.random() < self.own_aborts:
                aborted, tokens = True, self.rng.randint(0, tokens)
            op = self.ledger.get(PendingRequest, rid)
            expired = not aborted and op is not None and self.expired(op.command.tid)
            if expired and self.rng.random() < 0.5:  # the shell enforces Dispatch.env_deadline
                aborted, tokens = True, self.rng.randint(0, tokens)
            self.answer(rid, aborted, tokens)
        elif kind == "env":
            _, tid, turn, obs, done, timed_out = item
            m = self.model[tid]
            if tid not in self.dropped:
                assert m["turn"] == turn and not m["done"]
                m["turn"] += 1
                if timed_out:
                    m["done"] = True
                else:
                    m["context"] += obs
                    if (
                        done
                        or m["turn"] >= self.cfg.scheduler.max_turns
                        or m["context"] >= self.max_tokens
                    ):
                        m["done"] = True
                    else:
                        m["deadline"] = self.time + self.cfg.scheduler.env_timeout_s
                m["timed_out"] = timed_out
            event = (
                EnvStepTimedOut(self.time, tid, turn)
                if timed_out
                else EnvStepDone(self.time, tid, turn, obs, done)
            )
            self.feed(event)
        elif kind == "offload":
            _, d, op_id = item
            if d not in self.lost:
                self.offloading.discard(d)
                self.awake.discard(d)
            self.feed(OffloadDone(self.time, d, op_id))
        elif kind == "reload":
            _, d, op_id = item
            if d not in self.lost:
                self.awake.add(d)
            self.feed(ReloadDone(self.time, d, op_id))
        elif kind == "sync":
            self.feed(WeightsSynced(self.time, item[1], item[2]))
        elif kind == "train":
            _, step, version = item
            info = self.steps[step]
            info["done"] = True
            if info["dead"]:  # a late answer from a step nobody survived: must be ignored
                before = self.sched.stats.ignored_events
                self.feed(TrainingDone(self.time, step, version + 1, self.rng.random() < 0.5))
                assert self.sched.stats.ignored_events > before
                return
            self.training_gpus -= set(info["devices"])
            ok = not info["failed"]
            if ok:
                assert not (info["tids"] & self.trained), "trajectory trained twice"
                self.trained |= info["tids"]
                self.train_ok += 1
            self.feed(TrainingDone(self.time, step, version + 1, ok or self.rng.random() < 0.3))
        else:  # pragma: no cover
            raise AssertionError(kind)

    def answer(self, rid: int, aborted: bool, tokens: int) -> None:
        op = self.ledger.close(PendingRequest, rid)
        req = op.command if op is not None else None
        accepted = req is not None and req.tid not in self.dropped
        closes: set = set()
        if accepted and self.expired(req.tid):
            # the idle session timed out: a finished turn is kept, an interrupted one dropped
            m = self.model[req.tid]
            if aborted:
                self.kept_partials += tokens
                m["resume"], m["contrib"] = 0, []
            else:
                self.close_turn(m, tokens, req.version)
            m["done"] = m["timed_out"] = True
        elif accepted:
            m = self.model[req.tid]
            if aborted:
                self.kept_partials += tokens
                if self.resume and tokens:
                    m["resume"] += tokens
                    m["contrib"].append(req.version)
                if m["context"] + m["resume"] >= self.max_tokens:
                    closes.add(self.close_turn(m, 0, req.version))
            else:
                closes.add(self.close_turn(m, tokens, req.version))
        event = (RequestAborted if aborted else RequestFinished)(self.time, rid, tokens)
        self.feed(event, closes)

    def expired(self, tid: int) -> bool:
        """The model's view: the trajectory's idle environment session reached its deadline."""
        deadline = self.model[tid]["deadline"]
        return deadline is not None and self.time >= deadline

    def close_turn(self, m: dict, new_tokens: int, version: int) -> tuple[int, int]:
        """The model's view of a closed turn: its version is that of the oldest kept token."""
        m["versions"].append(min([version, *m["contrib"]]))
        m["context"] += m["resume"] + new_tokens
        m["resume"] = 0
        m["contrib"] = []
        return (m["tid"], m["turn"])

    def lose(self) -> bool:
        alive = sorted(d for d in range(self.n) if d not in self.lost)
        if len(alive) <= 2 * self.tp:
            return False
        training = [d for d in alive if d in self.training_gpus]
        shrinking = [d for d in self.sched.shrinking if d not in self.lost]
        roll = self.rng.random()
        if training and roll < self.hit_training:
            device = self.rng.choice(training)
        elif shrinking and roll < max(0.8, self.hit_training):
            device = self.rng.choice(shrinking)
        else:
            device = self.rng.choice(alive)
        rank = device // self.tp
        gpus = set(range(rank * self.tp, rank * self.tp + self.tp))
        self.losses += 1
        self.lost |= gpus
        self.awake -= gpus
        self.offloading -= gpus
        dead = [op for op in self.ledger.outstanding(PendingRequest) if op.command.rank == rank]
        dead_rids = {op.command.rid for op in dead}
        for op in dead:
            self.ledger.forget(op)
            tid = op.command.tid
            if tid not in self.dropped and self.expired(tid):  # requeued: its session is gone
                m = self.model[tid]
                m["resume"], m["contrib"] = 0, []
                m["done"] = m["timed_out"] = True
        dead_steps = set()
        for step, info in self.steps.items():
            if not info["done"] and gpus & set(info["devices"]):
                info["failed"] = True
                if set(info["devices"]) <= self.lost:
                    info["dead"] = True
                    dead_steps.add(step)
        # nothing on a lost GPU answers; a few answers arrive late anyway
        kept = []
        for item in self.pending:
            gone = (
                (item[0] == "answer" and item[1] in dead_rids)
                or (item[0] in ("offload", "reload", "sync") and item[1] in gpus)
                or (item[0] == "train" and item[1] in dead_steps)
            )
            if not gone or self.rng.random() < 0.3:
                kept.append(item)
        self.pending = kept
        self.feed(WorkerLost(self.time, device))
        return True

    # ---------------------------------------------------------------- commands

    @handles(InitialLayout)
    def layout(self, c: InitialLayout) -> None:
        assert not self.awake and sorted(c.rollout + c.offloaded) == list(range(self.n))
        self.awake = set(c.rollout)

    @handles(LoadPrompts)
    def load_prompts(self, c: LoadPrompts) -> None:
        self.pending.append(("prompts", c.load_id, c.count))

    def running(self) -> list[Dispatch]:
        return [op.command for op in self.ledger.outstanding(PendingRequest)]

    @handles(Dispatch)
    def dispatch(self, c: Dispatch) -> None:
        gpus = set(range(c.rank * self.tp, c.rank * self.tp + self.tp))
        assert gpus <= self.awake and not gpus & (self.lost | self.offloading)
        assert not gpus & self.training_gpus
        assert c.version >= self.sched.version - self.S, "request started too stale"
        m = self.model.setdefault(
            c.tid,
            {
                "tid": c.tid,
                "turn": 0,
                "context": self.prompts[c.gid],
                "resume": 0,
                "contrib": [],
                "versions": [],
                "done": False,
                "deadline": None,
                "timed_out": False,
            },
        )
        assert c.gid == c.tid // self.group_size
        assert not m["done"] and c.tid not in self.dropped
        assert all(r.tid != c.tid for r in self.running()), "trajectory runs twice"
        assert c.turn == m["turn"], "turn out of order"
        assert (c.context_tokens, c.resume_tokens) == (m["context"], m["resume"]), (
            "token accounting diverged from the shell's model"
        )
        if not self.resume:
            assert c.resume_tokens == 0, "reissue must discard partial tokens"
        assert c.max_new_tokens == self.max_tokens - m["context"] - m["resume"] >= 1
        assert c.env_deadline == m["deadline"], "session deadline diverged from the model"
        assert not self.expired(c.tid), "dispatched after its environment session timed out"
        self.ledger.open(PendingRequest(self.time, c))
        self.pending.append(("answer", c.rid, False, self.rng.randint(0, c.max_new_tokens)))

    @handles(Abort)
    def abort(self, c: Abort) -> None:
        for rid in c.rids:
            assert self.ledger.get(PendingRequest, rid).command.rank == c.rank
            if self.rng.random() < 0.7:
                for i, item in enumerate(self.pending):
                    if item[0] == "answer" and item[1] == rid:
                        self.pending[i] = ("answer", rid, True, self.rng.randint(0, item[3]))
                        break

    @handles(Offload)
    def offload(self, c: Offload) -> None:
        rank = c.devices[0] // self.tp
        assert not any(r.rank == rank for r in self.running()), "undrained offload"
        for d in c.devices:
            assert d in self.awake and d not in self.offloading
            self.offloading.add(d)
            self.pending.append(("offload", d, c.op_id))

    @handles(Reload)
    def reload(self, c: Reload) -> None:
        for d in c.devices:
            assert d not in self.awake and d not in self.lost
            self.pending.append(("reload", d, c.op_id))

    @handles(SyncWeights)
    def sync(self, c: SyncWeights) -> None:
        assert c.version == self.sched.version
        for d in c.devices:
            self.pending.append(("sync", d, c.version))

    @handles(Train)
    def train(self, c: Train) -> None:
        assert c.version == self.sched.version
        for d in c.devices:
            assert d not in self.awake and d not in self.offloading and d not in self.lost
        busy = set().union(
            *(i["tids"] for i in self.steps.values() if not i["done"] and not i["dead"])
        )
        tids = {s.tid for s in c.samples}
        assert len(tids) == self.cfg.scheduler.train_batch_size
        assert set(Counter(s.gid for s in c.samples).values()) == {self.group_size}
        assert not tids & (self.trained | self.dropped | busy)
        for s in c.samples:
            m = self.model[s.tid]
            if not m["done"]:  # its session timed out while it waited in the queue
                assert s.timed_out and self.expired(s.tid), f"{s.tid} trained unfinished"
                assert all(r.tid != s.tid for r in self.running())
                m["done"] = m["timed_out"] = True
            assert s.timed_out == m["timed_out"], f"timed_out flag of {s.tid}"
            assert s.turn_versions == tuple(m["versions"]), (
                f"turn versions of {s.tid}: core {s.turn_versions}, oldest kept {m['versions']}"
            )
            assert all(c.version - v <= self.S for v in m["versions"]), "staleness exceeded"
        self.training_gpus |= set(c.devices)
        self.steps[c.step] = {
            "devices": c.devices,
            "tids": tids,
            "failed": False,
            "dead": False,
            "done": False,
        }
        self.pending.append(("train", c.step, c.version))

    @handles(DropStale)
    def drop_stale(self, c: DropStale) -> None:
        assert not set(c.tids) & self.trained
        self.dropped |= set(c.tids)

    @handles(StartEnvStep)
    def start_env_step(self, c: StartEnvStep) -> None:
        key = (c.tid, c.turn)
        assert key in self.expect_env, f"unexpected environment step {key}"
        self.expect_env.discard(key)
        assert c.deadline == self.time + self.cfg.scheduler.env_timeout_s
        roll = self.rng.random()
        obs = self.rng.randint(0, 8)
        self.pending.append(("env", c.tid, c.turn, obs, roll > 0.6, roll < 0.05))

    def final_accounting(self) -> None:
        live = self.sched.buffer.trajs
        for tid in self.model:
            assert (tid in self.trained) + (tid in self.dropped) + (tid in live) == 1, tid
        s = self.sched.stats
        assert s.resumed_tokens + s.discarded_tokens == self.kept_partials
        if not self.resume:
            assert s.resumed_tokens == 0


@st.composite
def configs(draw, modes=("colocate", "disaggregated", "timeshare"), staleness=None):
    mode = draw(st.sampled_from(modes))
    tp = draw(st.sampled_from((1, 1, 2)))
    ranks = draw(st.integers(2, 5))
    group_size = draw(st.integers(1, 3))
    batch = group_size * draw(st.integers(1, 3))
    devices: dict = {"count": ranks * tp, "gpus_per_rank": tp}
    if mode != "colocate":
        devices["train"] = tp * draw(st.integers(1, ranks - 1))
    low = 1 if mode == "timeshare" else 0
    scheduler = {
        "mode": mode,
        "train_batch_size": batch,
        "group_size": group_size,
        "staleness": draw(st.integers(low, 2)) if staleness is None else staleness,
        "shrink": draw(
            st.one_of(
                st.just({}),
                st.builds(lambda t: {"trigger": t}, st.integers(1, batch)),
                st.builds(lambda f: {"fraction": f}, st.sampled_from((0.3, 0.5, 1.0))),
            )
        ),
        "max_turns": draw(st.integers(1, 4)),
        "max_tokens": draw(st.sampled_from((16, 48, 300))),
        "env_timeout_s": 30.0,
        "migration": draw(st.sampled_from(("reissue", "resume"))),
        "max_inflight_per_rank": draw(st.integers(1, 3)),
    }
    return RlschedConfig.model_validate({"devices": devices, "scheduler": scheduler})


def check_trigger(world: ReviewWorld) -> None:
    """Every shrink began once the mode's condition held."""
    cfg = world.cfg
    if cfg.scheduler.mode == "timeshare":
        assert all(c >= cfg.shrink_trigger for c in world.shrink_completed)
    else:  # colocate, and disaggregated's adopted rank: a full batch is ready
        assert all(r >= cfg.groups_per_batch for r in world.shrink_ready)


# ------------------------------------------------------------------ properties


@settings(max_examples=700, **SETTINGS)
@given(
    cfg=configs(),
    seed=st.integers(0, 2**32 - 1),
    loss=st.sampled_from((0.0, 0.02, 0.05, 0.1)),
    max_losses=st.integers(0, 4),
    own_aborts=st.sampled_from((0.0, 0.15, 0.4)),
    hit_training=st.sampled_from((0.5, 0.95)),
    slow_sync=st.sampled_from((0.0, 0.9)),
)
def test_model_agrees_on_tokens_versions_and_liveness(
    cfg, seed, loss, max_losses, own_aborts, hit_training, slow_sync
):
    """Token counts and per-turn versions match an independent model under migration (resume
    keeps partial tokens, reissue discards them; a turn's version is its oldest kept token),
    per-turn staleness stays within the bound, shrinks respect the trigger, and training keeps
    going however GPUs are lost, as long as two ranks are left."""
    world = ReviewWorld(
        cfg,
        seed,
        loss_rate=loss,
        max_losses=max_losses,
        own_aborts=own_aborts,
        hit_training=hit_training,
        slow_sync=slow_sync,
    )
    world.run(max_events=3000, target_steps=6)
    assert world.train_ok >= 6, f"no progress in {world.events} events: {world.sched.stats}"
    world.final_accounting()
    check_trigger(world)


@settings(max_examples=120, **SETTINGS)
@given(cfg=configs(), seed=st.integers(0, 2**32 - 1), max_losses=st.integers(0, 2))
def test_duplicated_events_are_ignored(cfg, seed, max_losses):
    """Every event delivered twice in a row: the copy causes no command and changes nothing
    (the pump is a fixpoint, and every handler recognises an answer it already applied)."""
    world = ReviewWorld(
        cfg, seed, loss_rate=0.02, max_losses=max_losses, own_aborts=0.1, duplicates=1.0
    )
    world.run(max_events=1500, target_steps=2)
    world.final_accounting()


@settings(max_examples=80, **SETTINGS)
@given(
    cfg=configs(modes=("colocate", "disaggregated"), staleness=0), seed=st.integers(0, 2**32 - 1)
)
def test_staleness_zero_is_synchronous_and_live(cfg, seed):
    """Bound 0: every turn of every trained trajectory was generated by exactly the weights
    being trained, and training still progresses (no deadlock in either baseline)."""
    world = ReviewWorld(cfg, seed, own_aborts=0.1)
    trains: list[Train] = []
    execute = world.execute

    def spy(c):
        if isinstance(c, Train):
            trains.append(c)
        execute(c)

    world.execute = spy
    world.run(max_events=2500, target_steps=3)
    assert world.train_ok >= 3
    assert trains and all(set(s.turn_versions) == {t.version} for t in trains for s in t.samples)


# ------------------------------------------------------------------ targeted tests


class FifoShell(Shell):
    """Answers every command at once, in order; the caller may hold events back."""

    def __init__(self, cfg: RlschedConfig, tokens: int = 5) -> None:
        self.sched = Scheduler(cfg)
        self.t = 0.0
        self.pending: deque = deque()
        self.log: list = []
        self.tokens = tokens

    def feed(self, event) -> list:
        out = self.sched.handle(event)
        self.log.extend(out)
        for c in out:
            self.execute(c)
        self.sched.check_invariants()
        return out

    @handles(LoadPrompts)
    def load_prompts(self, c: LoadPrompts) -> None:
        self.pending.append(lambda t: PromptsLoaded(t, c.load_id, (10,) * c.count))

    @handles(Dispatch)
    def dispatch(self, c: Dispatch) -> None:
        k = min(self.tokens, c.max_new_tokens)
        self.pending.append(lambda t: RequestFinished(t, c.rid, k))

    @handles(Offload)
    def offload(self, c: Offload) -> None:
        self.pending.extend(lambda t, d=d: OffloadDone(t, d, c.op_id) for d in c.devices)

    @handles(Reload)
    def reload(self, c: Reload) -> None:
        self.pending.extend(lambda t, d=d: ReloadDone(t, d, c.op_id) for d in c.devices)

    @handles(SyncWeights)
    def sync(self, c: SyncWeights) -> None:
        self.pending.extend(lambda t, d=d: WeightsSynced(t, d, c.version) for d in c.devices)

    @handles(Train)
    def train(self, c: Train) -> None:
        self.pending.append(lambda t: TrainingDone(t, c.step, c.version + 1, True))

    @handles(StartEnvStep)
    def start_env_step(self, c: StartEnvStep) -> None:
        self.pending.append(lambda t: EnvStepDone(t, c.tid, c.turn, 3, False))

    @handles(Abort, DropStale, InitialLayout)
    def nothing(self, c: Abort | DropStale | InitialLayout) -> None:
        """Requests answer as planned (a finish wins the race); nothing else answers."""

    def step(self) -> list:
        self.t += 0.25
        return self.feed(self.pending.popleft()(self.t))

    def run_until(self, pred, limit: int = 4000) -> bool:
        for _ in range(limit):
            if pred() or not self.pending:
                break
            self.step()
        return pred()

    def hold(self, kind: type) -> None:
        """Drop pending answers of `kind` (what a lost GPU would have sent)."""
        self.pending = deque(f for f in self.pending if not isinstance(f(self.t), kind))


@pytest.mark.parametrize(
    "mode,count,train,tp",
    [("timeshare", 4, 1, 1), ("disaggregated", 4, 1, 1), ("timeshare", 6, 2, 2)],
)
def test_losing_every_gpu_of_a_training_step_ends_it(mode, count, train, tp):
    """WorkerLost's contract: nothing on a lost GPU reports. When the whole training set of a
    step is lost, the step must end at once (batch back in the ready FIFO, step counted as
    failed); before the fix the machine waited forever for that step's TrainingDone."""
    shell = FifoShell(make_cfg(mode, count=count, train=train, tp=tp, max_turns=1))
    shell.feed(Started(0.0))
    assert shell.run_until(lambda: shell.sched.training)
    op = shell.sched._training
    shell.hold(TrainingDone)
    for d in op.devices[::tp]:
        shell.feed(WorkerLost(shell.t, d))
    sched = shell.sched
    assert not sched.training, "step waits for a TrainingDone nobody can send"
    assert sched.stats.train_steps_failed == 1
    assert len(sched.buffer.ready) >= sched.cfg.groups_per_batch
    assert all(sched.pool.mode(d) is DeviceMode.LOST for d in op.devices)
    # a late answer from the dead step changes nothing
    before = snapshot(sched)
    assert shell.feed(TrainingDone(shell.t, op.step, op.version + 1, True)) == []
    assert snapshot(sched) == before
    # training goes on elsewhere (an adopted rank) with the returned batch
    assert shell.run_until(lambda: sched.stats.train_steps >= 1)
    assert sched.version == 1


def test_losing_part_of_a_training_step_waits_for_the_survivors():
    """With survivors, the step ends when they report (their collective fails), not before."""
    shell = FifoShell(make_cfg("timeshare", count=4, train=2, max_turns=1))
    shell.feed(Started(0.0))
    assert shell.run_until(lambda: shell.sched.training)
    op = shell.sched._training
    shell.hold(TrainingDone)
    shell.feed(WorkerLost(shell.t, op.devices[0]))
    assert shell.sched.training and shell.sched.stats.train_steps_failed == 0
    out = shell.feed(TrainingDone(shell.t, op.step, op.version + 1, False))
    assert shell.sched.stats.train_steps_failed == 1
    # the batch is retried at once on the surviving GPU
    (retry,) = [c for c in out if isinstance(c, Train)]
    assert retry.step == op.step + 1 and retry.devices == op.devices[1:]
    assert retry.version == op.version
    assert {s.tid for s in retry.samples} == {t for g in op.batch for t in g.tids}


def _migrate_across_versions(migration: str):
    """Turn 0 of trajectory 2 is generated in three dispatches: on a rank at version 0
    (aborted after 5 tokens), then twice on the same rank once synced to version 1 (aborted
    after 5, then finished with 5). A migrated turn never goes back to older weights than its
    group already ran with (design/rlsched_routing.md 0.2.0), so the versions only rise."""
    cfg = make_cfg(
        "disaggregated",
        count=3,
        train=1,
        staleness=2,
        migration=migration,
        train_batch_size=1,
        max_turns=1,
        max_tokens=1000,
        max_inflight_per_rank=1,
    )
    s = Scheduler(cfg)

    def dispatched(event) -> list[Dispatch]:
        return [c for c in s.handle(event) if isinstance(c, Dispatch)]

    s.handle(Started(0.0))
    s.handle(PromptsLoaded(0.1, 0, (10, 10, 10)))  # rid0: tid0 on rank0, rid1: tid1 on rank1
    (d0,) = dispatched(RequestFinished(0.2, 0, 5))  # rid2: tid2 on rank0
    assert (d0.tid, d0.rank, d0.version) == (2, 0, 0)
    (train,) = [c for c in s.handle(EnvStepDone(0.3, 0, 0, 0, True)) if isinstance(c, Train)]
    s.handle(TrainingDone(0.4, train.step, 1, True))
    s.handle(WeightsSynced(0.5, 0, 1))  # rank0 at version 1, rank1 still at 0
    (d1,) = dispatched(RequestAborted(0.6, d0.rid, 5))
    assert (d1.tid, d1.rank, d1.version) == (2, 0, 1)
    (d2,) = dispatched(RequestAborted(0.7, d1.rid, 5))
    assert (d2.tid, d2.rank, d2.version) == (2, 0, 1)
    out = s.handle(RequestFinished(0.8, d2.rid, 5))
    assert [c for c in out if isinstance(c, StartEnvStep)]
    s.check_invariants()
    return s, d1, d2


def test_resume_keeps_partials_and_records_the_oldest_kept_version():
    s, d1, d2 = _migrate_across_versions("resume")
    assert (d1.context_tokens, d1.resume_tokens, d1.max_new_tokens) == (10, 5, 985)
    assert (d2.context_tokens, d2.resume_tokens, d2.max_new_tokens) == (10, 10, 980)
    traj = s.buffer.trajs[2]
    assert traj.context_tokens == 25 and traj.resume_tokens == 0
    assert traj.turn_versions == [0], "the turn holds tokens of version 0"
    assert s.stats.resumed_tokens == 10 and s.stats.discarded_tokens == 0
    assert s.buffer.groups[2].min_version == 0


def test_reissue_discards_partials_and_records_the_finishing_version():
    s, d1, d2 = _migrate_across_versions("reissue")
    assert (d1.resume_tokens, d2.resume_tokens) == (0, 0)
    assert d1.max_new_tokens == d2.max_new_tokens == 990
    traj = s.buffer.trajs[2]
    assert traj.context_tokens == 15
    assert traj.turn_versions == [1]
    assert s.stats.discarded_tokens == 10 and s.stats.resumed_tokens == 0


def test_resume_that_fills_the_budget_closes_the_turn():
    """Kept partial tokens that use the whole budget end the turn without another dispatch."""
    cfg = make_cfg("colocate", count=2, migration="resume", max_tokens=30, max_turns=3)
    s = Scheduler(cfg)
    s.handle(Started(0.0))
    out = s.handle(PromptsLoaded(0.1, 0, (10, 10)))
    d = next(c for c in out if isinstance(c, Dispatch))
    assert d.max_new_tokens == 20
    out = s.handle(RequestAborted(0.2, d.rid, 20))
    assert [c for c in out if isinstance(c, Dispatch) and c.tid == d.tid] == []
    (env,) = [c for c in out if isinstance(c, StartEnvStep)]
    assert (env.tid, env.turn) == (d.tid, 0)
    out = s.handle(EnvStepDone(0.3, d.tid, 0, 0, False))
    assert s.buffer.trajs[d.tid].state.name == "DONE", "a full context ends the trajectory"


def test_env_timeout_ends_the_trajectory_flagged_and_late_answers_are_ignored():
    cfg = make_cfg("colocate", count=2, train_batch_size=2, max_turns=5, env_timeout_s=7.5)
    s = Scheduler(cfg)
    s.handle(Started(0.0))
    s.handle(PromptsLoaded(1.0, 0, (10, 10)))
    (env,) = s.handle(RequestFinished(2.0, 0, 5))
    assert isinstance(env, StartEnvStep) and env.deadline == 2.0 + 7.5
    # a timeout for a turn that is not waiting on its environment is ignored
    before = s.stats.ignored_events
    assert s.handle(EnvStepTimedOut(3.0, 1, 0)) == []
    assert s.handle(EnvStepTimedOut(3.0, 0, 1)) == []
    assert s.stats.ignored_events == before + 2
    assert s.handle(EnvStepTimedOut(9.5, 0, 0)) == []  # ends tid 0; its group is complete
    assert s.stats.env_timeouts == 1
    assert s.buffer.trajs[0].state.name == "DONE" and s.buffer.trajs[0].timed_out
    before = snapshot(s)
    assert s.handle(EnvStepDone(10.0, 0, 0, 3, False)) == []  # the environment answers late
    assert snapshot(s) == before
    (_env1,) = s.handle(RequestFinished(11.0, 1, 5))
    out = s.handle(EnvStepDone(12.0, 1, 0, 3, True))
    offloads = [c for c in out if isinstance(c, Offload)]
    assert [c.devices for c in offloads] == [(0,), (1,)], "colocate shrinks"
    for c in offloads:
        out = s.handle(OffloadDone(13.0, c.devices[0], c.op_id))
    (train,) = [c for c in out if isinstance(c, Train)]
    flags = {smp.tid: (smp.timed_out, smp.turn_versions) for smp in train.samples}
    assert flags == {0: (True, (0,)), 1: (False, (0,))}


def test_shrink_waits_for_the_trigger():
    """Timeshare shrinks on the event that completes the trigger-th trajectory, not before."""
    cfg = make_cfg(
        "timeshare", count=4, train=2, train_batch_size=4, max_turns=1, shrink={"trigger": 3}
    )
    shell = FifoShell(cfg)
    shell.feed(Started(0.0))
    while shell.sched.stats.shrinks == 0:
        completed = shell.sched.buffer.completed
        out = shell.step()
        if any(isinstance(c, (Offload, Abort)) for c in out) or shell.sched.stats.shrinks:
            assert completed < 3 <= shell.sched.buffer.completed
    assert shell.sched.shrinking == (2, 3)


@pytest.mark.parametrize("mode", ["colocate", "disaggregated", "timeshare"])
def test_losing_every_gpu_leaves_a_quiet_consistent_machine(mode):
    """After every GPU is lost nothing is dispatched, trained, offloaded or synced any more,
    nothing is left in flight, and late answers from the dead GPUs are ignored."""
    cfg = make_cfg(mode, count=6, train=None if mode == "colocate" else 2, tp=2, max_turns=3)
    rng = random.Random(7)
    shell = FifoShell(cfg)
    shell.feed(Started(0.0))
    shell.run_until(lambda: shell.sched.stats.train_steps >= 1)
    late = list(shell.pending)
    for device in (5, 0, 3):
        for _ in range(rng.randint(0, 6)):
            if shell.pending:
                shell.step()
        shell.feed(WorkerLost(shell.t, device))
    sched = shell.sched
    assert all(sched.pool.mode(d) is DeviceMode.LOST for d in range(6))
    assert sched.in_flight == 0 and not sched.training and not sched.shrinking
    late += list(shell.pending)
    shell.pending.clear()
    for make in late:
        shell.t += 0.25
        event = make(shell.t)
        out = shell.feed(event)
        assert not [c for c in out if not isinstance(c, LoadPrompts)], (event, out)
    assert sched.in_flight == 0


def test_late_duplicate_offload_done_from_an_earlier_cycle_is_ignored():
    """Fixed in 0.2.0 (was a strict xfail): the answer names the Offload it answers."""
    shell = FifoShell(make_cfg("timeshare", count=2, train=1, train_batch_size=1, max_turns=1))
    shell.feed(Started(0.0))
    assert shell.run_until(lambda: shell.sched.stats.train_steps >= 1)
    first = next(c for c in shell.log if isinstance(c, Offload) and 1 in c.devices)
    n = len(shell.log)
    assert shell.run_until(lambda: any(isinstance(c, Offload) for c in shell.log[n:]))
    assert shell.sched.pool.mode(1) is DeviceMode.SHRINKING
    before = shell.sched.stats.ignored_events
    out = shell.feed(OffloadDone(shell.t, 1, first.op_id))  # the cycle-1 answer, again, late
    assert shell.sched.pool.mode(1) is DeviceMode.SHRINKING, "engine still resident"
    assert not [c for c in out if isinstance(c, Train)] and shell.sched.shrinking == (1,)
    assert shell.sched.stats.ignored_events == before + 1
    # the current answer still commits the shrink and training starts
    assert shell.run_until(lambda: shell.sched.stats.train_steps >= 2)


def test_late_duplicate_reload_done_from_an_earlier_expand_is_ignored():
    """Without operation ids a cycle-1 ReloadDone marked a sleeping engine awake: the GPU
    returned to rollout (and took requests) before its engine was reloaded."""
    shell = FifoShell(make_cfg("timeshare", count=2, train=1, train_batch_size=1, max_turns=1))
    shell.feed(Started(0.0))
    assert shell.run_until(lambda: shell.sched.stats.train_steps >= 1)
    first = next(c for c in shell.log if isinstance(c, Reload))
    assert shell.run_until(lambda: shell.sched.stats.train_steps >= 2)
    assert shell.sched.pool.mode(1) is DeviceMode.EXPANDING
    shell.hold(ReloadDone)  # the current reload has not answered yet
    shell.run_until(lambda: False)  # deliver everything else (weights included)
    assert shell.sched.pool.mode(1) is DeviceMode.EXPANDING
    out = shell.feed(ReloadDone(shell.t, 1, first.op_id))
    assert shell.sched.pool.mode(1) is DeviceMode.EXPANDING, "engine still asleep"
    assert not [c for c in out if isinstance(c, Dispatch) and c.rank == 1]


def test_duplicate_prompts_loaded_does_not_admit_twice():
    s = Scheduler(make_cfg("colocate", count=2, train_batch_size=2, staleness=0))
    (layout, load) = s.handle(Started(0.0))
    assert layout == InitialLayout((0, 1), ()) and load == LoadPrompts(0, 2)
    event = PromptsLoaded(1.0, load.load_id, (10, 10))
    s.handle(event)
    before = snapshot(s)
    assert s.handle(event) == [] and snapshot(s) == before
    assert s.buffer.admitted_groups == 2 and not s._backlog


def test_disaggregated_layout_is_announced_and_sent_once():
    s = Scheduler(make_cfg("disaggregated", count=4, train=2))
    out = s.handle(Started(0.0))
    assert out[0] == InitialLayout((0, 1), (2, 3))
    assert s.handle(Started(0.5)) == [] and s.stats.ignored_events == 1


def test_rejected_event_leaves_the_state_unchanged():
    """Before 0.2.0 `handle` advanced `now` (and counted the event) before the handler's
    check raised, so a malformed event moved the clock and later valid events were refused."""
    s = Scheduler(make_cfg("colocate", count=2))
    s.handle(Started(0.0))
    s.handle(PromptsLoaded(1.0, 0, (10, 10)))
    before, now, events = snapshot(s), s.now, s.stats.events
    for bad in (
        RequestFinished(50.0, 0, 10_000),  # more tokens than the budget
        PromptsLoaded(50.0, s._load_pending, (0,)) if s._load_pending is not None else None,
        WeightsSynced(50.0, 0, 7),  # a version from the future
        OffloadDone(50.0, 99, 0),  # no such GPU
        WorkerLost(50.0, -1),
    ):
        if bad is None:
            continue
        with pytest.raises(ValueError):
            s.handle(bad)
        assert (snapshot(s), s.now, s.stats.events) == (before, now, events), bad
    s.handle(RequestFinished(2.0, 0, 5))  # an earlier time is still accepted
    assert s.now == 2.0


def _idle_session(env_timeout_s: float = 10.0):
    """Colocate on 2 GPUs, one request per rank; tid 0 finishes turn 0 and its environment
    step at t=2, so its idle session's deadline is 12."""
    cfg = make_cfg(
        "colocate",
        count=2,
        train_batch_size=2,
        max_turns=5,
        env_timeout_s=env_timeout_s,
        max_inflight_per_rank=1,
    )
    s = Scheduler(cfg)
    s.handle(Started(0.0))
    s.handle(PromptsLoaded(0.5, 0, (10, 10)))
    (_env,) = s.handle(RequestFinished(1.0, 0, 5))
    out = s.handle(EnvStepDone(2.0, 0, 0, 3, False))
    (d,) = [c for c in out if isinstance(c, Dispatch)]
    assert (d.tid, d.turn, d.env_deadline) == (0, 1, 12.0)
    return s, d


def test_idle_session_timeout_when_the_turn_finishes_late():
    """The seed's failure mode: the session times out while the next turn is generated.
    The turn is kept, no environment step starts, the trajectory ends flagged."""
    s, d = _idle_session()
    out = s.handle(RequestFinished(12.0, d.rid, 4))
    assert not [c for c in out if isinstance(c, StartEnvStep)]
    traj = s.buffer.trajs[0]
    assert traj.state.name == "DONE" and traj.timed_out and traj.turn_versions == [0, 0]
    assert s.stats.env_session_timeouts == 1 and s.stats.env_timeouts == 0


def test_idle_session_timeout_enforced_by_the_shell_with_an_abort():
    s, d = _idle_session()
    out = s.handle(RequestAborted(12.5, d.rid, 3))  # the shell aborted at the deadline
    assert not [c for c in out if isinstance(c, (Dispatch, StartEnvStep))]
    traj = s.buffer.trajs[0]
    assert traj.state.name == "DONE" and traj.timed_out and traj.turn_versions == [0]
    assert s.stats.env_session_timeouts == 1 and s.stats.migrated == 0
    assert s.stats.discarded_tokens == 3


def test_idle_session_timeout_while_queued():
    """A trajectory whose session timed out while it waited for a slot is not dispatched:
    checked when the pump takes it from the queue."""
    cfg = make_cfg(
        "colocate", count=2, train_batch_size=4, max_turns=5, env_timeout_s=10.0,
        max_inflight_per_rank=1,
    )
    s = Scheduler(cfg)
    s.handle(Started(0.0))
    s.handle(PromptsLoaded(0.5, 0, (10, 10, 10)))  # tid 0 on rank 0, tid 1 on rank 1, tid 2 waits
    out = s.handle(RequestFinished(1.0, 0, 5))
    (d2,) = [c for c in out if isinstance(c, Dispatch)]
    assert (d2.tid, d2.rank) == (2, 0)
    out = s.handle(EnvStepDone(2.0, 0, 0, 3, False))  # tid 0 waits for a slot until t=12
    assert not [c for c in out if isinstance(c, Dispatch)]
    out = s.handle(RequestFinished(12.0, d2.rid, 5))  # rank 0 frees after the deadline
    assert not [c for c in out if isinstance(c, Dispatch) and c.tid == 0]
    traj = s.buffer.trajs[0]
    assert traj.state.name == "DONE" and traj.timed_out and traj.turn_versions == [0]
    assert s.stats.env_session_timeouts == 1 and s.stats.dispatched == 3


def test_no_session_before_the_first_environment_step():
    s = Scheduler(make_cfg("colocate", count=2, env_timeout_s=1.0))
    s.handle(Started(0.0))
    out = s.handle(PromptsLoaded(0.0, 0, (10, 10)))
    assert all(c.env_deadline is None for c in out if isinstance(c, Dispatch))
    out = s.handle(RequestFinished(100.0, 0, 5))  # long after any timeout: no session yet
    assert [c for c in out if isinstance(c, StartEnvStep)]
    assert s.stats.env_session_timeouts == 0


@pytest.mark.parametrize(
    "key,value",
    [
        ("devices.gpus_per_rank", "true"),
        ("scheduler.group_size", "true"),
        ("scheduler.staleness", "true"),
        ("scheduler.train_batch_size", "8.0"),
        ("scheduler.max_turns", "yes"),
        ("scheduler.shrink.trigger", "true"),
    ],
)
def test_integer_knobs_reject_yaml_booleans_and_floats(key, value):
    """`group_size: true` must not load as a group of 1 (the error names the key path)."""
    from rlsched.config import ConfigError, load_config

    section, *rest = key.split(".")
    nested = value
    for part in reversed(rest):
        nested = f"{{{part}: {nested}}}"
    other = "devices: {count: 4}" if section == "scheduler" else "scheduler: {mode: colocate}"
    text = f"{section}: {nested}\n{other}\n"
    if section == "devices":
        text = text.replace("{gpus_per_rank", "{count: 4, gpus_per_rank")
    with pytest.raises(ConfigError) as info:
        load_config(text)
    assert any(p.startswith(f"{key}:") for p in info.value.problems), info.value.problems
