"""Step 2 of design/rlsched_config.md: cross-field rules and a loader whose errors name the key."""

from pathlib import Path

import pytest

from rlsched.config import ConfigError, RlschedConfig, cross_field_problems, load_config

GOOD = """
devices: {count: 8, train: 2}
scheduler: {mode: timeshare, train_batch_size: 16, group_size: 4, staleness: 1}
"""


def test_load_from_text_path_and_mapping(tmp_path: Path) -> None:
    path = tmp_path / "rlsched.yaml"
    path.write_text(GOOD)
    for source in (GOOD, path, {"devices": {"count": 8, "train": 2}}):
        cfg = load_config(source)
        assert isinstance(cfg, RlschedConfig) and cfg.train_devices() == (6, 7)


@pytest.mark.parametrize(
    ("text", "line"),
    [
        (
            "devices: {count: 8, train: 2}\nscheduler: {shrink: {trigger: 0}}",
            "scheduler.shrink.trigger: Input should be greater than or equal to 1",
        ),
        (
            "devices: {count: 8, train: 2}\nscheduler: {shrink: {trigger: 900}}",
            "scheduler.shrink.trigger: 900 exceeds scheduler.train_batch_size 512",
        ),
        ("devices: {count: 8}", "devices.train: required in timeshare mode"),
        (
            "devices: {count: 8, train: 2}\nscheduler: {bogus: 1}",
            "scheduler.bogus: Extra inputs are not permitted",
        ),
        ("devices: {count: 8, train: [1, 9]}", "devices.train: unknown device ids [9]"),
        (
            "devices: {count: 8, train: 2}\nscheduler: {staleness: 0}",
            "scheduler.staleness: timeshare mode needs staleness >= 1",
        ),
        (
            "devices: {count: 8, train: 2}\nscheduler: {group_size: 3}",
            "scheduler.train_batch_size: 512 is not a multiple of scheduler.group_size 3",
        ),
        (
            "devices: {count: 8, train: 8}",
            "devices.train: timeshare mode needs at least one rollout rank left",
        ),
        (
            "devices: {count: 8, train: 3, gpus_per_rank: 2}",
            "devices.train: must cover whole ranks of 2 GPUs",
        ),
        ("devices: {count: 8, ids: [1, 2]}", "devices: give exactly one of `count` or `ids`"),
        ("devices: {count: 8, train: [true]}", "devices.train.0: Input should be a valid integer"),
        (
            "devices: {count: 8, train: 2}\nscheduler: {split: static}",
            "scheduler.split: static (veRL's split) runs only in colocate mode, not timeshare",
        ),
        (
            "devices: {count: 8}\nscheduler: {mode: colocate, split: round}",
            "scheduler.split: Input should be 'central' or 'static'",
        ),
        ("- 1", "<root>: expected a mapping, got list"),
    ],
)
def test_errors_name_the_key_path(text: str, line: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(text)
    assert any(p.startswith(line) for p in info.value.problems), info.value.problems
    assert line in str(info.value)


def test_all_cross_field_problems_are_reported_at_once() -> None:
    with pytest.raises(ConfigError) as info:
        load_config(
            "devices: {count: 8, train: [1, 2]}\nscheduler: {mode: colocate, group_size: 3}"
        )
    assert len(info.value.problems) == 2


def test_cross_field_problems_of_a_valid_config_is_empty() -> None:
    assert cross_field_problems(load_config(GOOD)) == []
    static = load_config("devices: {count: 8}\nscheduler: {mode: colocate, split: static}")
    assert static.scheduler.split == "static" and cross_field_problems(static) == []
    assert load_config(GOOD).scheduler.split == "central"
