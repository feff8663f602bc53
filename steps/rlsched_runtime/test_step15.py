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
    data = json.loads((tmp_path / "timeshare.sim.json").read_text())
    sim = load_sim_config(data)
    assert sim.cost.decode_rank_tokens_per_s.value > 0 and not sim.cost.prefix_cache
    assert sim_config(tiny(), data["cost"], tmp_path / "timeshare.trace.jsonl", 3) == data
