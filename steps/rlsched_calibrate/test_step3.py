"""Step 3 of design/rlsched_calibrate.md: micro-runs in the run's layout (a real local Ray
cluster), the engine-step fit and the round trips; no timing bounds."""

import time
from pathlib import Path

import pytest
import ray
import yaml
from click.testing import CliRunner
from runtime_parts import TINY, start_ray, tiny

from rlsched.cli import cli
from rlsched.runtime.bench import fit_line
from rlsched.runtime.calibrate import (
    cell_done,
    fit_layout,
    fit_lsq,
    layout_costs,
    layout_summary,
    measure_layout,
    profile_costs,
    step_samples,
)
from rlsched.sim.params import load_sim_config


def test_fit_lsq_recovers_a_known_model_clips_and_drops_what_never_varies() -> None:
    coef = [0.01, 0.0005, 4e-5, 2e-6, 0.001]
    rows = [
        [1.0, r, r * f, r * w, j]
        for r in (1, 8, 30)
        for f in (1, 9)
        for w in (10, 80)
        for j in (0, 3)
    ]
    ys = [sum(c * x for c, x in zip(coef, row)) for row in rows]
    assert fit_lsq(rows, ys) == pytest.approx(coef, rel=1e-6)
    # a term that falls is no cost: clipped, the rest refitted
    falling = [[1.0, x] for x in (1.0, 2.0, 3.0)]
    assert fit_lsq(falling, [3.0, 2.0, 1.0]) == [pytest.approx(2.0), 0.0]
    # a term the samples never vary (joins always 0) cannot be told: 0
    flat = [[1.0, x, 0.0] for x in (1.0, 2.0, 4.0)]
    assert fit_lsq(flat, [1.5, 2.0, 3.0]) == pytest.approx([1.0, 0.5, 0.0])
    with pytest.raises(ValueError, match="VAL_NON_EMPTY"):
        fit_lsq([], [])


def test_a_step_lasts_until_the_next_one_while_requests_stay_active() -> None:
    # (began, ended, rows, joins, padded, widest, active after, passes)
    steps = [
        (0.0, 0.01, 2, 2, 14, 9, 3, 2),
        (0.0125, 0.02, 2, 0, 2, 10, 0, 1),
        (5.0, 5.25, 1, 1, 4, 4, 0, 1),
    ]
    assert step_samples(steps) == [
        [2, 2, 14, 9, 0.0125, 2],
        [2, 0, 2, 10, 0.0075, 1],
        [1, 1, 4, 4, 0.25, 1],
    ]


def test_a_cell_runs_its_seconds_and_until_each_worker_ended_a_turn() -> None:
    done = cell_done(0.0, 2)
    assert not done(1) and done(2)
    assert not cell_done(30.0, 2)(5)  # its seconds not yet spent
    assert cell_done(-60.5, 2)(0)  # a minute past its seconds: stop even without a turn


def _layout() -> dict:
    cell = {"per_worker": 4, "workers": 2, "tokens": 2, "obs": 1, "context": 8}
    # a second pass adds 3 ms (and computes fewer positions: r * f - 2 of them)
    steps = [
        [
            r,
            j,
            r * f - 2 * (p - 1),
            w,
            0.01
            + 0.001 * r
            + 1e-4 * (r * f - 2 * (p - 1))
            + 1e-6 * r * w
            + 0.002 * j
            + 0.003 * (p - 1),
            p,
        ]
        for r in (1, 3, 9)
        for j in (0, 2)
        for f in (1, 6)
        for w in (10, 40)
        for p in ((1, 2) if r > 1 and f > 1 else (1,))
    ]
    return {
        "host": "h",
        "created": "now",
        "load_before": [1.0, 1.0, 1.0],
        "load_after": [2.0, 2.0, 2.0],
        "devices": 2,
        "cells": [
            {
                **cell,
                "steps": steps,
                "in_s": [0.01, 0.03],
                "out_s": [0.02],
                "env_s": [0.004],
                "env_inflight": [0],
            },
            {
                **cell,
                "steps": [],
                "in_s": [0.02],
                "out_s": [0.04],
                "env_s": [0.006, 0.008],
                "env_inflight": [1, 2],
            },
            # one worker busy, the other idle: its steps take 0.8 of what the fit says
            {
                **cell,
                "per_worker": 8,
                "workers": 1,
                "steps": [[2, 1, 4, 10, 0.8 * (0.01 + 0.002 + 4e-4 + 2e-5 + 0.002), 1]],
                "in_s": [0.03],
                "out_s": [],
                "env_s": [],
                "env_inflight": [],
            },
        ],
        "train": [
            {"tokens": 100, "train_s": 0.3, "sync_s": 0.05},
            {"tokens": 300, "train_s": 0.5, "sync_s": 0.01},
        ],
        # the serving workers idle: half of what the line beside them gives (0.3 + 0.5)
        "train_alone": [{"tokens": 100, "train_s": 0.15}, {"tokens": 300, "train_s": 0.25}],
        "switches": [
            {"offload_s": 0.003, "reload_s": 0.002},
            {"offload_s": 0.005, "reload_s": 0.004},
        ],
        "split_tokens": 128,
    }


def test_the_layout_section_fits_its_samples_and_names_its_source() -> None:
    layout = fit_layout(_layout())
    step = layout["step"]
    terms = ("fixed_s", "row_s", "token_s", "context_s", "join_s", "pass_s")
    assert [step[k] for k in terms] == pytest.approx(
        [0.01, 0.001, 1e-4, 1e-6, 0.002, 0.003], rel=1e-6
    )
    stamp = "measured by rlsched calibrate on h at now in the run's layout (2 Ray device workers"
    assert step["source"].startswith(stamp) and "load 1.0 -> 2.0" in step["source"]
    assert "least squares over 32 engine steps of 2 closed-loop cells" in step["source"]
    assert layout["step_split_tokens"]["value"] == 128
    assert layout["step_alone_factor"]["value"] == pytest.approx(0.8)
    # the ways in and back grow with the calls outstanding (trajectories per worker x busy
    # workers): in: 0.01, 0.03, 0.02 s with 8 outstanding, 0.03 s with 8 (alone: 8 x 1)
    assert layout["request_in_s"]["value"] == pytest.approx(0.0225)
    assert layout["request_in_s_per_call"]["value"] == 0.0  # all at 8: no slope to see
    assert layout["request_out_s"]["value"] == pytest.approx(0.03)
    # an environment call: 4 ms + 2 ms per environment step in flight when it was sent
    assert layout["env_call_s"]["value"] == pytest.approx(0.004)
    assert layout["env_call_s_per_env_step"]["value"] == pytest.approx(0.002)
    assert "against the environment steps in flight" in layout["env_call_s"]["source"]
    assert "env_call_s_per_call" not in layout
    assert "least squares of 4 generate calls" in layout["request_in_s"]["source"]
    assert (layout["train_fixed_s"]["value"], layout["train_s_per_token"]["value"]) == (
        pytest.approx((0.2, 0.001))
    )
    assert layout["sync_s"]["value"] == pytest.approx(0.03)
    assert layout["train_alone_factor"]["value"] == pytest.approx(0.5)
    assert (
        "2 training steps through Ray with the serving workers idle"
        in (layout["train_alone_factor"]["source"])
    )
    assert layout["offload_s"]["value"] == pytest.approx(0.004)
    assert layout["reload_s"]["value"] == pytest.approx(0.003)
    for key, figure in layout.items():
        assert figure["source"].startswith(stamp), key
    # the simulator's cost section gets the step model and the round trips from it
    costs = layout_costs({"layout": layout})
    assert costs["step_token_s"]["value"] == step["token_s"]
    assert costs["step_token_s"]["source"] == f"{step['source']}: token_s"
    assert costs["env_call_s"] == layout["env_call_s"] and costs["sync_s"] == layout["sync_s"]
    assert costs["step_pass_s"]["value"] == step["pass_s"]
    assert costs["env_call_s_per_env_step"] == layout["env_call_s_per_env_step"]
    assert costs["train_alone_factor"] == layout["train_alone_factor"]
    assert costs["step_split_tokens"] == layout["step_split_tokens"]
    assert layout_costs({}) == {}
    # a profile measured before passes were (calibrate 0.2.0): one pass a step, as it ran
    old = dict(layout, step={k: v for k, v in step.items() if k != "pass_s"})
    del old["step_split_tokens"]
    costs = layout_costs({"layout": old})
    assert "step_pass_s" not in costs and "step_split_tokens" not in costs
    assert costs["step_join_s"]["value"] == step["join_s"]
    # the line `rlsched calibrate` prints
    line = layout_summary(layout)
    assert line.startswith("in the run's layout: step 10.00 ms + 1.000 ms/row")
    assert "2.000 ms/join + 3.00 ms/second pass (x0.80 alone)" in line
    assert "environment call 4.0 ms + 2.00 ms per environment step in flight" in line
    # an engine that never splits (the recompute engine): no split figure
    assert "step_split_tokens" not in fit_layout(_layout() | {"split_tokens": None})


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
        cfg, seconds=0.1, walks=2, grid=grid, train_grid=((4, 8), (8, 8)), alone=((4, 2, 1, 4),)
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
    # a warm-up ran first (the first cell, one training step of the first size), not kept
    warmup = samples["warmup"]
    assert warmup["turns"] >= 2 and warmup["tokens"] == 32 and warmup["train_s"] > 0
    assert len(samples["switches"]) == 4 and samples["devices"] == 2
    assert (samples["trainer"], samples["serving"]) == (1, [0])  # the last trains, others serve
    assert all(t["train_s"] > 0 and t["sync_s"] > 0 for t in samples["train"])
    # the profile section is the fit of these samples; the simulator's loader takes it
    layout = fit_layout(samples)
    full = [c for c in cells if c["workers"] == 2]
    assert samples["split_tokens"] == 128 and layout["step_split_tokens"]["value"] == 128
    assert all(s[5] in (1, 2) for c in cells for s in c["steps"])
    rows = [[1.0, s[0], s[2], s[0] * s[3], s[1], s[5] - 1] for c in full for s in c["steps"]]
    assert list(layout["step"].values())[:6] == pytest.approx(
        fit_lsq(rows, [s[4] for c in full for s in c["steps"]])
    )
    assert layout["step_alone_factor"]["value"] > 0 and layout["train_alone_factor"]["value"] > 0
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
    # the decode rates (the simulator's bounds) stay the one-process fit's
    assert sim.cost.decode_rank_tokens_per_s.value == pytest.approx(8.0 / 0.002)


def test_calibrate_refuses_a_bad_layout_option_in_one_line(tmp_path: Path) -> None:
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump(TINY), encoding="utf-8")
    args = ["calibrate", str(config), "--out", str(tmp_path / "p"), "--seconds", "0"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2 and "--seconds" in result.output
    assert not (tmp_path / "p").exists()


def test_calibrate_refuses_a_missing_config_in_one_line(tmp_path: Path) -> None:
    config = tmp_path / "nope.yaml"
    result = CliRunner().invoke(cli, ["calibrate", str(config), "--out", str(tmp_path / "p")])
    assert result.exit_code == 2 and not (tmp_path / "p").exists()
    lines = result.output.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{config}: cannot read: "), result.output
