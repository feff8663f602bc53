"""Step 1 of design/rlsched_runtime.md: the run config, the bundled example, key-path errors."""

import copy

import pytest

from rlsched.config import ConfigError
from rlsched.runtime.config import EXAMPLE, load_run_config


def test_the_bundled_example_is_a_small_timeshare_run() -> None:
    cfg = load_run_config()
    assert cfg.scheduler.mode == "timeshare" and cfg.num_devices == 2
    assert tuple(cfg.train_devices()) == (1,) and cfg.env.name == "recall"
    assert cfg.run.eval_episodes > 0 and cfg.rollout.max_turn_tokens == 6
    assert cfg.env.kwargs == {"width": 6, "max_turns": 16} and cfg.rollout.engine == "kv"
    # a turn is one window; a whole episode fits the context the evaluation allows
    assert cfg.scheduler.max_turns == cfg.env.kwargs["max_turns"]
    assert 6 + 16 * (6 + 1) <= cfg.scheduler.max_tokens


def test_the_example_files_are_the_bundled_run_and_the_gridwalk_run() -> None:
    from pathlib import Path

    runs = Path(__file__).resolve().parents[2] / "examples" / "run"
    assert load_run_config(runs / "recall.yaml") == load_run_config(None)
    grid = load_run_config(runs / "grid.yaml")
    assert grid.env.name == "grid" and grid.rollout.max_turn_tokens == 1


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
        (
            {"env": {"name": "recall", "kwargs": {"widht": 6}}},
            "env.kwargs.widht: unknown key 'widht'; did you mean 'width'?",
        ),
        ({"env": {"name": "recall", "kwargs": {"zz": 6}}}, "recall takes width, max_turns"),
        (
            {"env": {"name": "recall", "process": "driver", "latency": {"mean_s": 0.01}}},
            "env.process: driver steps environments in the driver's loop, which cannot wait",
        ),
        ({"env": {"name": "recall", "process": "thread"}}, "env.process"),
        (
            {"env": {"name": "recall", "kwargs": {"width": 99}}},
            "env.kwargs.width: recall: expected width to be an int in [1, 16] (where width=99)",
        ),
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
            "rollout.engine: vllm needs a CUDA GPU and none is usable here (use engine: kv)"
        ]


def test_defaults_and_bounds_of_the_run_settings() -> None:
    from rlsched.runtime.config import RolloutConfig, RunSettings

    run = RunSettings()
    assert (run.steps, run.seed, run.eval_episodes) == (20, 0, 64)
    assert (run.worker_restarts, run.train_retries) == (2, 2)
    edge = RunSettings(steps=1, eval_episodes=0, worker_restarts=0, train_retries=0)
    assert (edge.steps, edge.eval_episodes, edge.worker_restarts, edge.train_retries) == (
        1,
        0,
        0,
        0,
    )
    for key in ("steps", "eval_episodes", "worker_restarts", "train_retries"):
        low = 0 if key == "steps" else -1
        with pytest.raises(ConfigError, match=f"run.{key}"):
            load_run_config({**EXAMPLE, "run": {key: low}})
    rollout = RolloutConfig()
    assert (rollout.engine, rollout.temperature, rollout.max_turn_tokens) == ("kv", 1.0, 1)
    with pytest.raises(ConfigError, match="rollout.max_turn_tokens"):
        load_run_config({**EXAMPLE, "rollout": {"max_turn_tokens": 0}})


def test_every_section_is_frozen() -> None:
    from pydantic import ValidationError

    cfg = load_run_config(None)
    for section, key, value in (
        (cfg.run, "steps", 3),
        (cfg.rollout, "max_turn_tokens", 2),
        (cfg.env, "name", "faulty-grid"),
        (cfg.env.latency, "mean_s", 1.0),
    ):
        with pytest.raises(ValidationError, match="frozen"):
            setattr(section, key, value)


def test_the_context_rule_is_inclusive_and_waived_for_a_model_path(tmp_path: object) -> None:
    cfg = load_run_config(None)
    at_limit = {**EXAMPLE, "scheduler": {**EXAMPLE["scheduler"]}}
    at_limit["scheduler"]["max_tokens"] = cfg.model.max_positions
    assert load_run_config(at_limit).scheduler.max_tokens == cfg.model.max_positions
    at_limit["scheduler"]["max_tokens"] = cfg.model.max_positions + 1
    with pytest.raises(ConfigError, match="exceeds"):
        load_run_config(at_limit)
    both = {**EXAMPLE, "devices": {"count": 4, "train": 2, "gpus_per_rank": 2}}
    both["scheduler"] = {**EXAMPLE["scheduler"], "max_tokens": 5000}
    with pytest.raises(ConfigError) as info:
        load_run_config(both)
    assert len(info.value.problems) == 2
    # a checkpoint brings its own context length: the rule is not checked against the sizes
    waived = {**EXAMPLE, "model": {"path": str(tmp_path)}}
    waived["scheduler"] = {**EXAMPLE["scheduler"], "max_tokens": 5000}
    assert load_run_config(waived).scheduler.max_tokens == 5000


def test_a_yaml_path_loads(tmp_path: object) -> None:
    from pathlib import Path

    path = Path(tmp_path) / "run.yaml"
    path.write_text(
        "devices: {count: 3, train: 1}\nscheduler: {max_tokens: 512}\nrun: {steps: 5}\n",
        encoding="utf-8",
    )
    cfg = load_run_config(path)
    assert cfg.num_devices == 3 and cfg.run.steps == 5 and cfg.run.seed == 0


def test_an_environment_taking_any_kwargs_is_built_to_check_them() -> None:
    """A constructor with **kwargs accepts any key; what it then refuses is its first line."""
    from rlsched.runtime.config import env_kwargs_problems

    assert env_kwargs_problems("recall", {"width": 4}) == []
    assert env_kwargs_problems("runtime_parts:KwargsEnv", {"anything": 1}) == []
    problems = env_kwargs_problems("runtime_parts:KwargsEnv", {"bad": 1})
    assert problems == [
        "env.kwargs: runtime_parts:KwargsEnv: bad is not a setting of this environment"
    ]
    assert env_kwargs_problems("runtime_parts:KwargsEnv", {"empty": 1}) == [
        "env.kwargs: runtime_parts:KwargsEnv: ValueError"  # a refusal without a message
    ]
    problems = env_kwargs_problems("vault", {"feedback": "loud"})
    assert problems == [
        'env.kwargs.feedback: vault: expected feedback to be one of ("count", "marks") '
        "(where feedback='loud')"
    ]
