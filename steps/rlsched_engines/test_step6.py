"""Step 6 of design/rlsched_engines.md: the speculative engine and the factory.

The reference is the recompute engine (`TransformersEngine`) on the same weights: under greedy
sampling the speculative engine must return the same tokens, stop reasons and versions.
"""

import copy

import pytest
import torch
from pydantic import ValidationError
from specdec_model import VOCAB, phrase_model, phrases

from rlsched.engines.base import Engine, GenOutput, Sampling, SpecSettings
from rlsched.engines.factory import make_engine
from rlsched.engines.hf import TransformersEngine
from rlsched.engines.speculative import SpeculativeEngine
from rlsched.model import ModelSpec

GREEDY = Sampling(temperature=0.0, allowed_token_ids=tuple(range(2, VOCAB)), stop_token_ids=(7,))


@pytest.fixture(scope="module")
def trained() -> torch.nn.Module:
    return phrase_model(seed=0)


def drain(engine: TransformersEngine) -> dict[int, GenOutput]:
    out: dict[int, GenOutput] = {}
    while engine.num_active:
        out.update((o.rid, o) for o in engine.step())
    return out


def submit_groups(engine: TransformersEngine, n_groups: int = 3, size: int = 6) -> None:
    chunks = phrases(0)
    for g in range(n_groups):
        prompt = chunks[g] + chunks[g + 3][:3]
        for i in range(size):
            engine.submit(g * size + i, prompt, 48, GREEDY, group=g)


def test_greedy_output_is_the_recompute_engines_with_fewer_passes(trained) -> None:
    plain = TransformersEngine(copy.deepcopy(trained), max_batch=32)
    spec = SpeculativeEngine(copy.deepcopy(trained), max_batch=32)
    assert isinstance(spec, Engine)
    submit_groups(plain)
    submit_groups(spec)
    expected, got = drain(plain), drain(spec)
    assert got == expected  # tokens, log-probabilities, stop reasons and versions
    assert {o.finish_reason for o in got.values()} >= {"length"}
    stats = spec.spec
    assert stats.tokens == sum(len(o.token_ids) for o in got.values())
    assert stats.accepted > 0 and stats.acceptance_length > 1.5  # the group's drafts were used
    assert spec.forward_passes == stats.forward_passes < stats.tokens
    assert spec.tokens_computed < plain.tokens_computed  # the KV cache: no recompute


def test_a_weight_update_mid_request_matches_the_recompute_engine(trained) -> None:
    plain = TransformersEngine(copy.deepcopy(trained))
    spec = SpeculativeEngine(copy.deepcopy(trained))
    new = {n: p.detach() + 0.05 * torch.randn_like(p) for n, p in trained.named_parameters()}
    prompt = phrases(0)[4]
    sampling = Sampling(temperature=0.0)
    spec.submit(0, prompt, 40, sampling, group=1)  # a finished response to draft from
    drain(spec)
    spec.submit(1, prompt, 40, sampling, group=1)
    plain.submit(1, prompt, 40, sampling)
    while len(spec.partial(1)) < 6:
        assert not spec.step()
    assert spec.spec.accepted > 0
    for _ in spec.partial(1):  # the recompute engine to the same token
        assert not plain.step()
    assert plain.partial(1) == spec.partial(1)
    for engine in (plain, spec):
        engine.load_weights(new, version=1)
    expected, got = drain(plain)[1], drain(spec)[1]
    assert got == expected and got.version == 1
    assert spec.forward_passes < spec.spec.tokens  # the rebuild pass included


def test_abort_keeps_tokens_offload_reload_and_resume(trained) -> None:
    engine = SpeculativeEngine(copy.deepcopy(trained))
    prompt = phrases(0)[1]
    engine.submit(0, prompt, 40, GREEDY, group=5)
    engine.submit(1, prompt, 40, GREEDY, group=5)
    for _ in range(3):
        engine.step()
    partial = engine.partial(0)
    assert len(partial) >= 3  # at least one token a round
    aborted = engine.abort([0, 1, 99])
    assert [o.rid for o in aborted] == [0, 1] and aborted[0].token_ids == partial
    assert all(o.finish_reason == "abort" for o in aborted)
    assert all(len(o.logprobs) == len(o.token_ids) for o in aborted)
    engine.offload()
    engine.reload()
    # resume migration: the turn continues from its kept tokens; greedy, so the concatenation
    # is what an uninterrupted request makes
    rest = len(partial)
    engine.submit(2, [*prompt, *partial], 40 - rest, GREEDY, group=5)
    resumed = drain(engine)[2].token_ids
    engine.submit(3, prompt, 40, GREEDY)
    straight = drain(engine)[3].token_ids
    assert (*partial, *resumed) == straight


def test_sampled_logprobs_are_the_behaviour_distribution(trained) -> None:
    engine = SpeculativeEngine(copy.deepcopy(trained), seed=2)
    allowed = tuple(range(2, 40))
    sampling = Sampling(temperature=0.7, allowed_token_ids=allowed)
    prompt = phrases(0)[2]
    for rid in range(4):
        engine.submit(rid, prompt, 30, sampling, group=0)
    outs = drain(engine)
    assert engine.spec.accepted > 0
    mask = torch.full((VOCAB,), float("-inf"))
    mask[list(allowed)] = 0.0
    for out in outs.values():
        assert set(out.token_ids) <= set(allowed) and len(out.token_ids) == 30
        ids = torch.tensor([[*prompt, *out.token_ids]])
        with torch.no_grad():
            logits = trained(input_ids=ids).logits[0, len(prompt) - 1 : -1].float()
        rows = torch.log_softmax(logits / 0.7 + mask, dim=-1)
        expected = rows.gather(1, torch.tensor(out.token_ids)[:, None]).squeeze(1)
        assert torch.allclose(torch.tensor(out.logprobs), expected, atol=1e-4)


def test_drafters_per_group_bounded_and_request_mode(trained) -> None:
    engine = SpeculativeEngine(copy.deepcopy(trained), max_groups=2)
    for g in range(3):
        assert engine._drafter(g) is engine._drafter(g)
    assert list(engine._drafters) == [1, 2]  # group 0, least recently used, went
    assert engine._drafter(None) is not engine._drafter(None)
    alone = SpeculativeEngine(copy.deepcopy(trained), settings=SpecSettings(drafter="request"))
    assert alone._drafter(1) is not alone._drafter(1) and not alone._drafters
    plain = SpeculativeEngine(copy.deepcopy(trained), settings=SpecSettings(drafter="none"))
    assert plain._drafter(1) is None
    plain.submit(0, phrases(0)[0], 12, GREEDY, group=1)
    drain(plain)
    assert plain.spec.drafted == 0 and plain.spec.forward_passes == plain.spec.tokens
    with pytest.raises(ValueError, match="VAL_INT_RANGE"):
        SpeculativeEngine(copy.deepcopy(trained), max_groups=0)


def test_the_factory_builds_the_speculative_engine_and_checks_settings() -> None:
    spec = ModelSpec(hidden_size=16, heads=2, kv_heads=1, intermediate_size=32)
    engine = make_engine(
        "transformers", spec, 20, 4, seed=1, speculative=SpecSettings(k_init=3, k_max=3)
    )
    assert isinstance(engine, SpeculativeEngine) and engine.decoder.k_bounds == (3, 1, 3)
    engine.submit(0, [3, 4], 5, Sampling())
    assert len(drain(engine)[0].token_ids) == 5
    plain = make_engine("transformers", spec, 20, 4, seed=1)
    assert type(plain) is TransformersEngine
    with pytest.raises(ValidationError, match="k_min <= k_init <= k_max"):
        SpecSettings(k_init=9)
    with pytest.raises(ValidationError, match="extra"):
        SpecSettings.model_validate({"drafter": "group", "k": 4})
