"""Step 3 of design/rlsched_sim.md: cost and workload models carry their sources."""

import pytest
from pydantic import ValidationError

from rlsched.sim.params import CostModel, Dist, PolicySpec, Sourced

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
    fields = ["decode_rank_tokens_per_s", "decode_request_tokens_per_s", "prefill_s_per_token",
              "train_s_per_token", "train_fixed_s", "sync_s", "offload_s", "reload_s"]
    cost = CostModel.model_validate(dict.fromkeys(fields, S))
    assert cost.prefix_cache is True
    with pytest.raises(ValidationError, match="decode_rate"):
        CostModel.model_validate({**dict.fromkeys(fields, S), "decode_rate": S})
    assert PolicySpec(mode="timeshare", train=2).scheduler == {}
