"""Seer's techniques end to end (issue 9 items 1 and 2): the orders inside the scheduler, divided
rollout in the core and its cost in the simulator. The hooks' own unit checks are in
steps/rlsched_seer/."""

from __future__ import annotations

from pathlib import Path

from rlsched.config import RlschedConfig
from rlsched.core.commands import Dispatch, LoadPrompts, StartEnvStep, Train
from rlsched.core.events import Event, PromptsLoaded, RequestFinished, Started
from rlsched.core.machine import Scheduler
from rlsched.core.seer import ContextAwarePlacement, OraclePlacement
from rlsched.sim.params import load_sim_config
from rlsched.sim.shell import Simulation
from rlsched.sim.workload import Workload

ABLATION = Path(__file__).resolve().parent.parent / "examples" / "seer_ablation.yaml"


def _config(**scheduler: object) -> RlschedConfig:
    base = {"mode": "colocate", "group_size": 4, "train_batch_size": 12, "staleness": 0}
    return RlschedConfig.model_validate(
        {"devices": {"count": 1}, "scheduler": {**base, **scheduler}}
    )


def _start(core: Scheduler, prompts: tuple[int, ...]) -> list:
    (load,) = [c for c in core.handle(Started(0.0)) if isinstance(c, LoadPrompts)]
    return core.handle(PromptsLoaded(0.0, load.load_id, prompts))


def test_probes_of_new_groups_are_dispatched_first() -> None:
    core = Scheduler(_config(max_inflight_per_rank=3, placement="context"))
    assert isinstance(core.placement, ContextAwarePlacement)
    out = _start(core, (10, 10, 10))
    assert [c.tid for c in out if isinstance(c, Dispatch)] == [0, 4, 8]  # one per group


def test_oracle_dispatches_the_longest_trajectories_first() -> None:
    lengths = {tid: (tid * 37) % 11 for tid in range(12)}
    placement = OraclePlacement(lambda traj: lengths[traj.tid], fifo_every=100)  # no FIFO pick
    core = Scheduler(_config(max_inflight_per_rank=4), placement=placement)
    out = _start(core, (10, 10, 10))
    first = [c.tid for c in out if isinstance(c, Dispatch)]
    assert [lengths[t] for t in first] == sorted(lengths.values(), reverse=True)[:4]


def test_a_chunked_turn_adds_up_to_the_undivided_turn() -> None:
    core = Scheduler(_config(group_size=1, train_batch_size=1, chunk_tokens=10))
    (first,) = [c for c in _start(core, (5,)) if isinstance(c, Dispatch)]
    assert (first.max_new_tokens, first.resume_tokens) == (10, 0)
    out = core.handle(RequestFinished(1.0, first.rid, 10))  # the chunk ended, not the turn
    (second,) = [c for c in out if isinstance(c, Dispatch)]
    assert (second.turn, second.resume_tokens, second.context_tokens) == (0, 10, 5)
    assert not any(isinstance(c, StartEnvStep) for c in out)
    out = core.handle(RequestFinished(2.0, second.rid, 3))  # the turn stopped inside its chunk
    assert [c.turn for c in out if isinstance(c, StartEnvStep)] == [0]
    traj = core.buffer.trajs[first.tid]
    assert (traj.generated_tokens, traj.context_tokens, traj.resume_tokens) == (13, 18, 0)
    assert core.stats.chunk_ends == 1 and core.stats.migrated == 0


def test_simulated_chunks_add_up_to_the_plan_and_moves_pay_prefill() -> None:
    """Every trained trajectory generated exactly its planned turns' tokens, with and without
    chunks; chunks that moved to another rank prefilled their context and kept tokens again."""
    sim_cfg = load_sim_config(ABLATION)
    checked = {}
    for name in ("timeshare+no-context", "timeshare+no-context+divided"):
        cfg = sim_cfg.policy_config(name)
        sch = cfg.scheduler
        work = Workload(sim_cfg.workload, sim_cfg.seed, sch.group_size, sch.max_tokens)
        sim: Simulation | None = None
        mismatches: list[int] = []
        trained = 0

        def observe(event: Event, commands: list) -> None:
            nonlocal trained
            for command in commands:
                if not isinstance(command, Train):
                    continue
                for sample in command.samples:
                    traj = sim.core.buffer.trajs[sample.tid]
                    plan = work.turns(sample.gid, sample.tid)[: len(sample.turn_versions)]
                    planned = sum(turn.gen for turn in plan)
                    if traj.context_tokens < sch.max_tokens and not sample.timed_out:
                        trained += 1
                        if traj.generated_tokens != planned:
                            mismatches.append(sample.tid)

        sim = Simulation(cfg, sim_cfg.cost, work, observer=observe)
        result = sim.run(2)
        assert trained > 50 and mismatches == []
        checked[name] = (result, sim.core.stats.chunk_ends)
    (plain, no_chunks), (divided, chunks) = checked.values()
    assert no_chunks == 0 and chunks > 100
    assert divided.prefill_tokens > plain.prefill_tokens  # moved chunks are prefilled again


def test_a_moved_chunk_prefills_context_and_kept_tokens_a_kept_one_nothing() -> None:
    sim_cfg = load_sim_config(ABLATION)
    cfg = sim_cfg.policy_config("timeshare+no-context+divided")
    sch = cfg.scheduler
    work = Workload(sim_cfg.workload, sim_cfg.seed, sch.group_size, sch.max_tokens)
    sim = Simulation(cfg, sim_cfg.cost, work)
    chunk = sch.chunk_tokens
    prompt = work.prompt_tokens(0)
    sim._dispatch(Dispatch(0, 0, 0, 0, 0, prompt, 0, chunk, 0, None, True))
    assert sim.result.prefill_tokens == prompt
    sim._note(RequestFinished(1.0, 0, chunk))  # a chunk end on rank 0
    sim._dispatch(Dispatch(1, 0, 0, 0, 0, prompt, chunk, chunk, 0, None, True))  # same rank
    assert sim.result.prefill_tokens == prompt  # cached there: nothing to prefill
    sim._note(RequestFinished(2.0, 1, chunk))
    sim._dispatch(Dispatch(2, 0, 0, 0, 1, prompt, 2 * chunk, chunk, 0, None, True))  # moved
    assert sim.result.prefill_tokens == 2 * prompt + 2 * chunk
    assert sim._trajs[0].gen_kept == 0  # no turn finished yet
