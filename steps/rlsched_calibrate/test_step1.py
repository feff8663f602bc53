"""Step 1 of design/rlsched_calibrate.md: micro-runs, fits and the profile (no timing bounds)."""

import json
import statistics
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from runtime_parts import TINY

from rlsched.cli import cli
from rlsched.runtime.bench import fit_line
from rlsched.runtime.calibrate import (
    decode_step_s,
    fit_decode,
    layout_costs,
    profile_costs,
    time_decode,
)
from rlsched.runtime.config import load_run_config
from rlsched.sim.params import load_sim_config

FIGURES = ("prefill_s_per_token", "train_fixed_s", "train_s_per_token", "sync_s")
FIGURES += ("offload_s", "reload_s")


def sse(samples: list[dict[str, float]], coef: tuple[float, float, float]) -> float:
    a, r, c = coef
    return sum(
        (a + r * s["batch"] + c * s["batch"] * s["context"] - s["step_s"]) ** 2 for s in samples
    )


def test_fit_decode_recovers_a_known_model_and_stays_non_negative() -> None:
    samples = [
        {"batch": b, "context": c, "step_s": 0.002 + 0.0003 * b + 1e-6 * b * c}
        for b in (1, 4, 16)
        for c in (16.0, 96.0)
    ]
    assert fit_decode(samples) == pytest.approx((0.002, 0.0003, 1e-6), rel=1e-6)
    # a per-request cost that falls with the batch is no cost: clipped, the rest refitted
    falling = [
        {"batch": b, "context": 10.0, "step_s": 0.01 - 0.0001 * b + 1e-5 * b * 10}
        for b in (1, 2, 8)
    ]
    fixed, per_request, per_context = fit_decode(falling)
    assert per_request == 0.0 and fixed > 0 and per_context >= 0
    # the per-request cost clipped, the per-context-token cost refitted beside the fixed one
    cells = [(b, c) for b in (1, 2, 8) for c in (10.0, 100.0)]
    falls = [
        {"batch": b, "context": c, "step_s": 0.01 - 0.0002 * b + 2e-6 * b * c} for b, c in cells
    ]
    fixed, per_request, per_context = fit_decode(falls)
    assert per_request == 0.0 and fixed > 0 and per_context > 0
    # a negative fixed cost clipped: the rest refitted, not given up
    rising = [{"batch": b, "context": c, "step_s": -0.001 + 0.001 * b} for b, c in cells]
    fixed, per_request, per_context = fit_decode(rising)
    assert fixed == 0.0 and per_request > 0
    # nothing left to fit (every figure falls): no cost at all
    assert fit_decode([{"batch": b, "context": c, "step_s": -0.01} for b, c in cells]) == (
        0.0,
        0.0,
        0.0,
    )
    with pytest.raises(ValueError, match="VAL_NON_EMPTY"):
        fit_decode([])


def test_calibrate_writes_a_profile_that_reproduces_its_samples(tmp_path: Path) -> None:
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump(TINY), encoding="utf-8")
    out = tmp_path / "profile.json"
    result = CliRunner().invoke(
        cli, ["calibrate", str(config), "--out", str(out), "--repeats", "1", "--no-layout"]
    )
    assert result.exit_code == 0, result.output
    assert "decode step" in result.output and f"profile: {out}" in result.output
    assert "layout" not in result.output
    profile = json.loads(out.read_text())
    assert "layout" not in profile and "layout" not in profile["samples"]
    stamp = f"measured by rlsched calibrate on {profile['host']} at {profile['created']}"
    engine = load_run_config(TINY).rollout.engine
    assert profile["engine"] == engine and profile["prefix_cache"] is (engine == "kv")
    assert len(profile["load_before"]) == 3 and len(profile["load_after"]) == 3
    for key in FIGURES:
        assert profile[key]["value"] >= 0 and profile[key]["source"].startswith(stamp), key
    assert profile["decode"]["source"].startswith(stamp)
    samples = profile["samples"]
    assert {(s["batch"], round(s["context"] - 3.5)) for s in samples["decode"]} == {
        (b, c) for b in (1, 4, 16) for c in (16, 96)
    }
    assert all(s["step_s"] > 0 and s["first_step_s"] > 0 for s in samples["decode"])
    # prefill: the first step's excess per context token fed (KV engine); the recompute engine
    # has no cache and counts every context token in decode
    prefill = statistics.median(
        max(s["first_step_s"] - s["step_s"], 0.0) / (s["batch"] * s["context"])
        for s in samples["decode"]
    )
    assert profile["prefill_s_per_token"]["value"] == (prefill if engine == "kv" else 0.0)
    # the decode fit is the least-squares fit of its own samples: no nearby model fits better
    d = profile["decode"]
    coef = (d["fixed_s"], d["per_request_s"], d["per_context_token_s"])
    assert coef == pytest.approx(fit_decode(samples["decode"]))
    best = sse(samples["decode"], coef)
    for i in range(3):
        for scale in (0.9, 1.1):
            other = tuple(x * scale if j == i else x for j, x in enumerate(coef))
            assert best <= sse(samples["decode"], other) * (1 + 1e-9)  # type: ignore[arg-type]
    for s in samples["decode"]:
        assert decode_step_s(profile, s["batch"], s["context"]) == pytest.approx(
            coef[0] + coef[1] * s["batch"] + coef[2] * s["batch"] * s["context"]
        )
    train = samples["train"]
    assert [s["tokens"] for s in train] == [4 * 24, 8 * 48, 16 * 96]
    assert (profile["train_fixed_s"]["value"], profile["train_s_per_token"]["value"]) == (
        pytest.approx(fit_line([float(s["tokens"]) for s in train], [s["train_s"] for s in train]))
    )
    for key in ("sync_s", "offload_s", "reload_s"):
        assert profile[key]["value"] == statistics.median(samples[key])
    # the simulator's cost section at an operating point, accepted by its loader
    cost = profile_costs(profile, 8.0, 40.0, "test")
    assert cost["decode_request_tokens_per_s"]["value"] == pytest.approx(
        1.0 / decode_step_s(profile, 1.0, 40.0)
    )
    assert cost["decode_rank_tokens_per_s"]["value"] == pytest.approx(
        8.0 / decode_step_s(profile, 8.0, 40.0)
    )
    assert "at batch 8.0, context 40 (test)" in cost["decode_rank_tokens_per_s"]["source"]
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
    assert sim.cost.train_s_per_token.value == profile["train_s_per_token"]["value"]
    assert sim.cost.step_fixed_s is None and sim.cost.env_call_s is None  # no layout measured


def test_a_bad_config_is_one_line(tmp_path: Path) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text("devices: {count: 0}\n", encoding="utf-8")
    result = CliRunner().invoke(cli, ["calibrate", str(config), "--out", str(tmp_path / "p")])
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert not (tmp_path / "p").exists()


def test_layout_costs_passes_each_layout_figure_the_simulator_takes() -> None:
    """The step model's terms under their cost names, every other figure as measured; a
    figure the layout lacks is left out (older profiles), and no layout gives nothing."""
    names = ("request_in_s", "request_out_s", "env_call_s", "request_in_s_per_call")
    names += ("request_out_s_per_call", "env_call_s_per_call", "env_call_s_per_env_step")
    names += ("train_fixed_s", "train_s_per_token", "sync_s", "offload_s", "reload_s")
    names += ("step_alone_factor", "step_split_tokens", "train_alone_factor")
    names += ("train_together_factor", "driver_turn_s")
    layout = {name: {"value": i + 0.5, "source": f"s{i}"} for i, name in enumerate(names)}
    layout["request_in_spread"] = {"quantiles": [0.5, 1.5], "source": "spread"}
    layout["step"] = {"fixed_s": 0.01, "answer_s": 0.002, "source": "fit"}
    costs = layout_costs({"layout": layout})
    assert costs["step_fixed_s"] == {"value": 0.01, "source": "fit: fixed_s"}
    assert costs["step_answer_s"] == {"value": 0.002, "source": "fit: answer_s"}
    assert "step_token_s" not in costs and "request_out_spread" not in costs
    assert {name: costs[name] for name in names} == {name: layout[name] for name in names}
    assert costs["request_in_spread"] == layout["request_in_spread"]
    assert len(costs) == len(names) + 3
    assert layout_costs({}) == {} and layout_costs({"layout": None}) == {}


def test_a_decode_cell_times_its_requests_first_step_and_its_decode_steps() -> None:
    """`time_decode` submits its batch, times one step with the prefill and `steps` more,
    then aborts what is left: the engine ran every one of them over the whole batch."""
    from rlsched.engines.base import Sampling
    from rlsched.engines.factory import make_engine
    from rlsched.envs.base import resolve_env
    from rlsched.model import action_token_ids, load_tokenizer

    cfg = load_run_config(TINY)
    env_cls = resolve_env(cfg.env.name)
    tok = load_tokenizer(cfg.model, env_cls.words)
    allowed = tuple(action_token_ids(tok, env_cls.actions))
    engine = make_engine("kv", cfg.model, tok.get_vocab_size(), 8, 0)
    sample = time_decode(engine, 3, 10, 4, Sampling(1.0, allowed, ()), 2)
    assert engine.forward_passes == 5 and engine.tokens_padded >= 3 * 10 + 4 * 3
    assert sample["batch"] == 3 and sample["context"] == 10 + 5 / 2
    assert sample["step_s"] > 0 and sample["first_step_s"] > 0
    assert engine.num_active == 0 and engine.step() == []  # the rest aborted, none left
