"""Step 15 of design/rlsched_sim.md: the report: table, JSON, pictures, description."""

import json
from pathlib import Path

from rich.console import Console

from rlsched.sim.params import load_sim_config
from rlsched.sim.report import describe, print_comparison, report, write_json, write_pictures
from rlsched.sim.runner import ideal_of, run_policies

ROOT = Path(__file__).resolve().parents[2]
FIELDS = {
    "step_time_s",
    "rollout_tokens_per_s",
    "trajectories_per_h",
    "utilization",
    "fraction_of_ideal",
    "tail_latency_s",
    "timeouts",
    "stale_dropped",
    "discarded_tokens",
    "train_devices_rollout_share",
}


def test_json_report_has_every_field(tmp_path: Path) -> None:
    sim = load_sim_config(ROOT / "examples" / "four_gpu.yaml")
    runs = run_policies(sim, list(sim.policies), 2)
    ideal = ideal_of(sim, 2)
    path = tmp_path / "out.json"
    write_json(report(sim, runs, ideal, 2), path)
    document = json.loads(path.read_text())
    assert set(document["policies"]) == {"colocate", "disaggregated", "timeshare"}
    for figures in document["policies"].values():
        assert FIELDS <= figures.keys()
    assert {"step_time_s", "rollout_tokens_per_s", "trajectories_per_h"} <= document["ideal"].keys()
    assert document["parameters"]["cost"]["sync_s"]["source"] == "illustrative"
    console = Console(record=True, width=140)
    print_comparison(console, sim, runs, ideal, 2)
    text = console.export_text()
    assert "fraction of ideal" in text and "device time by activity" in text
    assert "fraction of bound" in text and "prefill per decoded token" in text
    write_pictures(runs, tmp_path / "t.png", tmp_path / "t.json", "four")
    assert (tmp_path / "t.png").stat().st_size > 5_000
    assert json.loads((tmp_path / "t.json").read_text())["traceEvents"]


def test_describe_lists_every_parameter_with_its_source() -> None:
    lines = describe(load_sim_config(ROOT / "examples" / "paper_160gpu.yaml"))
    assert any("policy timeshare: timeshare, 128 training devices" in line for line in lines)
    assert any(line.strip().startswith("sync_s = 10.0  [estimate:") for line in lines)
    assert sum("[" in line for line in lines) == 14  # 8 cost numbers and 6 workload entries
