"""Step 3 of design/rlsched_sim.md: cost and workload models carry their sources."""

import pytest
from pydantic import ValidationError

from rlsched.sim.params import CostModel, Dist, KvSpec, PolicySpec, Sourced, Spread

S = {"value": 1.0, "source": "measured"}


def test_a_number_without_a_source_is_refused() -> None:
    with pytest.raises(ValidationError, match="source"):
        Sourced.model_validate({"value": 3.0})
    with pytest.raises(ValidationError, match="greater than or equal to 0"):
        Sourced.model_validate({"value": -1.0, "source": "measured"})


def test_distribution_bounds_are_checked() -> None:
    assert Dist(median=2.0, source="paper").sigma == 0.0
    with pytest.raises(ValidationError):
        Dist.model_validate({"median": 0.0, "source": "paper"})
    with pytest.raises(ValidationError):
        Dist.model_validate({"median": 1.0, "sigma": -0.1, "source": "paper"})


def test_cost_model_rejects_unknown_keys_and_defaults_prefix_cache() -> None:
    fields = [
        "decode_rank_tokens_per_s",
        "decode_request_tokens_per_s",
        "prefill_s_per_token",
        "train_s_per_token",
        "train_fixed_s",
        "sync_s",
        "offload_s",
        "reload_s",
    ]
    cost = CostModel.model_validate(dict.fromkeys(fields, S))
    assert cost.prefix_cache is True
    with pytest.raises(ValidationError, match="decode_rate"):
        CostModel.model_validate({**dict.fromkeys(fields, S), "decode_rate": S})
    assert PolicySpec(mode="timeshare", train=2).scheduler == {}


def _kv(**over: float) -> KvSpec:
    figures = {
        "layers": 94,
        "kv_heads": 4,
        "head_dim": 128,
        "dtype_bytes": 2,
        "gpu_memory_gb": 80,
        "memory_utilization": 0.9,
        "weights_gb": 470,
        "activation_gb": 3,
        "gpu_bandwidth_gb_per_s": 3350,
        "batch_tokens": 8192,
        **over,
    }
    return KvSpec(**{k: {"value": v, "source": "test figure"} for k, v in figures.items()})


def test_kv_capacity_is_derived_from_the_architecture() -> None:
    kv = _kv()
    # TP8 over 4 KV heads: one head per GPU (replicated), K and V, 94 layers, 128 dims, bf16
    assert kv.bytes_per_token(8) == 2 * 94 * 1 * 128 * 2 == 48_128
    # (80 x 0.9 - 470 / 8 - 3) GB = 10.25 GB per GPU
    assert kv.capacity_tokens(8) == int(10.25e9 // 48_128) == 212_973
    assert kv.read_s_per_token(8) == pytest.approx(48_128 / 3.35e12)
    # TP2 would shard the heads (2 per GPU) but the weights would not fit
    assert kv.bytes_per_token(2) == 2 * 94 * 2 * 128 * 2
    assert kv.capacity_tokens(2) < 0


def test_cost_model_takes_an_optional_kv_spec() -> None:
    base = {
        name: {"value": 1.0, "source": "test figure"}
        for name in (
            "decode_rank_tokens_per_s",
            "decode_request_tokens_per_s",
            "prefill_s_per_token",
            "train_s_per_token",
            "train_fixed_s",
            "sync_s",
            "offload_s",
            "reload_s",
        )
    }
    assert CostModel(**base).kv is None
    with_kv = CostModel(**base, kv=_kv().model_dump())
    assert with_kv.kv is not None and with_kv.kv.capacity_tokens(8) == 212_973
    with pytest.raises(ValidationError):
        _kv(layers=-1)


def test_every_model_is_frozen_and_closed() -> None:
    from rlsched.sim.params import DevicesSpec, WorkloadModel

    fields = [
        "decode_rank_tokens_per_s",
        "decode_request_tokens_per_s",
        "prefill_s_per_token",
        "train_s_per_token",
        "train_fixed_s",
        "sync_s",
        "offload_s",
        "reload_s",
    ]
    values = [
        Sourced(value=0.0, source="abc"),
        Dist(median=1.0, sigma=5.0, min=0.0, max=2.0, source="abc"),
        CostModel.model_validate(dict.fromkeys(fields, S)),
        WorkloadModel(turns=Dist(median=3.0, source="paper")),
        DevicesSpec(count=1),
        PolicySpec(mode="timeshare"),
    ]
    for value in values:
        name = next(iter(type(value).model_fields))
        with pytest.raises(ValidationError, match="frozen"):
            setattr(value, name, getattr(value, name))
        with pytest.raises(ValidationError, match="Extra inputs"):
            type(value).model_validate({**value.model_dump(), "typo": 1})


def test_bounds_of_sources_distributions_and_devices() -> None:
    from rlsched.sim.params import DevicesSpec

    with pytest.raises(ValidationError, match="at least 3 characters"):
        Sourced(value=1.0, source="ab")
    with pytest.raises(ValidationError, match="at least 3 characters"):
        Dist(median=1.0, source="ab")
    for bad in ({"sigma": 5.1}, {"min": -0.5}, {"max": 0.0}):
        with pytest.raises(ValidationError):
            Dist.model_validate({"median": 1.0, "source": "paper", **bad})
    assert DevicesSpec(count=1).gpus_per_rank == 1
    assert DevicesSpec(count=4, gpus_per_rank=4).count == 4
    for bad in ({"count": 0}, {"count": 2, "gpus_per_rank": 0}, {"count": 2.0}):
        with pytest.raises(ValidationError):
            DevicesSpec.model_validate(bad)


def test_a_policy_s_kv_options_default_to_hbm_only() -> None:
    from rlsched.sim.params import PolicySpec

    spec = PolicySpec(mode="timeshare")
    assert (spec.kv_pool, spec.kv_host, spec.kv_migration) == ("per_rank", False, "prefill")
    tiered = PolicySpec(mode="timeshare", kv_host=True, kv_migration="move")
    assert tiered.kv_host and tiered.kv_migration == "move"
    with pytest.raises(ValidationError):
        PolicySpec(mode="timeshare", kv_migration="teleport")
    kv = _kv()
    assert kv.host_gb is None and kv.host_gb_per_s is None and kv.link_gb_per_s is None
    host = _kv(host_gb=100, host_gb_per_s=25, link_gb_per_s=50)
    assert (host.host_gb.value, host.host_gb_per_s.value, host.link_gb_per_s.value) == (100, 25, 50)


def test_a_spread_draws_each_quantile_equally_and_the_same_for_the_same_call() -> None:
    spread = Spread(quantiles=(0.2, 0.6, 1.0, 2.2), source="measured")
    draws = [spread.factor(key) for key in range(400)]
    assert sorted(set(draws)) == [0.2, 0.6, 1.0, 2.2]
    counts = [draws.count(q) for q in spread.quantiles]
    assert max(counts) - min(counts) <= 4  # equal shares over consecutive ids
    assert [spread.factor(key) for key in range(400)] == draws  # no hidden state
    back = [spread.factor(key, 1) for key in range(400)]
    assert back != draws and sorted(set(back)) == [0.2, 0.6, 1.0, 2.2]
    assert abs(sum(draws) / 400 - 1.0) < 0.02
    assert Spread(quantiles=(1.0,), source="measured").factor(12345, 1) == 1.0
    with pytest.raises(ValidationError, match="quantiles"):
        Spread(quantiles=(), source="measured")
    with pytest.raises(ValidationError, match="quantiles"):
        Spread(quantiles=(1.0, -0.1), source="measured")
    with pytest.raises(ValidationError, match="source"):
        Spread(quantiles=(1.0,), source="")
