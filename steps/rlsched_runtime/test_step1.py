"""Step 1 of design/rlsched_runtime.md: the run config, the bundled example, key-path errors."""

import copy

import pytest

from rlsched.config import ConfigError
from rlsched.runtime.config import EXAMPLE, load_run_config


def test_the_bundled_example_is_a_small_timeshare_run() -> None:
    cfg = load_run_config()
    assert cfg.scheduler.mode == "timeshare" and cfg.num_devices == 2
    assert tuple(cfg.train_devices()) == (1,) and cfg.env.name == "grid"
    assert cfg.run.eval_episodes > 0 and cfg.rollout.max_turn_tokens == 1


def test_yaml_text_and_mappings_load_alike() -> None:
    text = "devices: {count: 3, train: 1}\nscheduler: {max_tokens: 512}\n"
    text += "env: {name: faulty-grid, kwargs: {fail_prob: 0.1}}\n"
    cfg = load_run_config(text)
    assert cfg.num_devices == 3 and cfg.env.kwargs == {"fail_prob": 0.1}
    assert load_run_config(cfg.model_dump(mode="json")) == cfg


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ({"env": {"name": "nope"}}, "env.name"),
        ({"devices": {"count": 4, "train": 2, "gpus_per_rank": 2}}, "devices.gpus_per_rank"),
        ({"scheduler": {"max_tokens": 5000}}, "scheduler.max_tokens: 5000 exceeds"),
        ({"train": {"lr": -1}}, "train.lr"),
        ({"rollout": {"bogus": 1}}, "rollout.bogus"),
        ({"run": {"eval_episodes": -1}}, "run.eval_episodes"),
    ],
)
def test_errors_name_the_key_path(patch: dict, message: str) -> None:
    data = copy.deepcopy(EXAMPLE)
    for key, value in patch.items():
        data[key] = {**data.get(key, {}), **value}
    with pytest.raises(ConfigError) as info:
        load_run_config(data)
    assert any(message in problem for problem in info.value.problems), info.value.problems


def test_a_non_mapping_is_an_error_at_the_root() -> None:
    with pytest.raises(ConfigError, match="<root>"):
        load_run_config("- a list")


def test_fault_settings_default_and_are_checked() -> None:
    cfg = load_run_config(None)
    assert (cfg.run.worker_restarts, cfg.run.train_retries) == (2, 2)
    with pytest.raises(ConfigError, match="run.train_retries"):
        load_run_config({**EXAMPLE, "run": {"train_retries": -1}})


def test_preflight_refuses_a_vllm_engine_without_a_gpu() -> None:
    import torch

    from rlsched.runtime.config import preflight

    assert preflight(load_run_config(None)) == []
    problems = preflight(load_run_config({**EXAMPLE, "rollout": {"engine": "vllm"}}))
    if not torch.cuda.is_available():
        assert problems == [
            "rollout.engine: vllm needs a CUDA GPU and none is usable here "
            "(use engine: kv)"
        ]
