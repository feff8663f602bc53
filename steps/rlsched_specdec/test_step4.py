"""Step 4 of design/rlsched_specdec.md: draft-and-verify rounds, whole requests and groups.

The reference for greedy output is `transformers`' own `generate` (no cache sharing, no drafts).
"""

import random
import warnings

import pytest
import torch
from specdec_model import phrase_model, phrases, random_model

from rlsched.specdec.decoder import SpecStats, SpeculativeDecoder
from rlsched.specdec.drafter import GroupDrafter


@pytest.fixture(scope="module")
def trained() -> torch.nn.Module:
    return phrase_model(seed=0)


@torch.no_grad()
def reference(model: torch.nn.Module, prompt: list[int], n: int) -> list[int]:
    out = model.generate(
        torch.tensor([prompt]), max_new_tokens=n, min_new_tokens=n, do_sample=False
    )
    return out[0, len(prompt) :].tolist()


def prompt_of(seed: int) -> list[int]:
    rng = random.Random(seed)
    return [rng.randrange(2, 48) for _ in range(rng.randrange(3, 12))]


@pytest.mark.parametrize("family", ["llama", "gpt2"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_greedy_output_is_that_of_plain_greedy_decoding_whatever_is_drafted(
    family: str, seed: int
) -> None:
    model = random_model(family, seed)
    prompt = prompt_of(seed)
    expected = reference(model, prompt, 40)
    drafter = GroupDrafter(max_ngram=3)
    rng = random.Random(seed)
    for _ in range(6):  # other "responses": noise, and the expected output with errors
        drafter.add_sequence([rng.randrange(2, 48) for _ in range(60)])
        drafter.add_sequence([t if rng.random() < 0.7 else (t + 1) % 48 for t in prompt + expected])
    result = SpeculativeDecoder(model, drafter, k_max=6).generate(prompt, 40)
    assert result.tokens == expected
    stats = result.stats
    assert 0 < stats.accepted < stats.drafted  # drafts were both accepted and rejected
    assert stats.tokens == 40 and stats.forward_passes == stats.rounds + 1 < 40
    assert stats.forward_passes + stats.accepted == stats.tokens  # one model token per pass


def test_a_group_drafts_from_its_other_responses_and_stays_exact(trained: torch.nn.Module) -> None:
    chunks = phrases(0)
    drafter = GroupDrafter()
    decoder = SpeculativeDecoder(trained, drafter)
    generator = torch.Generator().manual_seed(0)
    for prompt_seed in range(3):
        prompt = chunks[prompt_seed] + chunks[prompt_seed + 5][:3]
        sampled = decoder.generate_group(prompt, 4, 48, temperature=1.0, generator=generator)
        total = sum((r.stats for r in sampled), SpecStats())
        assert [r.stats.tokens for r in sampled] == [48] * 4
        assert total.acceptance_length > 1.4  # the group's phrases are drafted and accepted
        greedy = decoder.generate(prompt, 48)  # the drafter now holds the sampled responses
        assert greedy.tokens == reference(trained, prompt, 48)
        # without drafts 48 passes; 12-24 seen (the exact count moves with the CPU's float
        # kernels, which change what the small model learns)
        assert greedy.stats.forward_passes <= 28
    assert len(drafter.sequences) == 15


def test_a_greedy_group_and_a_near_greedy_sampled_one_match_greedy_decoding(
    trained: torch.nn.Module,
) -> None:
    prompt = [*phrases(0)[4], 7]
    expected = reference(trained, prompt, 30)
    decoder = SpeculativeDecoder(trained, GroupDrafter(), k_init=2, k_max=5)
    results = decoder.generate_group(prompt, 3, 30, temperature=0.0)
    assert [r.tokens for r in results] == [expected] * 3
    assert results[2].stats.forward_passes < results[0].stats.forward_passes
    cold = SpeculativeDecoder(trained, GroupDrafter()).generate(prompt, 30, temperature=1e-4)
    assert cold.tokens == expected and cold.stats.accepted > 0


def test_every_round_keeps_the_cache_one_behind_and_respects_the_budget(
    trained: torch.nn.Module,
) -> None:
    drafter = GroupDrafter()
    decoder = SpeculativeDecoder(trained, drafter, k_init=8, k_max=8)
    prompt = phrases(0)[1] * 3
    drafter.add_sequence(prompt * 4)
    state = decoder.start(prompt, 13)
    while not state.done:
        added = decoder.step(state)
        assert 1 <= len(added) <= 9
        assert state.cache.get_seq_length() == len(state.tokens) - 1
        assert 1 <= state.draft_len.k <= 8
    assert state.stats.tokens == 13 == len(state.result().tokens)
    with pytest.raises(AssertionError, match="not state.done"):
        decoder.step(state)
    stats = SpecStats(drafted=10, accepted=6, forward_passes=5, rounds=4, tokens=10)
    assert stats.acceptance_length == 2.5 and SpecStats().acceptance_length == 0.0


def test_plain_decoding_without_a_drafter_is_one_token_per_pass(trained: torch.nn.Module) -> None:
    prompt = phrases(0)[2]
    result = SpeculativeDecoder(trained).generate(prompt, 20)
    assert result.tokens == reference(trained, prompt, 20)
    assert result.stats == SpecStats(forward_passes=20, rounds=19, tokens=20)


def test_engine_settings_mask_stops_logprobs_and_a_rebuilt_cache(trained: torch.nn.Module) -> None:
    """What an engine passes (0.2.0): an allowed-token mask and stop tokens are obeyed, each
    emitted token carries its log-probability under softmax(logits / T + mask) on the whole
    context, and a request whose cache was dropped continues as a fresh one would."""
    prompt = phrases(0)[0][:6]
    allowed = tuple(range(2, 30))
    stop = allowed[5]
    drafter = GroupDrafter()
    drafter.add_sequence(phrases(0)[0] * 3)  # drafts that are partly outside the mask
    decoder = SpeculativeDecoder(trained, k_max=6)
    generator = torch.Generator().manual_seed(3)
    state = decoder.start(
        prompt,
        40,
        temperature=0.8,
        generator=generator,
        allowed_token_ids=allowed,
        stop_token_ids=(stop,),
        drafter=drafter,
    )
    while not state.done:
        decoder.step(state)
    new = state.tokens[len(prompt) :]
    assert new and all(t in allowed for t in new)
    assert stop not in new[:-1] and (new[-1] == stop or len(new) == 40)
    assert len(state.logprobs) == len(new)
    mask = torch.full((48,), float("-inf"))
    mask[list(allowed)] = 0.0
    with torch.no_grad():
        logits = trained(input_ids=torch.tensor([state.tokens])).logits[0].float()
    rows = torch.log_softmax(logits[len(prompt) - 1 : -1] / 0.8 + mask, dim=-1)
    expected = rows.gather(1, torch.tensor(new)[:, None]).squeeze(1)
    assert torch.allclose(torch.tensor(state.logprobs), expected, atol=1e-4)

    # a dropped cache (new weights) is rebuilt: greedy output equals an uninterrupted run
    straight = SpeculativeDecoder(trained).generate(prompt, 24).tokens
    state = decoder.start(prompt, 24, drafter=GroupDrafter())
    for _ in range(5):
        decoder.step(state)
    state.cache = None
    passes = state.stats.forward_passes
    decoder.step(state)
    assert state.stats.forward_passes == passes + 2  # the rebuild, then the round
    while not state.done:
        decoder.step(state)
    assert state.tokens[len(prompt) :] == straight
    assert state.logprobs == [0.0] * 24  # greedy: each token has probability 1


@pytest.mark.parametrize("family", ["llama", "gpt2"])
def test_rounds_pass_the_cache_under_the_keyword_the_model_takes(family: str) -> None:
    """No deprecation warning from the model (transformers 5.x deprecates `past_key_values`
    where `cache` replaced it): the prefill and every round use the name its forward takes."""
    model = random_model(family, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = SpeculativeDecoder(model, GroupDrafter()).generate(prompt_of(0), 6)
    assert len(result.tokens) == 6 and result.stats.rounds >= 1
