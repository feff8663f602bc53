"""Step 12 of design/rlsched_sim.md: whole runs, hand-computed; a stalled schedule is reported."""

import pytest

from rlsched.config import RlschedConfig
from rlsched.core.commands import Dispatch, StartEnvStep
from rlsched.core.events import Event, RequestFinished
from rlsched.core.machine import Scheduler
from rlsched.core.policies import ColocatePolicy
from rlsched.sim.params import CostModel, WorkloadModel
from rlsched.sim.shell import Simulation, SimulationStalled
from rlsched.sim.workload import Workload


def _fixed(value: float) -> dict:
    return {"median": value, "source": "hand-computed case"}


def _case(prefix_cache: bool) -> tuple[RlschedConfig, CostModel, Workload]:
    cfg = RlschedConfig.model_validate(
        {
            "devices": {"count": 1},
            "scheduler": {
                "mode": "colocate",
                "train_batch_size": 1,
                "group_size": 1,
                "staleness": 0,
                "max_turns": 10,
                "max_tokens": 10_000,
            },
        }
    )
    s = lambda v: {"value": v, "source": "hand-computed case"}  # noqa: E731
    cost = CostModel.model_validate(
        {
            "decode_rank_tokens_per_s": s(100),
            "decode_request_tokens_per_s": s(10),
            "prefill_s_per_token": s(0.01),
            "prefix_cache": prefix_cache,
            "train_s_per_token": s(0.001),
            "train_fixed_s": s(2),
            "sync_s": s(0),
            "offload_s": s(0),
            "reload_s": s(0),
        }
    )
    model = WorkloadModel.model_validate(
        {
            "prompt_tokens": _fixed(100),
            "turns": _fixed(2),
            "turns_within_group_sigma": s(0),
            "gen_tokens": _fixed(50),
            "obs_tokens": _fixed(10),
            "env_step_s": _fixed(1.0),
        }
    )
    return cfg, cost, Workload(model, 0, 1, 10_000)


@pytest.mark.parametrize(("prefix_cache", "step"), [(False, 16.82), (True, 15.32)])
def test_one_device_fixed_lengths_instant_switches(prefix_cache: bool, step: float) -> None:
    # turn 0: prefill 100 tokens (1.0 s) + 50 tokens at 10/s (5 s) + environment 1 s;
    # turn 1: prefill 160 tokens (1.6 s; 10 tokens, 0.1 s, when the rank kept its prefix) + 5 s
    # + 1 s; training: 2 s + 0.001 s x 220 tokens. Nothing overlaps on one device.
    cfg, cost, work = _case(prefix_cache)
    result = Simulation(cfg, cost, work, check_invariants=True).run(3)
    assert result.step_done == pytest.approx([step, 2 * step, 3 * step])
    assert result.decoded_tokens == 300 and result.useful_tokens == 300
    assert result.timeline.share([0], ["train"]) == pytest.approx(2.22 / step)


class _NeverTrains(ColocatePolicy):
    def train_devices(self, pool):  # type: ignore[no-untyped-def]
        return ()

    def shrink_targets(self, pool, ready_groups):  # type: ignore[no-untyped-def]
        return ()


def test_a_schedule_that_cannot_progress_is_reported() -> None:
    cfg, cost, work = _case(False)
    core = Scheduler(cfg, policy=_NeverTrains(cfg))
    with pytest.raises(
        SimulationStalled, match=r"stalled at t=14\.6s after 0 steps: 0 requests in flight, 1 ready"
    ):
        Simulation(cfg, cost, work, scheduler=core).run(1)


def _chunked(chunk: int) -> tuple[RlschedConfig, CostModel, Workload]:
    """The hand-computed case without a prefix cache, turns divided into chunks of `chunk`."""
    cfg, cost, work = _case(False)
    mapping = cfg.model_dump()
    mapping["scheduler"]["chunk_tokens"] = chunk
    return RlschedConfig.model_validate(mapping), cost, work


def test_a_turn_of_whole_chunks_ends_with_its_last_chunk() -> None:
    """Turns of 50 tokens in chunks of 25 (0.3.0): the second chunk reaches the end of the turn,
    so its finish says `stopped` and the turn closes; no third dispatch asks for nothing.
    Turn 0: prefill 100 (1.0 s) + 25 tokens at 10/s (2.5 s), prefill 125 (1.25 s) + 2.5 s,
    environment 1 s; turn 1: prefill 160 (1.6 s) + 2.5 s, prefill 185 (1.85 s) + 2.5 s, 1 s;
    training 2.22 s. Without the stop reason each turn paid a third, empty dispatch (prefill
    150 and 210 tokens: 3.6 s more)."""
    cfg, cost, work = _chunked(25)
    dispatches: list[Dispatch] = []
    finishes: list[RequestFinished] = []

    def watch(event: Event, commands: list) -> None:
        if isinstance(event, RequestFinished):
            finishes.append(event)
        dispatches.extend(c for c in commands if isinstance(c, Dispatch))

    simulation = Simulation(cfg, cost, work, observer=watch, check_invariants=True)
    result = simulation.run(1)
    assert [(d.turn, d.resume_tokens, d.max_new_tokens) for d in dispatches] == [
        (0, 0, 25),
        (0, 25, 25),
        (1, 0, 25),
        (1, 25, 25),
    ]
    assert [(f.new_tokens, f.stopped) for f in finishes] == [
        (25, False),
        (25, True),
        (25, False),
        (25, True),
    ]
    assert result.step_done == pytest.approx([19.92])
    assert result.prefill_tokens == 100 + 125 + 160 + 185
    assert result.decoded_tokens == result.useful_tokens == 100
    assert simulation.core.stats.chunk_ends == 2


def test_a_run_sums_what_its_memory_ranks_copied_instead_of_prefilling() -> None:
    """0.7.0: host loads, pool fetches and moved KV, summed over the ranks at the end."""
    from kv_world import kv_world

    from rlsched.sim.workload import Workload as W

    sim = kv_world({"t": {"mode": "timeshare", "train": 2, "scheduler": {"migration": "resume"}}})
    cfg = sim.policy_config("t")
    work = W(sim.workload, 1, 4, 16384)
    options = {"kv_pool": "global", "kv_host": True, "kv_migration": "move"}
    simulation = Simulation(cfg, sim.cost, work, **options)
    result = simulation.run(2)
    ranks = simulation.ranks
    assert result.kv_loaded == sum(r.loaded for r in ranks) > 0
    assert result.kv_fetched == sum(r.fetched for r in ranks) > 0
    assert result.kv_moved == sum(r.moved for r in ranks) > 0
    assert result.prefill_tokens == sum(r.prefilled for r in ranks)


def _stepped(**extra: float) -> tuple[RlschedConfig, CostModel, Workload]:
    """The hand-computed case with the engine-step model (0.7.0) and 5-token turns."""
    cfg, cost, _ = _case(True)
    s = lambda v: {"value": v, "source": "hand-computed case"}  # noqa: E731
    terms = {"step_fixed_s": 0.1, "step_row_s": 0.0, "step_token_s": 0.001}
    terms |= {"step_context_s": 0.0, "step_join_s": 0.0}
    terms |= {"request_in_s": 0.5, "request_out_s": 0.25, "env_call_s": 0.2} | extra
    cost = CostModel.model_validate(
        {**cost.model_dump(exclude_none=True), **{k: s(v) for k, v in terms.items()}}
    )
    model = WorkloadModel.model_validate(
        {
            "prompt_tokens": _fixed(100),
            "turns": _fixed(2),
            "turns_within_group_sigma": s(0),
            "gen_tokens": _fixed(5),
            "obs_tokens": _fixed(10),
            "env_step_s": _fixed(1.0),
        }
    )
    return cfg, cost, Workload(model, 0, 1, 10_000)


def test_the_engine_step_model_runs_a_whole_step_by_hand() -> None:
    """Turn 0: 0.5 s to the engine; a step feeding the 100-token prompt (0.1 + 0.1 s) and four
    steps of one token (0.101 s each); 0.25 s back; the environment's call 0.2 s and its 1 s.
    Turn 1: 0.5 s; 104 tokens kept from turn 0, so its first step feeds 11 of its 115 (0.111 s),
    then four more (0.404 s); 0.25 s; 1.2 s. Training 2 s + 0.001 s x 130 tokens."""
    cfg, cost, work = _stepped()
    simulation = Simulation(cfg, cost, work, check_invariants=True)
    assert {type(rank).__name__ for rank in simulation.ranks} == {"StepRank"}
    seen: list[int] = []
    result = simulation.run(3, seen.append)
    step = 0.5 + 0.604 + 0.25 + 1.2 + 0.5 + 0.515 + 0.25 + 1.2 + 2.13
    assert result.step_done == pytest.approx([step, 2 * step, 3 * step])
    assert seen == [1, 2, 3] and result.wall_s > 0  # progress after each step; its own time
    assert result.decoded_tokens == result.useful_tokens == 30
    assert result.prefill_tokens == 3 * (99 + 10)  # fed beyond one token per row and step
    # the device serves from each dispatch to its answer
    assert result.timeline.share([0], ["rollout"]) == pytest.approx(2.619 / step)


def test_training_alone_takes_the_alone_factor_and_beside_a_load_more() -> None:
    """0.16.0: a training step takes factor + (1 - factor) x the serving load times its
    seconds. One device: nothing serves beside it, so the hand-computed run's 2.13 s of
    training take half."""
    cfg, cost, work = _stepped(train_alone_factor=0.5)
    result = Simulation(cfg, cost, work, check_invariants=True).run(1)
    step = 0.5 + 0.604 + 0.25 + 1.2 + 0.5 + 0.515 + 0.25 + 1.2 + 0.5 * 2.13
    assert result.step_done == pytest.approx([step])
    # two devices, device 1 training: the load is what rank 0 serves over what it may hold
    mapping = _case(True)[0].model_dump()
    mapping["devices"] = {"count": 2, "train": [1]}
    mapping["scheduler"] |= {"mode": "disaggregated", "max_inflight_per_rank": 4}
    simulation = Simulation(RlschedConfig.model_validate(mapping), cost, work)
    assert simulation._train_slowdown((1,)) == 0.5  # nothing served beside it
    simulation._dispatch(Dispatch(0, 0, 0, 0, 0, 100, 0, 5, 0, None))
    assert simulation._train_slowdown((1,)) == 0.5 + 0.5 * 1 / 4  # one request of 4
    assert simulation._train_slowdown((0, 1)) == 0.5  # every rank trains
    plain = Simulation(RlschedConfig.model_validate(mapping), _stepped()[1], work)
    assert plain._train_slowdown((1,)) == 1.0  # no factor measured: as before
    # 0.19.0: a step on more than one device takes the factor measured training together
    _, both, _ = _stepped(train_alone_factor=0.5, train_together_factor=0.8)
    simulation = Simulation(RlschedConfig.model_validate(mapping), both, work)
    assert simulation._train_slowdown((0, 1)) == 0.8
    assert simulation._train_slowdown((1,)) == 0.5  # one device: the alone factor
    simulation._dispatch(Dispatch(0, 0, 0, 0, 0, 100, 0, 5, 0, None))
    assert simulation._train_slowdown((1,)) == 0.5 + 0.5 * 1 / 4
    _, only, _ = _stepped(train_together_factor=0.8)  # without the alone factor
    simulation = Simulation(RlschedConfig.model_validate(mapping), only, work)
    assert simulation._train_slowdown((0, 1)) == 0.8 and simulation._train_slowdown((1,)) == 1.0


def test_the_environment_call_counts_with_the_old_rank_model_too() -> None:
    cfg, cost, work = _case(True)
    s = {"value": 0.5, "source": "hand-computed case"}
    cost = CostModel.model_validate({**cost.model_dump(exclude_none=True), "env_call_s": s})
    result = Simulation(cfg, cost, work).run(1)
    assert result.step_done == pytest.approx([15.32 + 2 * 0.5])


def test_new_weights_make_a_serving_step_rank_forget() -> None:
    """Disaggregated on two devices: device 0 keeps serving while device 1 trains; the rank
    keeps the finished trajectory's prefix until the new weights land in place."""
    _, cost, work = _stepped()
    mapping = _case(True)[0].model_dump()
    mapping["devices"] = {"count": 2, "train": [1]}
    mapping["scheduler"]["mode"] = "disaggregated"
    cfg = RlschedConfig.model_validate(mapping)
    kept: list[tuple[str, int]] = []

    def watch(event: Event, commands: list) -> None:
        if type(event).__name__ in ("TrainingDone", "WeightsSynced") and event.time > 0:
            kept.append((type(event).__name__, len(simulation.ranks[0].kept)))

    simulation = Simulation(cfg, cost, work, observer=watch, check_invariants=True)
    simulation.run(2)
    assert kept[:2] == [("TrainingDone", 1), ("WeightsSynced", 0)]


def test_round_trips_grow_with_the_calls_outstanding() -> None:
    """0.8.0: a request's way in and back and an environment call each add seconds per call
    outstanding when they start (requests on the ranks, environment steps in flight)."""
    per_call = {"request_in_s_per_call": 0.1, "request_out_s_per_call": 0.01}
    cfg, cost, work = _stepped(**per_call, env_call_s_per_call=0.2)
    simulation = Simulation(cfg, cost, work)
    rank = simulation.ranks[0]
    assert simulation._outstanding() == 0
    simulation._dispatch(Dispatch(0, 0, 0, 0, 0, 100, 0, 5, 0, None))
    simulation._dispatch(Dispatch(1, 1, 0, 0, 0, 100, 0, 5, 0, None))
    assert simulation._outstanding() == 2
    # (arrival, rid, tid, context, gen, way back): the second saw one request outstanding
    assert [(a[0], a[1], a[5]) for a in rank.arriving] == [
        (0.5, 0, 0.25),
        (pytest.approx(0.6), 1, pytest.approx(0.26)),
    ]
    simulation._env_step(StartEnvStep(0, 0, 10.0))  # 2 outstanding: 0.2 + 2 x 0.2 + 1 s
    assert simulation._outstanding() == 3
    (at, _seq, event, _rank) = simulation._heap[-1]
    assert at == pytest.approx(1.6) and type(event).__name__ == "EnvStepDone"
    simulation._note(event)
    assert simulation._outstanding() == 2


def test_each_request_s_ways_spread_around_the_line_as_measured() -> None:
    """0.18.0: a request's way in and back are the line's times the quantile its id draws;
    the step rank pays for the answers leaving while it steps."""
    cfg, base, work = _stepped(request_in_s_per_call=0.1, step_answer_s=0.02)
    spreads = {
        "request_in_spread": {"quantiles": [0.0, 2.0], "source": "hand-computed case"},
        "request_out_spread": {"quantiles": [0.5, 1.5], "source": "hand-computed case"},
    }
    cost = CostModel.model_validate({**base.model_dump(exclude_none=True), **spreads})
    simulation = Simulation(cfg, cost, work)
    assert simulation.ranks[0].answer_s == 0.02
    for rid in range(4):
        simulation._dispatch(Dispatch(rid, rid, 0, 0, 0, 100, 0, 5, 0, None))
    way_in = [0.5 + 0.1 * k for k in range(4)]  # the line at the calls outstanding
    want = [
        (w * cost.request_in_spread.factor(rid), rid, 0.25 * cost.request_out_spread.factor(rid, 1))
        for rid, w in enumerate(way_in)
    ]
    got = sorted(((a[1], a[0], a[5]) for a in simulation.ranks[0].arriving))
    assert [rid for rid, _, _ in got] == [0, 1, 2, 3]
    for (_, at, back), (way, _, out) in zip(got, want, strict=True):
        assert (at, back) == (pytest.approx(way), pytest.approx(out))
    assert {round(at / w, 6) for (_, at, _), w in zip(got, way_in, strict=True)} == {0.0, 2.0}
    # the same calls, the same draws: a run does not depend on anything but its ids
    again = Simulation(cfg, cost, work)
    for rid in range(4):
        again._dispatch(Dispatch(rid, rid, 0, 0, 0, 100, 0, 5, 0, None))
    assert sorted((a[1], a[0], a[5]) for a in again.ranks[0].arriving) == got
    # without spreads each takes the line's mean, as before
    plain = Simulation(cfg, base, work)
    plain._dispatch(Dispatch(3, 3, 0, 0, 0, 100, 0, 5, 0, None))
    assert [(a[0], a[5]) for a in plain.ranks[0].arriving] == [(0.5, 0.25)]


def test_an_environment_call_waits_for_the_service_of_the_calls_ahead() -> None:
    """0.15.1: the environment's path is a FIFO server: a call waits for the service of the
    steps ahead of it; requests decoding on the ranks do not queue there."""
    cfg, cost, work = _stepped(env_call_s_per_env_step=0.3)
    simulation = Simulation(cfg, cost, work)
    simulation._dispatch(Dispatch(0, 0, 0, 0, 0, 100, 0, 5, 0, None))  # decoding: not counted
    simulation._dispatch(Dispatch(1, 1, 0, 0, 0, 100, 0, 5, 0, None))
    simulation._env_step(StartEnvStep(0, 0, 10.0))  # an empty queue: 0.2 + 1 s
    simulation._env_step(StartEnvStep(1, 0, 10.0))  # one ahead: 0.3 + 0.2 + 1 s
    done = sorted(
        at for at, _seq, event, _ in simulation._heap if type(event).__name__ == "EnvStepDone"
    )
    assert done == [pytest.approx(1.2), pytest.approx(1.5)]
    simulation.now = 0.5  # the queue is busy until 0.6: a call at 0.5 waits 0.1 (until 0.9)
    simulation._env_step(StartEnvStep(0, 1, 10.0))
    simulation.now = 1.0  # the queue is empty again: no wait
    simulation._env_step(StartEnvStep(1, 1, 10.0))
    done = sorted(
        at for at, _seq, event, _ in simulation._heap if type(event).__name__ == "EnvStepDone"
    )
    assert done[2:] == [pytest.approx(0.5 + 0.1 + 1.2), pytest.approx(1.0 + 1.2)]


def test_the_driver_serves_the_answers_in_batches() -> None:
    """0.20.0: answers that arrive while the driver is free form a batch served at
    `driver_turn_s` each; the batch's environment steps start together at its end; an answer
    arriving meanwhile waits for the next batch. Without the figure nothing waits."""
    cfg, cost, work = _stepped(driver_turn_s=0.1)
    simulation = Simulation(cfg, cost, work)
    for rid in range(3):
        simulation._dispatch(Dispatch(rid, rid, 0, 0, 0, 100, 0, 5, 0, None))

    def started() -> list[tuple[float, int]]:
        return sorted(
            (at, event.tid)
            for at, _seq, event, _ in simulation._heap
            if type(event).__name__ == "EnvStepDone"
        )

    def drain(until: float) -> None:  # the driver's own wake-ups, as `run` pops them
        while True:
            wakes = [item for item in simulation._heap if item[2] is None and item[3] == -1]
            due = min(wakes, default=None)
            if due is None or due[0] > until:
                return
            simulation._heap.remove(due)
            simulation.now = due[0]
            simulation._driver_batch(due[0])

    simulation._env_step(StartEnvStep(0, 0, 10.0))  # at 0: a batch of two, served until 0.2
    simulation._env_step(StartEnvStep(1, 0, 10.0))
    simulation.now = 0.15
    simulation._env_step(StartEnvStep(2, 0, 10.0))  # the driver is busy: the next batch
    assert started() == []
    drain(0.2)  # the first wake-up (0.1) was superseded when the batch grew
    # both start at 0.2: the call's 0.2 s and the environment's 1 s
    assert started() == [(pytest.approx(1.4), 0), (pytest.approx(1.4), 1)]
    drain(10.0)  # the held answer, a batch of one from 0.2 to 0.3
    assert started()[2:] == [(pytest.approx(1.5), 2)]
    assert simulation._batch == simulation._held == []
    # a step held past its deadline times out when it is released, not before now
    late = Simulation(cfg, cost, work)
    late._dispatch(Dispatch(0, 0, 0, 0, 0, 100, 0, 5, 0, None))
    late._env_step(StartEnvStep(0, 0, 0.05))
    late.now = 0.1
    late._driver_batch(0.1)
    [(at, event)] = [(at, e) for at, _s, e, _ in late._heap if e is not None]
    assert (type(event).__name__, at, event.time) == ("EnvStepTimedOut", 0.1, 0.1)
    # a whole run by hand: each turn's answer is a batch of one, 0.05 s before its call
    result = Simulation(cfg, _stepped(driver_turn_s=0.05)[1], work).run(1)
    step = 0.5 + 0.604 + 0.25 + 0.05 + 1.2 + 0.5 + 0.515 + 0.25 + 0.05 + 1.2 + 2.13
    assert result.step_done == pytest.approx([step])


def test_a_step_rank_alone_on_the_machine_steps_faster() -> None:
    """0.9.0: the shell tells a step rank whether any other device rolls out or trains."""
    _, cost, work = _stepped(step_alone_factor=0.5)
    mapping = _case(True)[0].model_dump()
    mapping["devices"] = {"count": 2, "train": [1]}
    mapping["scheduler"]["mode"] = "disaggregated"
    simulation = Simulation(RlschedConfig.model_validate(mapping), cost, work)
    assert simulation._alone(0) and simulation._alone(1)
    simulation._op[1] = "train"
    assert not simulation._alone(0) and simulation._alone(1)
    simulation._op[1] = "offload"
    assert simulation._alone(0)
    simulation._op[1] = None
    simulation._busy[1] = True  # rank 1 serves a request
    assert not simulation._alone(0) and simulation._alone(1)
    rank = simulation.ranks[0]
    assert rank.alone_factor == 0.5 and rank.alone is not None and not rank.alone()
    simulation._busy[1] = False
    assert rank.alone()
