"""Step 8 of design/rlsched_engines.md: continuous batching, turns, memory and weights.

The reference is the recompute engine (`TransformersEngine`) on the same weights: under greedy
sampling the KV engine must return the same tokens, stop reasons and versions, with requests
joining mid-decode, multi-turn contexts reusing kept caches, weight updates mid-request and
speculative drafts, while computing a small fraction of the recompute engine's tokens.
"""

import copy

import pytest
import torch
from specdec_model import VOCAB, phrase_model, phrases

from rlsched.engines.base import Engine, GenOutput, Sampling, SpecSettings
from rlsched.engines.factory import GPU_SPLIT_TOKENS, make_engine
from rlsched.engines.hf import TransformersEngine
from rlsched.engines.kv import KvEngine
from rlsched.model import ModelSpec

GREEDY = Sampling(temperature=0.0, allowed_token_ids=tuple(range(2, VOCAB)), stop_token_ids=(7,))


@pytest.fixture(scope="module")
def trained() -> torch.nn.Module:
    return phrase_model(seed=0)


def drain(engine) -> dict[int, GenOutput]:
    out: dict[int, GenOutput] = {}
    while engine.num_active:
        out.update((o.rid, o) for o in engine.step())
    return out


def play_turns(engines, turns: int = 3, budget: int = 12) -> list[dict[int, GenOutput]]:
    """18 trajectories in 3 groups, `turns` turns each: half the requests of a turn join after
    the first decode step; each next turn's context is the last one, the answer and two
    observation tokens. Returns every engine's outputs of the last turn."""
    chunks = phrases(0)
    contexts = {r: chunks[r // 6] + chunks[r // 6 + 3][:3] + [2 + r % 6] for r in range(18)}
    results = []
    for turn in range(turns):
        results = []
        for engine in engines:
            for r in range(9):
                engine.submit(r + 100 * turn, contexts[r], budget, GREEDY, group=r // 6)
            out = {o.rid: o for o in engine.step()}
            for r in range(9, 18):
                engine.submit(r + 100 * turn, contexts[r], budget, GREEDY, group=r // 6)
            out.update(drain(engine))
            results.append(out)
        for other in results[1:]:
            assert other == results[0], f"turn {turn}"
        for r in contexts:
            answer = list(results[0][r + 100 * turn].token_ids)
            contexts[r] = contexts[r] + answer + chunks[(r + turn) % 12][:2]
    return results


def test_greedy_multi_turn_output_is_the_recompute_engines(trained) -> None:
    plain = TransformersEngine(copy.deepcopy(trained), max_batch=32)
    kv = KvEngine(copy.deepcopy(trained), max_batch=32, split_tokens=None)  # one pass a step
    assert isinstance(kv, Engine)
    results = play_turns([plain, kv])
    assert {o.finish_reason for o in results[1].values()} == {"stop", "length"}
    assert kv.forward_passes == plain.forward_passes  # one pass per step for the whole batch
    assert kv.tokens_reused > 0  # later turns found the earlier turn in a kept slot
    generated = sum(len(o.token_ids) for o in results[1].values())
    assert generated > 0
    assert kv.tokens_computed * 8 < plain.tokens_computed


def test_prefix_reuse_feeds_only_the_new_tokens(trained) -> None:
    kv = KvEngine(copy.deepcopy(trained), max_batch=4, retain=4)
    prompt = phrases(0)[1]
    kv.submit(0, prompt, 5, GREEDY)
    first = drain(kv)[0]
    computed = kv.tokens_computed
    assert computed == len(prompt) + len(first.token_ids) - 1
    turn = prompt + list(first.token_ids) + [3, 4]
    kv.submit(1, turn, 1, GREEDY)
    drain(kv)
    # the answer's last token and the observation: the kept slot held everything before
    assert kv.tokens_computed - computed == 3
    assert kv.tokens_reused == len(turn) - 3


def test_speculative_greedy_is_identical_with_fewer_passes(trained) -> None:
    plain = TransformersEngine(copy.deepcopy(trained), max_batch=32)
    spec = KvEngine(copy.deepcopy(trained), max_batch=32, settings=SpecSettings(drafter="group"))
    play_turns([plain, spec], turns=2, budget=40)
    assert spec.spec.accepted > 0 and spec.spec.acceptance_length > 1.2
    assert spec.forward_passes < plain.forward_passes  # drafts verified in the batched pass
    assert spec.spec.rounds > spec.forward_passes  # several requests per pass


def test_a_weight_update_rebuilds_the_cache(trained) -> None:
    plain = TransformersEngine(copy.deepcopy(trained))
    kv = KvEngine(copy.deepcopy(trained))
    new = {n: p.detach() + 0.05 * torch.randn_like(p) for n, p in trained.named_parameters()}
    prompt = phrases(0)[4]
    for engine in (plain, kv):
        engine.submit(9, prompt, 3, Sampling(temperature=0.0))
        drain(engine)  # a kept slot of version 0
        engine.submit(1, prompt, 40, Sampling(temperature=0.0))
        for _ in range(5):
            assert not engine.step()
        engine.load_weights(new, version=1)
    assert not kv._kept
    # request 1 copied request 9's prompt (less its last token) into a free slot and fed 5 tokens;
    # request 9's kept slot (its prompt and 2 tokens) stayed, so the update dropped it too (0.6.0)
    assert kv.tokens_rebuilt == len(prompt) + 4
    assert kv.tokens_invalidated == kv.tokens_rebuilt + len(prompt) + 2
    computed = kv.tokens_computed
    assert plain.partial(1) == kv.partial(1)
    expected, got = drain(plain)[1], drain(kv)[1]
    assert got == expected and got.version == 1
    assert kv.tokens_computed - computed >= len(prompt) + 5  # the whole context again
    kv.submit(2, prompt, 2, Sampling(temperature=0.0))
    before = kv.tokens_reused
    drain(kv)
    assert kv.tokens_reused - before == len(prompt) - 1  # the version-1 prompt is copied
    invalidated = kv.tokens_invalidated
    kv.load_weights(new, version=2)  # nothing running: both kept slots are dropped
    request_1 = len(prompt) + len(got.token_ids) - 1  # all but its last token
    assert kv.tokens_invalidated - invalidated == len(prompt) + 1 + request_1 and not kv._kept
    assert kv.tokens_rebuilt == len(prompt) + 4  # a kept slot is not rebuilt


def test_abort_keeps_tokens_and_the_slot(trained) -> None:
    kv = KvEngine(copy.deepcopy(trained), retain=2)
    prompt = phrases(0)[2]
    kv.submit(0, prompt, 30, GREEDY)
    kv.submit(1, prompt, 30, GREEDY)
    for _ in range(4):
        kv.step()
    made = kv.partial(0)
    (out,) = kv.abort([0, 5])
    assert out.finish_reason == "abort" and out.token_ids == made and len(out.logprobs) == 4
    assert kv.num_active == 1 and len(kv._kept) == 1
    kv.submit(2, prompt + list(made), 3, GREEDY)  # resumed: continues from the kept slot
    before = kv.tokens_reused
    kv.step()
    assert kv.tokens_reused - before == len(prompt) + len(made) - 1


def test_offload_releases_the_cache_and_reload_serves_again(trained) -> None:
    kv = KvEngine(copy.deepcopy(trained))
    kv.submit(0, phrases(0)[0], 4, GREEDY)
    expected = drain(kv)[0]
    assert kv._kv is not None and kv._kept and kv._masks
    kv.offload()
    assert kv._kv is None and not kv._kept and not kv.resident and not kv._masks
    assert all(p.numel() == 0 for p in kv.model.parameters())
    kv.reload()
    kv.submit(1, phrases(0)[0], 4, GREEDY)
    got = drain(kv)[1]
    assert got.token_ids == expected.token_ids


def test_sampled_logprobs_are_the_masked_tempered_distribution(trained) -> None:
    kv = KvEngine(copy.deepcopy(trained), seed=3)
    sampling = Sampling(temperature=0.7, allowed_token_ids=tuple(range(2, 20)))
    prompt = phrases(0)[3]
    kv.submit(0, prompt, 6, sampling)
    out = drain(kv)[0]
    context = prompt + list(out.token_ids)
    with torch.no_grad():
        logits = trained(input_ids=torch.tensor([context])).logits[0].float()
    mask = torch.full((VOCAB,), float("-inf"))
    mask[list(range(2, 20))] = 0.0
    for i, token in enumerate(out.token_ids):
        row = torch.log_softmax(logits[len(prompt) - 1 + i] / 0.7 + mask, dim=-1)
        assert out.logprobs[i] == pytest.approx(float(row[token]), abs=1e-4)
        assert 2 <= token < 20


def test_factory_builds_the_kv_engine() -> None:
    spec = ModelSpec(hidden_size=32, heads=2, kv_heads=1, intermediate_size=32)
    engine = make_engine("kv", spec, 20, max_batch=4, seed=0)
    assert isinstance(engine, KvEngine) and engine.settings.drafter == "none"
    # a pass's fixed cost in positions, as measured on each kind of device
    assert engine.split_tokens == (GPU_SPLIT_TOKENS if torch.cuda.is_available() else 128)
    drafting = make_engine("kv", spec, 20, 4, 0, SpecSettings(drafter="request"))
    assert isinstance(drafting, KvEngine) and drafting.settings.drafter == "request"
    assert type(make_engine("transformers", spec, 20, 4, 0)) is TransformersEngine
    engine.submit(0, [3, 4, 5], 3, Sampling(temperature=0.0))
    assert len(drain(engine)[0].token_ids) == 3
