"""Step 4 of design/rlsched_calibrate.md: the layout's fits (the engine step, the round trips'
lines and spreads, training), the line `rlsched calibrate` prints and its refusals."""

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from runtime_parts import TINY

from rlsched.cli import cli
from rlsched.runtime.calibrate import (
    SPREAD_POINTS,
    fit_layout,
    fit_lsq,
    layout_costs,
    layout_summary,
    spread_points,
)
from rlsched.sim.params import Spread


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


def test_a_spread_is_each_call_over_its_own_cells_mean() -> None:
    # two cells at different loads, one shape: 1 and 3 around 2, 10 and 30 around 20
    points = spread_points([[0.001, 0.003], [0.010, 0.030]])
    assert len(points) == SPREAD_POINTS == 20
    assert points == [0.5] * 10 + [1.5] * 10
    assert spread_points([[0.001, 0.003]]) == points
    # quantiles at the midpoints of equal shares, scaled to a mean of exactly 1
    skewed = spread_points([[1.0, 1.0, 1.0, 5.0]])  # factors 0.5, 0.5, 0.5, 2.5 (mean 1)
    assert skewed == [0.5] * 15 + [2.5] * 5
    # a negative way back counts as 0; a cell whose mean is 0 says nothing about the shape
    assert spread_points([[-0.002, 0.002], [0.0, 0.0]]) == [0.0] * 10 + [2.0] * 10
    assert spread_points([[0.0], []]) == [] and spread_points([]) == []
    # the points' own mean is scaled away: 0.5, 0.5 and 2 over 20 shares average 1.025
    assert spread_points([[1.0, 1.0, 4.0]]) == [0.4878] * 13 + [1.9512] * 7
    # each point rounded to four places: 1 and 2 around 1.5
    assert spread_points([[1.0, 2.0]]) == [0.6667] * 10 + [1.3333] * 10
    lumpy = spread_points([[0.001 * k for k in range(1, 50)], [7.0, 1.0, 3.0]])
    assert lumpy == sorted(lumpy) and sum(lumpy) / len(lumpy) == pytest.approx(1.0, abs=2e-4)


def _layout() -> dict:
    cell = {"per_worker": 4, "workers": 2, "tokens": 2, "obs": 1, "context": 8}
    # a second pass adds 3 ms (and computes fewer positions: r * f - 2 of them); each answer
    # leaving while a step runs 0.5 ms
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
            + 0.003 * (p - 1)
            + 0.0005 * a,
            p,
            a,
        ]
        for r in (1, 3, 9)
        for j in (0, 2)
        for f in (1, 6)
        for w in (10, 40)
        for p in ((1, 2) if r > 1 and f > 1 else (1,))
        for a in ((0, 3) if j else (1,))
    ]
    return {
        "host": "h",
        "created": "now",
        "load_before": [1.0, 0.5, 0.25],
        "load_after": [2.0, 1.5, 1.25],
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
                "steps": [[2, 1, 4, 10, 0.8 * (0.01 + 0.002 + 4e-4 + 2e-5 + 0.002 + 0.001), 1, 2]],
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
        # every worker training its share at once: 1.5 times the line (0.3 + 0.5)
        "train_together": [{"tokens": 100, "train_s": 0.5}, {"tokens": 300, "train_s": 0.7}],
        "switches": [
            {"offload_s": 0.003, "reload_s": 0.002},
            {"offload_s": 0.005, "reload_s": 0.004},
        ],
        "split_tokens": 128,
        # the run's driver: busy 12 ms over 100 turns, 9 ms of it CPU
        "driver": {"mode": "timeshare", "steps": 4, "turns": 100, "busy_s": 0.012, "cpu_s": 0.009},
    }


def test_the_layout_section_fits_its_samples_and_names_its_source() -> None:
    layout = fit_layout(_layout())
    step = layout["step"]
    terms = ("fixed_s", "row_s", "token_s", "context_s", "join_s", "pass_s", "answer_s")
    assert [step[k] for k in terms] == pytest.approx(
        [0.01, 0.001, 1e-4, 1e-6, 0.002, 0.003, 0.0005], rel=1e-6
    )
    stamp = "measured by rlsched calibrate on h at now in the run's layout (2 Ray device workers"
    assert step["source"].startswith(stamp) and "load 1.0 -> 2.0" in step["source"]
    assert "least squares over 48 engine steps of 2 closed-loop cells" in step["source"]
    assert step["source"].endswith("+ answer_s*answers leaving")
    assert layout["step_split_tokens"]["value"] == 128
    assert layout["step_alone_factor"]["value"] == pytest.approx(0.8)
    # the ways in and back grow with the calls outstanding (trajectories per worker x busy
    # workers): in: 0.01, 0.03, 0.02 s with 8 outstanding, 0.03 s with 8 (alone: 8 x 1)
    assert layout["request_in_s"]["value"] == pytest.approx(0.0225)
    assert layout["request_in_s_per_call"]["value"] == 0.0  # all at 8: no slope to see
    assert layout["request_out_s"]["value"] == pytest.approx(0.03)
    # their spreads, from the cells with every worker busy: in 0.01 and 0.03 around 0.02 and
    # 0.02 alone (the idle-worker cell's 0.03 is not among them); out one call a cell
    assert layout["request_in_spread"]["quantiles"] == [0.5] * 7 + [1.0] * 6 + [1.5] * 7
    assert layout["request_out_spread"]["quantiles"] == [1.0] * 20
    assert "quantiles of generate calls, sent to arrived" in layout["request_in_spread"]["source"]
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
    assert layout["train_together_factor"]["value"] == pytest.approx(1.5)
    assert "on all 2 workers at once" in layout["train_together_factor"]["source"]
    assert (
        "2 training steps through Ray with the serving workers idle"
        in (layout["train_alone_factor"]["source"])
    )
    assert layout["offload_s"]["value"] == pytest.approx(0.004)
    # 0.10.0: the driver's own work a turn, its busy seconds (not its CPU) over its turns
    assert layout["driver_turn_s"]["value"] == pytest.approx(1.2e-4)
    assert layout["driver_turn_s"]["source"].endswith(
        "the run's driver busy (not waiting) 0.012 s over 4 timeshare steps of 100 turns"
        " (CPU 90 us a turn)"
    )
    assert layout["reload_s"]["value"] == pytest.approx(0.003)
    for key, figure in layout.items():
        assert figure["source"].startswith(stamp), key
    # the simulator's cost section gets the step model and the round trips from it
    costs = layout_costs({"layout": layout})
    assert costs["step_token_s"]["value"] == step["token_s"]
    assert costs["step_token_s"]["source"] == f"{step['source']}: token_s"
    assert costs["env_call_s"] == layout["env_call_s"] and costs["sync_s"] == layout["sync_s"]
    assert costs["step_pass_s"]["value"] == step["pass_s"]
    assert costs["step_answer_s"]["value"] == step["answer_s"]
    assert costs["env_call_s_per_env_step"] == layout["env_call_s_per_env_step"]
    assert costs["train_alone_factor"] == layout["train_alone_factor"]
    assert costs["train_together_factor"] == layout["train_together_factor"]
    assert costs["step_split_tokens"] == layout["step_split_tokens"]
    assert costs["driver_turn_s"] == layout["driver_turn_s"]
    for key in ("request_in_spread", "request_out_spread"):
        assert costs[key] == layout[key]
        assert Spread(**costs[key]).quantiles == tuple(layout[key]["quantiles"])
    assert layout_costs({}) == {}
    # a profile measured before passes and answers were (calibrate 0.2.0): as it ran
    old = dict(layout, step={k: v for k, v in step.items() if k not in ("pass_s", "answer_s")})
    for key in ("step_split_tokens", "request_in_spread", "request_out_spread"):
        del old[key]
    del old["train_together_factor"]
    del old["driver_turn_s"]
    costs = layout_costs({"layout": old})
    assert "step_pass_s" not in costs and "step_split_tokens" not in costs
    assert "step_answer_s" not in costs and "request_in_spread" not in costs
    assert "train_together_factor" not in costs and "driver_turn_s" not in costs
    assert "driver" not in layout_summary(old)
    # samples without a driver (calibrate 0.9, or `driver_steps=0`) or without a turn in it:
    # no figure
    assert "driver_turn_s" not in fit_layout(_layout() | {"driver": None})
    idle = {"mode": "m", "steps": 1, "turns": 0, "busy_s": 0.1, "cpu_s": 0.1}
    assert "driver_turn_s" not in fit_layout(_layout() | {"driver": idle})
    # samples measured before training together was (calibrate 0.7): no factor
    assert "train_together_factor" not in fit_layout(
        {k: v for k, v in _layout().items() if k != "train_together"}
    )
    assert costs["step_join_s"]["value"] == step["join_s"]
    # the line `rlsched calibrate` prints
    line = layout_summary(layout)
    assert line.startswith("in the run's layout: step 10.00 ms + 1.000 ms/row")
    assert "2.000 ms/join + 3.00 ms/second pass + 0.500 ms/answer (x0.80 alone)" in line
    assert "environment call 4.0 ms + 2.00 ms per environment step in flight" in line
    assert line.endswith("reload 3.0 ms; driver 120 us a turn")
    # an engine that never splits (the recompute engine): no split figure
    assert "step_split_tokens" not in fit_layout(_layout() | {"split_tokens": None})
    # steps that took no time: every term 0, and the alone factor cannot be told (1)
    idle = _layout()
    for cell in idle["cells"]:
        cell["steps"] = [[*step[:4], 0.0, *step[5:]] for step in cell["steps"]]
    fitted = fit_layout(idle)
    assert [fitted["step"][k] for k in terms] == [0.0] * 7
    assert fitted["step_alone_factor"]["value"] == 1.0
    # cells whose ways were never timed: no spread to draw from
    bare = _layout()
    for cell in bare["cells"]:
        cell["in_s"], cell["out_s"] = [], []
    bare["cells"][0]["in_s"] = bare["cells"][0]["out_s"] = [0.0]
    fitted = fit_layout(bare)
    assert "request_in_spread" not in fitted and "request_out_spread" not in fitted


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


def test_calibrate_writes_the_profile_and_prints_its_fits(tmp_path: Path) -> None:
    """The command end to end on the tiny config (a real local Ray cluster, cells of 0.1 s)."""
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump(TINY), encoding="utf-8")
    out = tmp_path / "new" / "dir" / "profile.json"
    args = ["calibrate", str(config), "--out", str(out), "--seconds", "0.1", "--repeats", "1"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    text = out.read_text(encoding="utf-8")
    profile = json.loads(text)
    assert text.startswith('{\n  "')  # indented for a reader
    samples = profile["samples"]["layout"]
    assert profile["layout"] == fit_layout(samples)
    assert profile["layout"]["step"]["answer_s"] >= 0.0
    lines = [line for line in result.output.splitlines() if "WARNING" not in line]
    assert lines[0].startswith("decode step ")
    assert lines[1] == layout_summary(profile["layout"])
    assert lines[2].startswith(f"profile: {out} (")
    assert lines[2].endswith(f"s, load {profile['load_after'][0]})")
    # without the layout: the one-process figures only
    flat = tmp_path / "flat.json"
    args = ["calibrate", str(config), "--out", str(flat), "--no-layout", "--repeats", "1"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert "layout" not in json.loads(flat.read_text(encoding="utf-8"))
    assert "in the run's layout" not in result.output
