"""Step 3 of design/rlsched_calibrate.md: micro-runs in the run's layout (a real local Ray
cluster), every engine step recorded; no timing bounds. Their fits: test_step4.py."""

import random
import time
from pathlib import Path

import pytest
import ray
import torch
from runtime_parts import start_ray, tiny

from rlsched.runtime.bench import fit_line
from rlsched.runtime.calibrate import (
    cell_done,
    closed_loop,
    fit_layout,
    fit_lsq,
    measure_layout,
    profile_costs,
    start_probes,
    step_samples,
    train_through_ray,
)
from rlsched.sim.params import load_sim_config
from rlsched.trainer.grpo import synthetic_examples


def test_a_step_lasts_until_the_next_one_while_requests_stay_active() -> None:
    # (began, ended, rows, joins, padded, widest, active after, passes, answers leaving)
    steps = [
        (0.0, 0.01, 2, 2, 14, 9, 3, 2, 0),
        (0.0125, 0.02, 2, 0, 2, 10, 0, 1, 1),
        (5.0, 5.25, 1, 1, 4, 4, 0, 1, 2),
    ]
    assert step_samples(steps) == [
        [2, 2, 14, 9, 0.0125, 2, 0],
        [2, 0, 2, 10, 0.0075, 1, 1],
        [1, 1, 4, 4, 0.25, 1, 2],
    ]


def _trained_together(second: int) -> list[dict]:
    """Each worker's weights after one step on both workers of fresh probes, the first worker's
    share drawn from seed 1, the second's from `second`."""
    probes = start_probes(tiny())
    workers = probes["workers"]
    words = list(probes["sampling"].allowed_token_ids)
    shares = [synthetic_examples(random.Random(seed), words, 4, 8) for seed in (1, second)]
    try:
        train_through_ray(workers, shares, 2, 0)
        # gradients unpark a replica without changing it, so that it can be exported
        looked = [w.train_grads.remote(shares[0][:1], 1, None) for w in workers]
        exports = [
            w.train_export.options(num_returns=2).remote(1, ref)
            for w, ref in zip(workers, looked, strict=True)
        ]
        return [ray.get(weights) for weights, _ in exports]
    finally:
        for actor in probes["actors"]:
            ray.kill(actor, no_restart=True)
        if probes["started"]:
            ray.shutdown()


def test_a_step_on_several_workers_applies_every_share_on_each() -> None:
    """As the driver trains on several devices: the replicas stay equal, and the second
    worker's share changes the result."""
    first, again = _trained_together(2), _trained_together(3)
    for weights in (first, again):
        assert weights[0].keys() == weights[1].keys()
        assert all(torch.equal(weights[0][k], weights[1][k]) for k in weights[0])
    assert any(not torch.equal(first[0][k], again[0][k]) for k in first[0])


def test_a_cell_runs_its_seconds_and_until_each_worker_ended_a_turn() -> None:
    done = cell_done(0.0, 2)
    assert not done(1) and done(2)
    assert not cell_done(30.0, 2)(5)  # its seconds not yet spent
    assert cell_done(-60.5, 2)(0)  # a minute past its seconds: stop even without a turn


def test_a_turn_of_the_closed_loop_is_sent_with_its_batch() -> None:
    """0.10.0: a request's way in starts when its batch is flushed, not when it was queued:
    every fresh trajectory's first turn goes out in the first flush, at one time."""
    probes = start_probes(tiny())
    try:  # seed 5: ids count from 5,000,000, a trajectory's id before its first turn's
        loop = closed_loop(probes, [0, 1], (3, 2, 1, 4), lambda turns: turns >= 30, 5)
    finally:
        for actor in probes["actors"]:
            ray.kill(actor, no_restart=True)
        if probes["started"]:
            ray.shutdown()
    first = [r for r in loop["requests"] if r[0] <= 5_000_011]  # the six first turns
    assert len(first) >= 3  # those answered before the loop stopped (at least 30 turns)
    assert len({sent for _, _, sent, _ in first}) == 1
    assert len({sent for _, _, sent, _ in loop["requests"]}) > 1  # later batches, later
    assert all(answered >= sent for _, _, sent, answered in loop["requests"])


@pytest.mark.parametrize("process", ["auto", "actor"])
def test_the_run_layout_measured_on_a_real_cluster(tmp_path: Path, process: str) -> None:
    """`auto`: GridWalk steps in this process, as the run's driver steps it (0.6.0); `actor`:
    through the pool actor."""
    cfg = tiny(env={"process": process})
    grid = ((2, 3, 1, 4), (64, 1, 2, 8))  # the second capped at max_inflight_per_rank
    joined = process == "actor"  # this process is on Ray already: it stays, the probes go
    if joined:
        start_ray()
    samples = measure_layout(
        cfg,
        seconds=0.1,
        walks=2,
        grid=grid,
        train_grid=((4, 8), (8, 8)),
        alone=((4, 2, 1, 4),),
        driver_steps=2,
    )
    assert ray.is_initialized() is joined  # started here, stopped here; else left running
    if joined:
        try:  # every probe actor was killed: the cluster gets its GPUs back (bounded polling)
            total = ray.cluster_resources()["GPU"]
            for _ in range(300):
                if ray.available_resources().get("GPU", 0) == total:
                    break
                time.sleep(0.1)
            assert ray.available_resources().get("GPU", 0) == total
        finally:
            ray.shutdown()
    cells = samples["cells"]
    cap = cfg.scheduler.max_inflight_per_rank
    assert [
        (c["per_worker"], c["workers"], c["tokens"], c["obs"], c["context"]) for c in cells
    ] == [
        (2, 2, 3, 1, 4),
        (cap, 2, 1, 2, 8),
        (4, 1, 2, 1, 4),  # one worker busy, the other idle
        (4, 1, 2, 1, 4),  # walked back
        (cap, 2, 1, 2, 8),
        (2, 2, 3, 1, 4),
    ]
    assert all(c["steps"] and c["in_s"] and c["out_s"] and c["env_s"] for c in cells)
    # 0.10.0: the run's own driver on a fresh cluster, after the rest: the config's mode, the
    # steps asked for after the first, the turns it dispatched in them, the seconds it was
    # busy (not waiting) and its thread's CPU
    driver = samples["driver"]
    assert (driver["mode"], driver["steps"]) == (cfg.scheduler.mode, 2)
    assert driver["turns"] >= cfg.scheduler.train_batch_size
    assert driver["busy_s"] > 0 and driver["cpu_s"] > 0
    # each environment call with the steps in flight when it was sent: fewer than the cell's
    # trajectories, and more than none where more than one trajectory ran
    for cell in cells:
        inflight = cell["env_inflight"]
        assert len(inflight) == len(cell["env_s"])
        assert all(0 <= k < cell["per_worker"] * cell["workers"] for k in inflight)
    if process == "actor":
        assert max(k for c in cells for k in c["env_inflight"]) >= 1
    else:  # stepped at once, in this process: none in flight
        assert all(k == 0 for c in cells for k in c["env_inflight"])
    for cell in cells:
        assert all(1 <= s[0] <= cap and 0 <= s[1] <= s[0] and s[4] >= 0 for s in cell["steps"])
        # an answer may leave before the next step ends (its call won the worker's lock): the
        # way back past that point can be negative; an environment call cannot
        assert all(x >= 0 for x in cell["env_s"])
        # every row's context is at least the cell's, and fed tokens pad every row
        assert all(s[3] >= cell["context"] and s[2] >= s[0] for s in cell["steps"])
    # each cell's requests generated its tokens: its steps' rows add up at least to them
    first = cells[0]
    assert sum(s[0] for s in first["steps"]) >= 3 * len(first["out_s"])
    assert [t["tokens"] for t in samples["train"]] == [32, 64, 64, 32]
    # then once more with the serving workers idle
    assert [t["tokens"] for t in samples["train_alone"]] == [32, 64]
    assert all(t["train_s"] > 0 for t in samples["train_alone"])
    # and with every worker training its own share at once, as colocate trains
    assert [t["tokens"] for t in samples["train_together"]] == [32, 64]
    assert all(t["train_s"] > 0 for t in samples["train_together"])
    # the serving load turned over beside the first steps and was stopped for the others
    assert sum(t["served"] for t in samples["train"]) > 0
    assert [t["served"] for t in samples["train_alone"] + samples["train_together"]] == [0] * 4
    # a warm-up ran first (the first cell, one training step of the first size), not kept
    warmup = samples["warmup"]
    assert warmup["turns"] >= 2 and warmup["tokens"] == 32 and warmup["train_s"] > 0
    assert len(samples["switches"]) == 4 and samples["devices"] == 2
    assert (samples["trainer"], samples["serving"]) == (1, [0])  # the last trains, others serve
    assert all(t["train_s"] > 0 and t["sync_s"] > 0 for t in samples["train"])
    # the profile section is the fit of these samples; the simulator's loader takes it
    layout = fit_layout(samples)
    full = [c for c in cells if c["workers"] == 2]
    assert layout["driver_turn_s"]["value"] == pytest.approx(driver["busy_s"] / driver["turns"])
    assert samples["split_tokens"] == 128 and layout["step_split_tokens"]["value"] == 128
    assert all(s[5] in (1, 2) for c in cells for s in c["steps"])
    # every request that finished left while a later step ran, or when none followed: the
    # answers recorded are at most the requests that ended
    assert all(s[6] >= 0 for c in cells for s in c["steps"])
    assert sum(s[6] for s in first["steps"]) <= len(first["out_s"])
    # (0.9.0: turns sent in batches end together in these even cells, so no answer need be
    # leaving while a step runs; step 2's check records answers that do)
    rows = [[1.0, s[0], s[2], s[0] * s[3], s[1], s[5] - 1, s[6]] for c in full for s in c["steps"]]
    assert list(layout["step"].values())[:7] == pytest.approx(
        fit_lsq(rows, [s[4] for c in full for s in c["steps"]])
    )
    assert layout["step_alone_factor"]["value"] > 0 and layout["train_alone_factor"]["value"] > 0
    line = [
        layout["train_fixed_s"]["value"] + layout["train_s_per_token"]["value"] * t
        for t in (32, 64)
    ]
    together = sum(t["train_s"] for t in samples["train_together"])
    assert layout["train_together_factor"]["value"] == pytest.approx(together / sum(line))
    # the ways in and back spread around their means, as measured
    for key in ("request_in_spread", "request_out_spread"):
        points = layout[key]["quantiles"]
        assert len(points) == 20 and points == sorted(points)
        assert sum(points) / 20 == pytest.approx(1.0, abs=1e-3)
    calls = [float(c["per_worker"] * c["workers"]) for c in cells for _ in c["in_s"]]
    line = fit_line(calls, [x for c in cells for x in c["in_s"]])
    assert (
        layout["request_in_s"]["value"],
        layout["request_in_s_per_call"]["value"],
    ) == pytest.approx(line)
    steps_in_flight = [float(k) for c in cells for k in c["env_inflight"]]
    assert (
        layout["env_call_s"]["value"],
        layout["env_call_s_per_env_step"]["value"],
    ) == pytest.approx(fit_line(steps_in_flight, [x for c in cells for x in c["env_s"]]))
    train = samples["train"]
    assert (layout["train_fixed_s"]["value"], layout["train_s_per_token"]["value"]) == (
        pytest.approx(fit_line([float(t["tokens"]) for t in train], [t["train_s"] for t in train]))
    )
    one = {"value": 0.001, "source": "a one-process figure"}
    keys = ("prefill_s_per_token", "train_s_per_token", "train_fixed_s", "sync_s")
    profile = {key: one for key in (*keys, "offload_s", "reload_s")} | {
        "decode": {"fixed_s": 0.002, "per_request_s": 0.0, "per_context_token_s": 0.0},
        "prefix_cache": True,
        "layout": layout,
    }
    profile["decode"]["source"] = "a one-process fit"
    cost = profile_costs(profile, 8.0, 20.0, "test")
    trace = tmp_path / "one.jsonl"
    trace.write_text('{"prompt_tokens": 4, "samples": [[[1, 2, 0.0]]]}\n', encoding="utf-8")
    sim = load_sim_config(
        {
            "devices": {"count": 2},
            "policies": {"ts": {"mode": "timeshare", "train": 1}},
            "cost": cost,
            "workload": {"trace": str(trace)},
        }
    )
    assert sim.cost.step_fixed_s.value == layout["step"]["fixed_s"]
    assert sim.cost.request_out_s.value == layout["request_out_s"]["value"]
    assert sim.cost.sync_s.value == layout["sync_s"]["value"]
    assert sim.cost.step_answer_s.value == layout["step"]["answer_s"]
    assert list(sim.cost.request_in_spread.quantiles) == layout["request_in_spread"]["quantiles"]
    # the decode rates (the simulator's bounds) stay the one-process fit's
    assert sim.cost.decode_rank_tokens_per_s.value == pytest.approx(8.0 / 0.002)


def test_a_probe_worker_notes_each_request_of_a_batch_when_the_batch_arrives() -> None:
    """0.9.0: the closed loop sends turns in `submit` batches, as the run does; each request's
    arrival is its batch's, and its end is its own."""
    from rlsched.engines.base import Sampling
    from rlsched.envs.base import resolve_env
    from rlsched.model import action_token_ids, load_tokenizer
    from rlsched.runtime.calibrate import ProbeWorker

    cfg = tiny()
    env_cls = resolve_env(cfg.env.name)
    tok = load_tokenizer(cfg.model, env_cls.words)
    allowed = action_token_ids(tok, env_cls.actions)
    worker = ProbeWorker(
        0, cfg.model, tok.get_vocab_size(), cfg.train, 1.0, allowed, 0, 4, engine="kv"
    )
    try:
        ids = list(allowed)[:6]
        before = time.time()
        assert worker.submit([(7, ids, 2, None), (8, ids, 3, 1)], Sampling(1.0, allowed)) == 2
        outputs = []
        while len(outputs) < 2:  # each collect returns at least one output: at most two calls
            outputs += worker.collect()
        assert sorted(out.rid for out in outputs) == [7, 8]
        times = worker.take()["times"]
        (a7, e7), (a8, e8) = times[7], times[8]
        assert before <= a7 == a8 <= e7 <= e8 <= time.time()
    finally:
        worker.stop()
