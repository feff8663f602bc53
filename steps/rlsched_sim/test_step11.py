"""Step 11 of design/rlsched_sim.md: commands executed against the models."""

from pathlib import Path

import pytest

from rlsched.config import RlschedConfig
from rlsched.core.commands import Dispatch, LoadPrompts
from rlsched.core.events import PromptsLoaded, Started
from rlsched.core.shell import PendingRequest as Requested
from rlsched.sim.params import CostModel, WorkloadModel, load_sim_config
from rlsched.sim.shell import Simulation
from rlsched.sim.workload import Workload

ROOT = Path(__file__).resolve().parents[2]


def test_started_loads_prompts_and_dispatches_on_the_ranks() -> None:
    sim = load_sim_config(ROOT / "examples" / "four_gpu.yaml")
    cfg = sim.policy_config("colocate")
    work = Workload(sim.workload, 0, 4, 16384)
    seen = []
    simulation = Simulation(cfg, sim.cost, work, observer=lambda e, c: seen.append((e, c)))
    simulation._feed(Started(0.0))
    load = next(c for c in seen[0][1] if isinstance(c, LoadPrompts))
    at, _, answer, _ = simulation._heap[0]
    assert at == 0.0 and isinstance(answer, PromptsLoaded) and answer.load_id == load.load_id
    assert answer.prompt_tokens == tuple(work.prompt_tokens(g) for g in range(load.count))
    import heapq

    heapq.heappop(simulation._heap)
    simulation._feed(answer)
    dispatched = [c for c in seen[1][1] if isinstance(c, Dispatch)]
    assert len(dispatched) == 2 * 32  # (staleness 1 + 1) batches of 32 trajectories
    assert sum(r.load for r in simulation.ranks) == len(dispatched)
    assert simulation.result.prefill_tokens == sum(d.context_tokens for d in dispatched)
    assert all(simulation.timeline.kind(d) == "rollout" for d in range(4))


def _chunked_simulation() -> Simulation:
    """One device, turns of exactly 50 tokens, chunks of 25."""
    cfg = RlschedConfig.model_validate(
        {
            "devices": {"count": 1},
            "scheduler": {
                "mode": "colocate",
                "train_batch_size": 1,
                "group_size": 1,
                "staleness": 0,
                "max_tokens": 10_000,
                "chunk_tokens": 25,
            },
        }
    )
    s = lambda v: {"value": v, "source": "step check"}  # noqa: E731
    cost = CostModel.model_validate(
        {
            "decode_rank_tokens_per_s": s(100),
            "decode_request_tokens_per_s": s(10),
            "prefill_s_per_token": s(0.01),
            "prefix_cache": False,
            "train_s_per_token": s(0.001),
            "train_fixed_s": s(2),
            "sync_s": s(0),
            "offload_s": s(0),
            "reload_s": s(0),
        }
    )
    d = lambda v: {"median": v, "source": "step check"}  # noqa: E731
    model = WorkloadModel.model_validate(
        {
            "prompt_tokens": d(100),
            "turns": d(2),
            "turns_within_group_sigma": s(0),
            "gen_tokens": d(50),
            "obs_tokens": d(10),
            "env_step_s": d(1.0),
        }
    )
    return Simulation(cfg, cost, Workload(model, 0, 1, 10_000))


def test_a_dispatch_records_whether_it_reaches_the_end_of_its_turn() -> None:
    """The shell knows the turn's length (0.3.0): a dispatch that can generate all the turn
    still lacks will end the turn (its finish says `stopped`); one cut by the chunk will not."""
    simulation = _chunked_simulation()
    simulation._dispatch(Dispatch(0, 0, 0, 0, 0, 100, 0, 25, 0, None, chunked=True))  # 25 of 50
    simulation._dispatch(Dispatch(1, 0, 0, 0, 0, 100, 25, 25, 0, None, chunked=True))  # last 25
    simulation._dispatch(Dispatch(2, 0, 0, 0, 0, 100, 10, 100, 0, None))  # the turn's rest
    records = [simulation.ledger.get(Requested, rid) for rid in (0, 1, 2)]
    assert [record.ends for record in records] == [False, True, True]
    # each record holds the command it answers; the shell decides nothing
    assert [record.command.rid for record in records] == [0, 1, 2]
    assert [record.command.chunked for record in records] == [True, True, False]
    assert simulation._touched == {0} and not simulation.ledger.late


def test_a_whole_run_on_one_device_adds_up_by_hand() -> None:
    """Two steps of one trajectory each: prompt 100, two turns of 50 generated tokens in chunks
    of 25, 10 observation tokens and 1 s of environment after each turn; prefill 0.01 s a
    token (no prefix cache), 10 tokens/s per request, training 2 s + 0.001 s a token."""
    simulation = _chunked_simulation()
    seen = []
    simulation.observer = lambda event, commands: seen.append((event, commands))
    result = simulation.run(2)
    assert result.events == len(seen)
    # turn 1: prefill 100 (1 s) + 25 tokens (2.5 s), then prefill 125 again + 25 tokens: 7.25 s;
    # env 1 s; turn 2 from 160 and 185 tokens: 8.45 s; env 1 s; train 2 + 0.001 * 220 s
    step = 7.25 + 1.0 + 8.45 + 1.0 + 2.22
    assert result.step_done == pytest.approx([step, 2 * step])
    assert result.trained_trajectories == 2 and result.stale_dropped == 0
    assert result.useful_tokens == 2 * 100 and result.decoded_tokens == 2 * 100
    assert result.trained_prefill_tokens == 2 * (100 + 2 * 10)
    assert result.trained_context_tokens == 2 * 220
    assert result.prefill_tokens == 2 * (100 + 125 + 160 + 185)
    assert result.batch_train_s == pytest.approx([2.22, 2.22])
    # the critical path: prefill 100, 2 x (50 tokens at 10/s + 1 s env), prefill 10 obs tokens
    assert result.batch_path_s == pytest.approx([13.1, 13.1])
    assert result.trajectory_seconds == pytest.approx([step - 2.22, step - 2.22])
    assert result.batch_tail_s == [0.0, 0.0]
    kinds = [type(c).__name__ for _, commands in seen for c in commands]
    assert kinds.count("Dispatch") == 8 and kinds.count("StartEnvStep") == 4
    assert kinds.count("Train") == 2 and kinds.count("Offload") == 2
    done = [e for e, _ in seen if type(e).__name__ == "EnvStepDone"]
    assert [(e.turn, e.obs_tokens, e.done) for e in done[:2]] == [(0, 10, False), (1, 10, True)]
    spans = [s for s in simulation.timeline.spans if s.device == 0][:5]
    assert [s.kind for s in spans] == ["rollout", "idle", "rollout", "idle", "train"]
    assert [s.end for s in spans] == pytest.approx([7.25, 8.25, 16.7, 17.7, step])


def test_an_environment_step_answers_or_times_out_at_its_deadline() -> None:
    from rlsched.core.commands import DropStale, StartEnvStep
    from rlsched.core.events import EnvStepDone, EnvStepTimedOut

    simulation = _chunked_simulation()
    simulation._dispatch(Dispatch(0, 0, 0, 0, 0, 100, 0, 25, 0, None))
    record = simulation._trajs[0]
    path = record.path_s
    simulation.now = 3.0
    simulation._execute([StartEnvStep(0, 0, 4.0)])  # the 1 s step ends exactly at 4.0
    simulation._execute([StartEnvStep(0, 1, 3.5)])  # the last turn's step would end at 4.0
    answers = sorted(item for item in simulation._heap if item[2] is not None)  # no wake-ups
    assert [(at, type(e)) for at, _, e, _ in answers] == [
        (3.5, EnvStepTimedOut),
        (4.0, EnvStepDone),
    ]
    timed_out, answered = answers[0][2], answers[1][2]
    assert (timed_out.tid, timed_out.turn) == (0, 1)
    assert (answered.tid, answered.turn, answered.obs_tokens, answered.done) == (0, 0, 10, False)
    assert record.path_s == pytest.approx(path + 1.0 + 0.5)
    simulation._heap.clear()
    simulation._execute([StartEnvStep(0, 1, 9.0)])
    assert simulation._heap[0][2].done  # turn 1 is the last of two
    simulation._execute([DropStale((0,), (0,))])
    assert 0 not in simulation._trajs and simulation.result.stale_dropped == 1


def _paper(policy: str, **options: object) -> tuple[Simulation, Workload]:
    sim = load_sim_config(ROOT / "examples" / "paper_160gpu.yaml")
    cfg = sim.policy_config(policy)
    work = Workload(sim.workload, 0, cfg.scheduler.group_size, cfg.scheduler.max_tokens)
    return Simulation(cfg, sim.cost, work, **options), work


def test_the_pool_offers_what_the_last_rank_still_holds_in_host_memory() -> None:
    """0.7.0: with a host tier the global pool is the ranks' host tiers read by every rank."""
    from rlsched.sim.shell import TrajRecord

    for host, kept, pooled in ((True, 1200, 1200), (True, 0, 0), (False, 0, 1500)):
        simulation, work = _paper("timeshare", kv_pool="global", kv_host=host)
        simulation._trajs[0] = TrajRecord(0, 100, context=1500, cached_rank=2, cached_tokens=1500)
        if kept:
            simulation.ranks[2].host[0] = kept  # what rank 2's host tier still holds
        turn = work.turns(0, 0)[1]
        simulation._dispatch(Dispatch(4, 0, 0, 1, 5, 1600, 0, turn.gen, 0, None))
        rank = simulation.ranks[5]
        assert (rank.fetched, rank.prefilled) == (pooled, 1600 - pooled), (host, kept)


def test_an_aborted_turn_s_kv_moves_to_its_next_rank_once() -> None:
    from rlsched.core.commands import Abort
    from rlsched.core.events import RequestAborted

    simulation, work = _paper("timeshare", kv_migration="move")
    prompt = work.prompt_tokens(0)
    simulation._dispatch(Dispatch(10, 0, 0, 0, 3, prompt, 0, 4000, 0, None))
    source = simulation.ranks[3]
    assert source.complete(source.next_time()) == []  # the prompt is prefilled: it decodes
    simulation.now = 3.0
    simulation._execute([Abort(3, (10,))])
    at, _, answer, _ = simulation._heap[-1]
    assert isinstance(answer, RequestAborted) and at == 3.0 and answer.new_tokens > 0
    record = simulation._trajs[0]
    assert record.moved == prompt + answer.new_tokens
    simulation._note(answer)
    simulation._dispatch(Dispatch(11, 0, 0, 0, 4, prompt, answer.new_tokens, 4000, 0, None))
    rank = simulation.ranks[4]
    assert (rank.moved, rank.prefilled) == (prompt + answer.new_tokens, 0)
    assert rank.transfer_left == pytest.approx(rank.moved * rank.move_s)
    assert record.moved == 0  # sent once
    # without kv_migration: move nothing is remembered, the next rank prefills
    plain, _ = _paper("timeshare")
    plain._dispatch(Dispatch(10, 0, 0, 0, 3, prompt, 0, 4000, 0, None))
    plain.now = 3.0
    plain._execute([Abort(3, (10,))])
    assert plain._trajs[0].moved == 0


def test_a_trained_batch_records_its_kv_need_and_the_rollout_ranks_it_trains_on() -> None:
    from rlsched.core.commands import Train, TrainSample
    from rlsched.sim.shell import TrajRecord

    for policy, ranks in (("timeshare", 16), ("disaggregated", 0), ("colocate", 20)):
        simulation, _ = _paper(policy)
        for tid, need in ((0, 5.0), (1, 7.5)):
            simulation._trajs[tid] = TrajRecord(0, 10, context=10)
            simulation._trajs[tid].kv_need = need
            simulation._trajs[tid].kv_read_s = need / 10
        devices = simulation.cfg.train_devices()
        samples = tuple(TrainSample(tid, 0, (0,), False) for tid in (0, 1))
        simulation._train(Train(1, devices, 0, samples))
        result = simulation.result
        assert result.batch_kv_s == [12.5] and result.batch_read_s == [1.25]
        assert result.batch_train_ranks == [ranks], policy


def test_shrinks_and_expands_are_timed_as_the_driver_times_them() -> None:
    """0.17.0: the shell base's TransitionClock after every event. Without the engine-step model
    an abort answers at once, so a shrink is its offload (1 s in four_gpu.yaml); the sync is sent
    with the reload, so an expand is the longer of the two (reload 1 s, sync 2 s)."""
    sim = load_sim_config(ROOT / "examples" / "four_gpu.yaml")
    for policy, expands in (("timeshare", 2), ("colocate", 4)):
        cfg = sim.policy_config(policy)
        work = Workload(sim.workload, 0, cfg.scheduler.group_size, cfg.scheduler.max_tokens)
        result = Simulation(cfg, sim.cost, work).run(2)
        assert result.transition_s["shrink_s"] == [pytest.approx(1.0)] * 2
        assert result.transition_s["expand_s"] == [pytest.approx(2.0)] * expands
