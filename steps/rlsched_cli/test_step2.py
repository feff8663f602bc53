"""Step 2 of design/rlsched_cli.md: `rlsched check-config FILE`, scheduler and simulator configs."""

from pathlib import Path

import pytest
from click.testing import CliRunner

from rlsched.cli import cli

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.yaml"))
SIM_EXAMPLES = [p for p in EXAMPLES if "policies:" in p.read_text()]


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_shipped_examples_are_valid(path: Path) -> None:
    result = CliRunner().invoke(cli, ["check-config", str(path)])
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"{path}: ok")


def test_seed_experiment_resolves_as_described() -> None:
    path = next(p for p in EXAMPLES if p.stem == "timeshare_160")
    out = CliRunner().invoke(cli, ["check-config", str(path)]).output
    assert "mode timeshare, 160 devices (128 train), 8 per rank" in out
    assert "batch 512 trajectories = 64 groups of 8" in out
    assert "shrink after 461 completed" in out  # ceil(0.9 * 512)


def test_every_problem_is_reported_with_its_key_path(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "devices: {count: 8, train: 9}\n"
        "scheduler: {mode: timeshare, train_batch_size: 10, group_size: 4, staleness: 0,"
        " migrate: resume}\n"
    )
    result = CliRunner().invoke(cli, ["check-config", str(bad)])
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert (
        f"{bad}:2:81: scheduler.migrate: unknown key 'migrate'; did you mean 'migration'?" in lines
    )
    assert not any(line.endswith(": ok") for line in lines)


def test_simulator_configs_show_every_parameter_with_its_source() -> None:
    assert SIM_EXAMPLES
    path = next(p for p in SIM_EXAMPLES if p.stem == "paper_160gpu")
    out = CliRunner().invoke(cli, ["check-config", str(path)]).output
    assert out.startswith(f"{path}: ok")
    assert "policy disaggregated: disaggregated, 128 training devices" in out
    assert "decode_rank_tokens_per_s = 4000.0  [GPUStack performance lab" in out


def test_simulator_config_problems_are_listed_with_key_paths(tmp_path: Path) -> None:
    bad = tmp_path / "sim.yaml"
    bad.write_text(
        "devices: {count: 4}\npolicies: {ts: {mode: timeshare, train: 9}}\ncost: {}\nworkload: {}\n"
    )
    result = CliRunner().invoke(cli, ["check-config", str(bad)])
    assert result.exit_code == 1
    assert f"{bad}:3:1: cost.decode_rank_tokens_per_s: Field required" in result.output


def test_invalid_yaml_is_a_problem_not_a_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "broken.yaml"
    bad.write_text("devices: {count: 4\nscheduler: [\n")
    result = CliRunner().invoke(cli, ["check-config", str(bad)])
    assert result.exit_code == 1
    assert result.output.startswith(f"{bad}:2:")
    assert ": not valid YAML: " in result.output and len(result.output.splitlines()) == 1
    assert result.exception is None or isinstance(result.exception, SystemExit)


RUN_EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples" / "run").glob("*.yaml"))


@pytest.mark.parametrize("path", RUN_EXAMPLES, ids=[p.stem for p in RUN_EXAMPLES])
def test_every_shipped_run_config_is_accepted_and_described(path: Path) -> None:
    result = CliRunner().invoke(cli, ["check-config", str(path)])
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"{path}: ok")
    assert "  rollout engine " in result.output and "  run " in result.output


def test_a_run_config_problem_names_its_line_and_the_key_meant(tmp_path: Path) -> None:
    bad = tmp_path / "run.yaml"
    bad.write_text("devices: {count: 2, train: 1}\nrun:\n  step: 3\n")
    result = CliRunner().invoke(cli, ["check-config", str(bad)])
    assert result.exit_code == 1
    assert result.output == f"{bad}:3:3: run.step: unknown key 'step'; did you mean 'steps'?\n"


def test_a_file_that_is_not_a_mapping_or_not_yaml_is_one_clear_line(tmp_path: Path) -> None:
    listed = tmp_path / "list.yaml"
    listed.write_text("- 1\n- 2\n")
    result = CliRunner().invoke(cli, ["check-config", str(listed)])
    assert (result.exit_code, result.output) == (
        1,
        f"{listed}:1:1: <root>: expected a mapping, got list\n",
    )
    broken = tmp_path / "broken.yaml"
    broken.write_text("devices:\n  count: [1\n")
    result = CliRunner().invoke(cli, ["check-config", str(broken)])
    assert result.exit_code == 1
    assert result.output.startswith(f"{broken}:3:1: not valid YAML: ")
    directory = CliRunner().invoke(cli, ["check-config", str(tmp_path)])
    assert directory.exit_code == 1 and directory.output.count("\n") == 1
    assert directory.output.startswith(f"{tmp_path}: cannot read: ")


def test_many_files_at_once_each_reported_and_a_missing_one_in_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    result = CliRunner().invoke(
        cli, ["check-config", str(EXAMPLES[0]), str(missing), str(tmp_path)]
    )
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert lines[0] == f"{EXAMPLES[0]}: ok"
    assert [line.split(": cannot read: ")[0] for line in lines if "cannot read" in line] == [
        str(missing),
        str(tmp_path),
    ]
    assert not any(line.startswith(("Usage:", "Error:")) for line in lines)
    every = [*EXAMPLES, *sorted((EXAMPLES[0].parent / "run").glob("*.yaml"))]
    ok = CliRunner().invoke(cli, ["check-config", *map(str, every)])
    assert ok.exit_code == 0 and ok.output.count(": ok\n") == len(every) > len(EXAMPLES)
