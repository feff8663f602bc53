"""Step 15 of design/rlsched_runtime.md: the bench's configs, fits and simulator check."""

import json
from pathlib import Path

import pytest
import ray
from runtime_parts import start_ray, tiny

from rlsched.runtime.bench import bench_mode, fit_line, mode_config, sim_config
from rlsched.sim.params import load_sim_config


def test_mode_configs_differ_only_in_the_mode() -> None:
    cfg = tiny()
    colo, dis, ts = (mode_config(cfg, m) for m in ("colocate", "disaggregated", "timeshare"))
    assert colo.devices.train is None and list(colo.train_devices()) == [0, 1]
    assert dis.devices.train == 1 and dis.scheduler.mode == "disaggregated"
    assert ts.scheduler == cfg.scheduler and ts.model == cfg.model and ts.run.eval_episodes == 0
    with pytest.raises(ValueError, match="VAL_IN_SET"):
        mode_config(cfg, "static")


def test_fit_line() -> None:
    assert fit_line([1.0, 2.0, 3.0], [3.0, 5.0, 7.0]) == pytest.approx((1.0, 2.0))
    assert fit_line([2.0, 2.0], [1.0, 3.0]) == (2.0, 0.0)
    assert fit_line([1.0, 2.0], [5.0, 1.0]) == (3.0, 0.0)  # no negative slope


def test_a_real_mode_and_its_simulation(tmp_path: Path) -> None:
    start_ray()
    try:
        result = bench_mode(tiny(), "timeshare", 3, tmp_path, sim=True)
    finally:
        ray.shutdown()
    assert result["mode"] == "timeshare" and result["step_time_s"] > 0
    assert result["accounting"]["trained"] == 48
    assert result["sim_step_time_s"] > 0 and abs(result["sim_error"]) < 10
    # the figures come from the run's own rows (timeshare.jsonl): the last row's clock
    # over the steps, the trajectories over that clock
    rows = [json.loads(line) for line in (tmp_path / "timeshare.jsonl").read_text().splitlines()]
    rows = [r for r in rows if "step" in r]
    assert [r["step"] for r in rows] == [1, 2, 3]
    assert result["step_time_s"] == round(rows[-1]["time_s"] / 3, 3)
    per_s = sum(r["trajectories"] for r in rows) / rows[-1]["time_s"]
    assert result["trajectories_per_s"] == round(per_s, 2)
    # the simulator's step time over the real one, less 1
    error = round(result["sim_step_time_s"] / result["step_time_s"] - 1.0, 4)
    assert result["sim_error"] == error
    text = (tmp_path / "timeshare.sim.json").read_text()
    data = json.loads(text)
    assert text == json.dumps(data, indent=2)  # written for people to read
    sim = load_sim_config(data)
    assert sim.cost.decode_rank_tokens_per_s.value > 0 and not sim.cost.prefix_cache
    assert sim_config(tiny(), data["cost"], tmp_path / "timeshare.trace.jsonl", 3) == data
