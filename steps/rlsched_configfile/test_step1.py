"""Step 1 of design/rlsched_configfile.md: key paths to lines, YAML errors located, kinds."""

from pathlib import Path

import pytest

from rlsched.config import ConfigError, RlschedConfig
from rlsched.configfile import config_kind, key_marks, model_for, read_yaml

TEXT = """\
devices:
  count: 4
scheduler:
  mode: timeshare
  shrink:
    fraction: 0.5
stop_words: [a, b]
"""


def test_every_key_and_list_item_has_its_line_and_column() -> None:
    marks = key_marks(TEXT)
    assert marks[("devices",)] == (1, 1) and marks[("devices", "count")] == (2, 3)
    assert marks[("scheduler", "shrink", "fraction")] == (6, 5)
    assert marks[("stop_words", "1")] == (7, 17)
    assert key_marks("") == {}


def test_invalid_yaml_is_one_located_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("devices:\n  count: 4\n scheduler: [\n")
    with pytest.raises(ConfigError) as info:
        read_yaml(path)
    [line] = info.value.problems
    assert line.startswith(f"{path}:3:") and ": not valid YAML: " in line
    assert str(info.value) == line
    path.write_text("devices: {count: 2, train: 1\nscheduler:\n  mode: timeshare\n")
    with pytest.raises(ConfigError) as info:  # noticed at the next key: where it began too
        read_yaml(path)
    assert info.value.problems == [
        f"{path}:2:10: not valid YAML: expected ',' or '}}', but got ':' "
        "(while parsing a flow mapping that began at 1:10)"
    ]
    good = tmp_path / "good.yaml"
    good.write_text(TEXT)
    data, marks = read_yaml(good)
    assert data["scheduler"]["shrink"] == {"fraction": 0.5} and marks[("devices",)] == (1, 1)


def test_kinds_by_their_keys() -> None:
    assert config_kind({"devices": {}, "policies": {}}) == "sim"
    assert config_kind({"devices": {}, "rollout": {}}) == "run"
    assert config_kind({"devices": {}}) == "scheduler" and config_kind([1]) == "scheduler"
    assert model_for("scheduler") is RlschedConfig
    assert model_for("run").__name__ == "RunConfig" and model_for("sim").__name__ == "SimConfig"
    with pytest.raises(ValueError):
        model_for("nope")
