"""Step 17 of design/rlsched_sim.md: `rlsched sim` end to end."""

import json
from pathlib import Path

from click.testing import CliRunner

from rlsched.sim.cli import sim

ROOT = Path(__file__).resolve().parents[2]
FOUR = str(ROOT / "examples" / "four_gpu.yaml")


def test_sim_writes_report_picture_and_trace(tmp_path: Path) -> None:
    out, png, trace = tmp_path / "o.json", tmp_path / "o.png", tmp_path / "o.trace.json"
    result = CliRunner().invoke(
        sim,
        [
            FOUR,
            "--steps",
            "2",
            "--jobs",
            "1",
            "--json",
            str(out),
            "--plot",
            str(png),
            "--trace",
            str(trace),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "fraction of ideal" in result.output
    document = json.loads(out.read_text())
    assert document["steps"] == 2 and set(document["policies"]) == {
        "colocate",
        "disaggregated",
        "timeshare",
    }
    assert png.read_bytes()[:4] == b"\x89PNG" and json.loads(trace.read_text())["traceEvents"]


def test_policy_selection_and_seed() -> None:
    result = CliRunner().invoke(
        sim, [FOUR, "--steps", "1", "-p", "timeshare,colocate", "--seed", "5", "--jobs", "1"]
    )
    assert result.exit_code == 0, result.output
    assert "timeshare" in result.output and "disaggregated" not in result.output
    bad = CliRunner().invoke(sim, [FOUR, "-p", "fastest"])
    assert bad.exit_code == 2 and "unknown policy fastest" in bad.output


def test_bad_config_lists_every_problem_and_writes_nothing(tmp_path: Path) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text(
        "devices: {count: 4}\npolicies: {a: {mode: fastest}}\ncost: {}\nworkload: {}\n"
    )
    out = tmp_path / "never.json"
    result = CliRunner().invoke(sim, [str(config), "--json", str(out)])
    assert result.exit_code == 1
    assert f"{config}:2:" in result.output and ": policies.a.mode: " in result.output
    assert f"{config}:3:1: cost.sync_s: Field required" in result.output
    assert not out.exists()


def test_a_missing_or_directory_config_is_one_line(tmp_path: Path) -> None:
    for config in (tmp_path / "nope.yaml", tmp_path):
        result = CliRunner().invoke(sim, [str(config)])
        assert result.exit_code == 1
        assert result.output.startswith(f"{config}: cannot read: ")
        assert len(result.output.splitlines()) == 1, result.output
