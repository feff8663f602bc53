"""Step 14 of design/rlsched_runtime.md: `rlsched run`."""

from pathlib import Path

import ray
import yaml
from click.testing import CliRunner
from runtime_parts import TINY

from rlsched.runtime.cli import format_row, run
from rlsched.runtime.config import EXAMPLE, load_run_config


def test_run_prints_steps_evaluation_and_accounting(tmp_path: Path) -> None:
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump({**TINY, "run": {"steps": 1, "eval_episodes": 4}}))
    out = CliRunner().invoke(
        run, [str(config), "--json", str(tmp_path / "m.jsonl"), "--plot", str(tmp_path / "t.png")]
    )
    assert out.exit_code == 0, out.output
    assert "timeshare, 2 devices (1 train)" in out.output
    # not a terminal: one line per step, not wrapped at 80 columns
    assert any(x.startswith("step   1") and x.endswith("failed 0") for x in out.output.splitlines())
    assert "eval before" in out.output and "eval after" in out.output
    assert "accounting" in out.output and (tmp_path / "t.png").is_file()
    assert not ray.is_initialized()


def test_a_bad_config_exits_2_naming_the_key_before_anything_starts(tmp_path: Path) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text(yaml.safe_dump({**TINY, "scheduler": {"bogus": 1}, "train": {"lr": 0}}))
    out = CliRunner().invoke(run, [str(config)])
    assert out.exit_code == 2 and not ray.is_initialized()
    lines = out.output.splitlines()
    assert any(
        line.startswith(f"{config}:") and ": scheduler.bogus: unknown key" in line for line in lines
    )
    assert any(line.startswith(f"{config}:") and ": train.lr: " in line for line in lines)


def test_a_yaml_syntax_error_is_one_line_with_its_position(tmp_path: Path) -> None:
    config = tmp_path / "broken.yaml"
    config.write_text("devices: {count: 2\nscheduler: [\n")
    out = CliRunner().invoke(run, [str(config)])
    assert out.exit_code == 2 and not ray.is_initialized()
    [line] = out.output.splitlines()
    assert line.startswith(f"{config}:2:") and ": not valid YAML: " in line


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


def test_print_config_prints_a_config_that_loads_back(tmp_path: Path) -> None:
    out = CliRunner().invoke(run, ["--print-config"])
    assert out.exit_code == 0 and yaml.safe_load(out.output) == EXAMPLE
    assert not ray.is_initialized()
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump(TINY))
    out = CliRunner().invoke(run, [str(config), "--print-config"])
    assert out.exit_code == 0, out.output
    resolved = yaml.safe_load(out.output)
    assert resolved["run"]["worker_restarts"] == 2  # defaults spelled out
    assert load_run_config(resolved) == load_run_config(TINY)


def test_a_vllm_engine_without_a_gpu_is_refused_in_one_line(tmp_path: Path) -> None:
    import torch

    if torch.cuda.is_available():
        return  # the refusal is for machines without a GPU
    config = tmp_path / "vllm.yaml"
    config.write_text(yaml.safe_dump({**TINY, "rollout": {"engine": "vllm"}}))
    out = CliRunner().invoke(run, [str(config)])
    assert out.exit_code == 2 and not ray.is_initialized()
    message = "rollout.engine: vllm needs a CUDA GPU and none is usable here"
    assert out.output == f"{config}: {message} (use engine: kv)\n"


def test_help_everywhere() -> None:
    from rlsched.cli import cli

    out = CliRunner().invoke(cli, ["run", "-h"])
    assert out.exit_code == 0 and "--print-config" in out.output and "--ray-timeline" in out.output


def test_a_run_that_fails_exits_1_with_one_line(tmp_path: Path, monkeypatch) -> None:
    """The environment pool's process dies at the first environment step (steps/dying_env.py):
    `rlsched run` stops with exit status 1 and one `rlsched run: ...` line naming the fault."""
    import os

    steps = str(Path(__file__).resolve().parents[1])
    monkeypatch.syspath_prepend(steps)
    # the Ray workers started by the run import the environment from there too: the run
    # starts its own cluster, whose workers see this environment (a shared one's do not)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([steps, os.environ.get("PYTHONPATH", "")]))
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    config = tmp_path / "dying.yaml"
    data = {**TINY, "env": {"name": "dying_env:DyingGrid"}, "run": {"steps": 1, "eval_episodes": 0}}
    config.write_text(yaml.safe_dump(data))
    out = CliRunner().invoke(run, [str(config)])
    assert out.exit_code == 1, out.output
    assert "rlsched run: the environment pool died: " in out.output
    assert not ray.is_initialized()


def test_a_missing_config_or_a_misspelt_env_argument_is_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    out = CliRunner().invoke(run, [str(missing)])
    assert out.exit_code == 2 and out.output.startswith(f"{missing}: cannot read: ")
    assert out.output.count("\n") == 1
    config = tmp_path / "typo.yaml"
    env = {"name": "recall", "kwargs": {"widht": 6}}
    config.write_text(yaml.safe_dump({**TINY, "env": env}))
    out = CliRunner().invoke(run, [str(config)])
    assert out.exit_code == 2 and out.output.count("\n") == 1
    assert "env.kwargs.widht: unknown key 'widht'; did you mean 'width'?" in out.output
    assert not ray.is_initialized()
