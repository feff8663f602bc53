"""Step 3 of design/rlsched_engines.md: abort with partial tokens, offload/reload, weights."""

import pytest
import torch

from rlsched.engines.base import Sampling
from rlsched.engines.hf import TransformersEngine
from rlsched.model import ModelSpec, build_model

VOCAB = 24


def test_abort_returns_the_tokens_made_so_far_and_resume_continues() -> None:
    eng = TransformersEngine(build_model(ModelSpec(init_std=0.3), VOCAB), seed=3)
    eng.submit(7, [3, 4, 5], 10, Sampling())
    eng.step()
    eng.step()
    made = eng.partial(7)
    (out,) = eng.abort([7, 99])
    assert out.finish_reason == "abort" and out.token_ids == made and len(out.logprobs) == 2
    assert eng.abort([7]) == [] and eng.num_active == 0
    eng.submit(
        8, [3, 4, 5, *out.token_ids], 8, Sampling()
    )  # resume elsewhere: context + kept tokens
    assert eng.num_active == 1


def test_offload_frees_the_weights_and_reload_restores_them() -> None:
    model = build_model(ModelSpec(init_std=0.3), VOCAB)
    eng = TransformersEngine(model)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    logits = eng._forward_last([[3, 4, 5]])
    eng.offload()
    assert not eng.resident and all(p.numel() == 0 for p in model.parameters())
    with pytest.raises(AssertionError, match="AST_PRECONDITION"):
        eng.submit(0, [1], 1, Sampling())
    eng.offload()  # idempotent
    eng.reload()
    assert eng.resident and all(torch.equal(p, before[n]) for n, p in model.named_parameters())
    assert torch.equal(eng._forward_last([[3, 4, 5]]), logits)
    eng.submit(0, [1], 1, Sampling())
    with pytest.raises(AssertionError, match="AST_PRECONDITION"):
        eng.offload()  # only drained engines are offloaded


def test_load_weights_in_place_while_resident_or_offloaded() -> None:
    eng = TransformersEngine(build_model(ModelSpec(seed=0), VOCAB))
    new = {
        n: p.detach().clone() for n, p in build_model(ModelSpec(seed=9), VOCAB).named_parameters()
    }
    ptrs = [p.data_ptr() for p in eng.model.parameters()]
    eng.load_weights(new, 1)
    assert eng.version == 1 and [p.data_ptr() for p in eng.model.parameters()] == ptrs
    assert all(torch.equal(p, new[n]) for n, p in eng.model.named_parameters())
    eng.offload()
    zeros = {n: torch.zeros_like(t) for n, t in new.items()}
    eng.load_weights(zeros, 2)
    eng.reload()
    assert eng.version == 2 and all(p.abs().sum() == 0 for p in eng.model.parameters())
    eng.submit(1, [3], 1, Sampling())
    (out,) = eng.step()
    assert out.version == 2


def test_load_weights_rejects_mismatches() -> None:
    eng = TransformersEngine(build_model(ModelSpec(), VOCAB))
    state = {n: p.detach().clone() for n, p in eng.model.named_parameters()}
    with pytest.raises(ValueError, match="VAL_KEYS_PRESENT"):
        eng.load_weights({k: v for k, v in list(state.items())[1:]}, 1)
    with pytest.raises(ValueError, match="unknown parameters"):
        eng.load_weights({**state, "extra": torch.zeros(1)}, 1)
    name = next(iter(state))
    with pytest.raises(ValueError, match="has shape"):
        eng.load_weights({**state, name: torch.zeros(2, 2)}, 1)
    assert eng.version == 0
