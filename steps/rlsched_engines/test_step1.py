"""Step 1 of design/rlsched_engines.md: the engine interface values and protocol."""

import dataclasses

import pytest

from rlsched.engines.base import Engine, GenOutput, Sampling


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
