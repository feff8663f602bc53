"""Step 14 of design/rlsched_runtime.md: `rlsched run`."""

from pathlib import Path

import ray
import yaml
from click.testing import CliRunner
from runtime_parts import TINY

from rlsched.runtime.cli import format_row, run


def test_run_prints_steps_evaluation_and_accounting(tmp_path: Path) -> None:
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump({**TINY, "run": {"steps": 1, "eval_episodes": 4}}))
    out = CliRunner().invoke(
        run, [str(config), "--json", str(tmp_path / "m.jsonl"), "--plot", str(tmp_path / "t.png")]
    )
    assert out.exit_code == 0, out.output
    assert "timeshare, 2 devices (1 train)" in out.output and "step   1" in out.output
    assert "eval before" in out.output and "eval after" in out.output
    assert "accounting" in out.output and (tmp_path / "t.png").is_file()
    assert not ray.is_initialized()


def test_a_bad_config_exits_2_naming_the_key_before_anything_starts(tmp_path: Path) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text(yaml.safe_dump({**TINY, "scheduler": {"bogus": 1}, "train": {"lr": 0}}))
    out = CliRunner().invoke(run, [str(config)])
    assert out.exit_code == 2 and not ray.is_initialized()
    assert f"{config}: scheduler.bogus" in out.output and f"{config}: train.lr" in out.output


def test_format_row() -> None:
    row = {
        "step": 3,
        "mean_reward": 0.5,
        "mean_episode_len": 4.0,
        "step_time_s": 1.25,
        "utilisation": 0.8,
        "shrink_s": 0.1,
        "expand_s": None,
        "staleness_mean": 0.5,
        "failed": 2,
    }
    line = format_row(row)
    assert "step   3" in line and "util 80.0%" in line and "expand -" in line and "failed 2" in line
