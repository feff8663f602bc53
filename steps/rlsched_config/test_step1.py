"""Step 1 of design/rlsched_config.md: the configuration models and derived values."""

import pytest
from pydantic import ValidationError

from rlsched.config import ConfigError, DevicesConfig, RlschedConfig, SchedulerConfig


def test_defaults_are_the_seed_experiment() -> None:
    sch = SchedulerConfig()
    assert (sch.mode, sch.train_batch_size, sch.group_size, sch.staleness) == (
        "timeshare",
        512,
        8,
        1,
    )
    assert (sch.max_turns, sch.max_tokens, sch.migration) == (100, 65536, "reissue")


def test_derived_values() -> None:
    cfg = RlschedConfig.model_validate({"devices": {"count": 160, "train": 128}})
    assert cfg.num_devices == 160
    assert cfg.groups_per_batch == 64
    assert cfg.shrink_trigger == 512
    assert cfg.train_devices() == tuple(range(32, 160))


def test_shrink_trigger_spellings() -> None:
    base = {"devices": {"count": 4, "train": 2}}
    frac = RlschedConfig.model_validate(
        {
            **base,
            "scheduler": {"train_batch_size": 10, "group_size": 5, "shrink": {"fraction": 0.3}},
        }
    )
    assert frac.shrink_trigger == 3
    count = RlschedConfig.model_validate({**base, "scheduler": {"shrink": {"trigger": 100}}})
    assert count.shrink_trigger == 100


def test_physical_ids_map_to_core_indices() -> None:
    cfg = RlschedConfig.model_validate(
        {
            "devices": {"ids": [10, 11, 12, 13], "train": [13, 12]},
            "scheduler": {"mode": "disaggregated"},
        }
    )
    assert cfg.num_devices == 4
    assert cfg.train_devices() == (2, 3)
    colocate = RlschedConfig.model_validate(
        {"devices": {"count": 3}, "scheduler": {"mode": "colocate"}}
    )
    assert colocate.train_devices() == (0, 1, 2)


def test_models_are_strict_and_frozen() -> None:
    with pytest.raises(ValidationError):
        DevicesConfig.model_validate({"count": 8, "train": [True]})
    with pytest.raises(ValidationError):
        SchedulerConfig.model_validate({"mode": "sometimes"})
    with pytest.raises(ValidationError):
        SchedulerConfig.model_validate({"bogus": 1})
    cfg = SchedulerConfig()
    with pytest.raises(ValidationError):
        cfg.staleness = 3
    assert issubclass(ConfigError, ValueError)
