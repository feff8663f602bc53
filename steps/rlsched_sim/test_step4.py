"""Step 4 of design/rlsched_sim.md: the simulator config file and its loader."""

from pathlib import Path

import pytest
import yaml

from rlsched.config import ConfigError
from rlsched.sim.params import load_sim_config

ROOT = Path(__file__).resolve().parents[2]
FOUR = ROOT / "examples" / "four_gpu.yaml"


def test_examples_load_and_make_valid_policies() -> None:
    for name in ("four_gpu.yaml", "paper_160gpu.yaml"):
        sim = load_sim_config(ROOT / "examples" / name)
        for policy in sim.policies:
            assert sim.policy_config(policy).scheduler.mode == sim.policies[policy].mode
    paper = load_sim_config(ROOT / "examples" / "paper_160gpu.yaml")
    assert paper.policy_config("disaggregated").train_devices() == tuple(range(32, 160))


def test_policy_errors_name_the_keys_the_user_wrote() -> None:
    data = yaml.safe_load(FOUR.read_text())
    data["policies"]["timeshare"]["train"] = 9
    data["policies"]["disaggregated"]["scheduler"] = {"staleness": -1}
    with pytest.raises(ConfigError) as info:
        load_sim_config(data)
    problems = info.value.problems
    assert any(p.startswith("policies.timeshare.train:") for p in problems)
    assert any(p.startswith("policies.disaggregated.scheduler.staleness:") for p in problems)


def test_workload_needs_every_distribution_or_a_trace(tmp_path: Path) -> None:
    data = yaml.safe_load(FOUR.read_text())
    del data["workload"]["turns"]
    with pytest.raises(ConfigError, match=r"workload\.turns: required"):
        load_sim_config(data)
    data["workload"] = {"trace": "groups.jsonl"}
    path = tmp_path / "sim.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match="workload.trace: no such file"):
        load_sim_config(path)
    (tmp_path / "groups.jsonl").write_text('{"prompt_tokens": 5, "samples": [[[1, 0, 0.1]]]}\n')
    assert load_sim_config(path).workload.trace == tmp_path / "groups.jsonl"


def test_the_paper_derives_its_kv_capacity_and_a_rank_without_room_is_refused() -> None:
    data = yaml.safe_load((ROOT / "examples" / "paper_160gpu.yaml").read_text())
    sim = load_sim_config(data)
    assert sim.cost.kv is not None
    assert sim.cost.kv.capacity_tokens(sim.devices.gpus_per_rank) == 212_973
    data["devices"]["gpus_per_rank"] = 4
    data["devices"]["count"] = 160
    with pytest.raises(
        ConfigError, match=r"cost\.kv: no memory left for the KV cache on a rank of 4 GPUs"
    ):
        load_sim_config(data)


def test_a_global_kv_pool_needs_the_memory_model_and_its_bandwidth() -> None:
    sim = load_sim_config(ROOT / "examples" / "seer_workload.yaml")
    assert sim.policies["sync+context+divided+pool"].kv_pool == "global"
    assert sim.policies["sync+context"].kv_pool == "per_rank"
    data = yaml.safe_load((ROOT / "examples" / "seer_workload.yaml").read_text())
    del data["cost"]["kv"]["pool_gb_per_s"]
    with pytest.raises(ConfigError) as caught:
        load_sim_config(data)
    assert caught.value.problems == [
        f"policies.{name}.kv_pool: a global KV pool needs cost.kv with pool_gb_per_s"
        " (the bandwidth a rank fetches KV from the pool at)"
        for name in (
            "sync+fifo+divided+pool",
            "sync+context+divided+pool",
            "sync+oracle+divided+pool",
        )
    ]
    del data["cost"]["kv"]
    with pytest.raises(ConfigError, match=r"policies\.sync\+fifo\+divided\+pool\.kv_pool"):
        load_sim_config(data)


def test_a_host_tier_and_moved_kv_need_their_figures() -> None:
    sim = load_sim_config(ROOT / "examples" / "paper_160gpu.yaml")
    assert sim.policies["timeshare"].kv_pool == "global"
    assert sim.policies["timeshare-hbm"].kv_pool == "per_rank"
    data = yaml.safe_load((ROOT / "examples" / "paper_160gpu.yaml").read_text())
    data["policies"] = {
        "tiered": {"mode": "timeshare", "train": 128, "kv_host": True},
        "moving": {"mode": "timeshare", "train": 128, "kv_migration": "move"},
    }
    assert set(load_sim_config(data).policies) == {"tiered", "moving"}
    del data["cost"]["kv"]["host_gb_per_s"]
    del data["cost"]["kv"]["link_gb_per_s"]
    with pytest.raises(ConfigError) as caught:
        load_sim_config(data)
    assert caught.value.problems == [
        "policies.tiered.kv_host: a host KV tier needs cost.kv with host_gb and host_gb_per_s"
        " (its memory and the bandwidth a GPU loads it at)",
        "policies.moving.kv_migration: moving KV needs cost.kv with link_gb_per_s"
        " (the bandwidth a GPU receives it at)",
    ]
    data["cost"]["kv"]["host_gb_per_s"] = {"value": 25, "source": "test"}
    del data["cost"]["kv"]["host_gb"]
    with pytest.raises(ConfigError, match=r"policies\.tiered\.kv_host"):
        load_sim_config(data)
    del data["cost"]["kv"]
    with pytest.raises(ConfigError, match=r"policies\.moving\.kv_migration"):
        load_sim_config(data)


def test_the_engine_step_model_needs_all_its_terms_and_no_memory_model() -> None:
    data = yaml.safe_load(FOUR.read_text())
    s = {"value": 0.01, "source": "a test"}
    data["cost"]["step_fixed_s"] = s
    data["cost"]["step_token_s"] = s
    with pytest.raises(ConfigError) as info:
        load_sim_config(data)
    assert info.value.problems == [
        "cost.step_row_s, cost.step_context_s, cost.step_join_s: required with"
        " cost.step_fixed_s (the engine-step model)"
    ]
    for name in ("step_row_s", "step_context_s", "step_join_s", "request_in_s", "env_call_s"):
        data["cost"][name] = s
    assert load_sim_config(data).cost.request_in_s.value == 0.01
    # a step in passes: the engine's split_tokens, a whole number of positions
    data["cost"]["step_split_tokens"] = {"value": 0.5, "source": "a test"}
    data["cost"]["step_pass_s"] = s
    with pytest.raises(ConfigError) as info:
        load_sim_config(data)
    assert info.value.problems == [
        "cost.step_split_tokens: a whole number of positions >= 1, not 0.5"
    ]
    data["cost"]["step_split_tokens"] = {"value": 128, "source": "a test"}
    assert load_sim_config(data).cost.step_split_tokens.value == 128
    paper = yaml.safe_load((ROOT / "examples" / "paper_160gpu.yaml").read_text())
    paper["cost"] |= {name: s for name in ("step_fixed_s", "step_row_s", "step_token_s")}
    paper["cost"] |= {name: s for name in ("step_context_s", "step_join_s")}
    with pytest.raises(ConfigError, match=r"cost\.kv: the memory model and the engine-step"):
        load_sim_config(paper)
    bare = yaml.safe_load(FOUR.read_text())
    bare["cost"]["request_out_s"] = s
    with pytest.raises(ConfigError, match=r"request_out_spread: need the engine-step model"):
        load_sim_config(bare)
    spread = {"quantiles": [0.5, 1.5], "source": "a test"}
    for name, figure in (
        ("step_split_tokens", {"value": 2, "source": "a test"}),
        ("step_pass_s", {"value": 2, "source": "a test"}),
        ("step_answer_s", s),
        ("request_in_spread", spread),
        ("request_out_spread", spread),
    ):  # each alone needs the step model too
        alone = yaml.safe_load(FOUR.read_text())
        alone["cost"][name] = figure
        with pytest.raises(ConfigError, match=r"request_out_spread: need the engine-step model"):
            load_sim_config(alone)
    # with it, each is taken; a spread needs at least one quantile, none negative
    data["cost"]["step_answer_s"] = s
    data["cost"]["request_in_spread"] = spread
    taken = load_sim_config(data).cost
    assert taken.step_answer_s.value == 0.01 and taken.request_in_spread.quantiles == (0.5, 1.5)
    for bad in ([], [1.0, -0.5]):
        data["cost"]["request_in_spread"] = {"quantiles": bad, "source": "a test"}
        with pytest.raises(ConfigError, match=r"cost\.request_in_spread\.quantiles"):
            load_sim_config(data)
    bare["cost"] = {k: v for k, v in bare["cost"].items() if k != "request_out_s"}
    bare["cost"]["env_call_s"] = s  # an environment call's round trip needs no step model
    assert load_sim_config(bare).cost.env_call_s.value == 0.01
