"""Step 2 of design/rlsched_configfile.md: one loader for the three kinds, problems located,
unknown keys named with the key meant."""

from pathlib import Path

import pytest
import yaml

from rlsched.config import ConfigError
from rlsched.configfile import describe_run_config, known_keys, load_config_file, model_for

REPO = Path(__file__).resolve().parents[2]


def test_known_keys_follow_nested_models_optionals_and_mappings() -> None:
    run = model_for("run")
    assert "staleness" in known_keys(run, ("scheduler",))
    assert "fraction" in known_keys(run, ("scheduler", "shrink"))
    assert "drafter" in known_keys(run, ("rollout", "speculative"))  # SpecSettings | None
    assert known_keys(run, ("env", "kwargs")) == []  # free-form
    sim = model_for("sim")
    name = next(iter(yaml.safe_load((REPO / "examples/four_gpu.yaml").read_text())["policies"]))
    assert "mode" in known_keys(sim, ("policies", name))  # through dict values
    assert known_keys(run, ("nope",)) == []


@pytest.mark.parametrize(
    "path",
    sorted([*(REPO / "examples").glob("*.yaml"), *(REPO / "examples" / "run").glob("*.yaml")]),
    ids=lambda p: p.name,
)
def test_every_shipped_config_loads_as_its_kind(path: Path) -> None:
    kind, config = load_config_file(path)
    expected = "run" if path.parent.name == "run" else None
    assert kind == expected or (expected is None and kind in ("scheduler", "sim"))
    if kind == "run":
        lines = describe_run_config(config)
        assert lines[0].startswith("  model ") and lines[-1].startswith("  run ")


def test_problems_name_file_line_column_and_the_key_meant(tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    path.write_text(
        "devices:\n"
        "  count: 2\n"
        "  train: 1\n"
        "scheduler:\n"
        "  stalenes: 1\n"
        "  train_batch_size: 0\n"
        "rollout:\n"
        "  temprature: 1.0\n"
        "  zzzz: 3\n"
    )
    with pytest.raises(ConfigError) as info:
        load_config_file(path)
    problems = info.value.problems
    assert (
        f"{path}:5:3: scheduler.stalenes: unknown key 'stalenes'; did you mean 'staleness'?"
        in problems
    )
    assert (
        f"{path}:8:3: rollout.temprature: unknown key 'temprature'; did you mean 'temperature'?"
        in problems
    )
    assert any(p.startswith(f"{path}:6:3: scheduler.train_batch_size: ") for p in problems)
    assert any(
        p.startswith(f"{path}:9:3: rollout.zzzz: unknown key 'zzzz' (allowed: engine")
        for p in problems
    )
    assert all("\n" not in p for p in problems) and str(info.value).count("\n") == len(problems) - 1


def test_a_kind_asked_for_is_checked_as_that_kind(tmp_path: Path) -> None:
    path = tmp_path / "sched.yaml"
    path.write_text("devices:\n  count: 4\n  train: 2\nscheduler:\n  max_tokens: 512\n")
    assert load_config_file(path)[0] == "scheduler"
    kind, config = load_config_file(path, "run")  # a scheduler config is a run config too
    assert kind == "run" and config.rollout.engine == "kv"  # the defaults fill the rest
    with pytest.raises(ConfigError) as info:
        load_config_file(path, "sim")
    assert all(p.startswith(f"{path}:") for p in info.value.problems)
    run = tmp_path / "run.yaml"
    run.write_text("devices: {count: 2, train: 1}\nrun: {steps: 3}\n")
    with pytest.raises(ConfigError) as info:
        load_config_file(run, "sim")
    assert info.value.problems == [
        f"{run}: a run config (for rlsched run, bench and calibrate), not a sim config"
    ]
    sim = tmp_path / "sim.yaml"
    sim.write_text("policies: {a: {mode: timeshare}}\n")
    with pytest.raises(ConfigError, match="a sim config \\(for rlsched sim\\), not a run"):
        load_config_file(sim, "run")
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    with pytest.raises(ConfigError) as info:
        load_config_file(empty)
    assert info.value.problems == [f"{empty}:1:1: <root>: expected a mapping, got NoneType"]


def test_a_run_config_without_the_runtime_extra_is_one_line() -> None:
    import subprocess
    import sys

    path = REPO / "examples" / "run" / "tools.yaml"
    code = (
        "import sys\n"
        "sys.modules['torch'] = None  # as if the runtime extra were not installed\n"
        "from rlsched.cli import main\n"
        f"sys.argv = ['rlsched', 'check-config', {str(path)!r}]\n"
        "main()\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 1 and proc.stdout == ""
    (line,) = proc.stderr.splitlines()
    assert line.startswith(f"{path}: checking a run config needs the `runtime` extra (torch")
