"""Step 1 of design/rlsched_engines.md: the engine interface values and protocol."""

import dataclasses

import pytest

from rlsched.engines.base import Engine, GenOutput, Sampling, SpecSettings


def test_values_are_frozen_and_defaulted() -> None:
    s = Sampling()
    assert (s.temperature, s.allowed_token_ids, s.stop_token_ids) == (1.0, (), ())
    out = GenOutput(3, (5, 6), (-0.1, -0.2), "abort", 2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        out.rid = 4  # type: ignore[misc]
    assert [f.name for f in dataclasses.fields(GenOutput)] == [
        "rid",
        "token_ids",
        "logprobs",
        "finish_reason",
        "version",
    ]


def test_protocol_is_structural() -> None:
    class Fake:
        version = 0

        def submit(self, rid, token_ids, max_new_tokens, sampling): ...
        def step(self):
            return []

        def abort(self, rids):
            return []

        def offload(self): ...
        def reload(self): ...
        def load_weights(self, state, version): ...

    assert isinstance(Fake(), Engine)
    assert not isinstance(object(), Engine)


def test_speculation_settings_default_to_group_drafts_and_are_checked() -> None:
    # the design's defaults (Section 5.1.10): group drafter, k starts at 4 within [1, 8], n-grams
    # of up to 4 tokens; every length at least 1; frozen, no unknown keys
    s = SpecSettings()
    assert (s.drafter, s.k_init, s.k_min, s.k_max, s.max_ngram) == ("group", 4, 1, 8, 4)
    ones = SpecSettings(k_init=1, k_min=1, k_max=1, max_ngram=1, drafter="none")
    assert ones.model_dump() == {
        "drafter": "none",
        "k_init": 1,
        "k_min": 1,
        "k_max": 1,
        "max_ngram": 1,
    }
    for field in ("k_init", "k_min", "k_max", "max_ngram"):
        with pytest.raises(ValueError, match="greater than or equal to 1"):
            SpecSettings(**{field: 0})
    with pytest.raises(ValueError, match="frozen"):
        s.k_init = 2  # type: ignore[misc]
    with pytest.raises(ValueError, match="Extra inputs"):
        SpecSettings(k=3)  # type: ignore[call-arg]
