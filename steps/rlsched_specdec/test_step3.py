"""Step 3 of design/rlsched_specdec.md: one request's state, prefill and the KV rollback."""

import pytest
import torch
from specdec_model import random_model
from transformers import DynamicCache

from rlsched.model import cache_keyword
from rlsched.specdec.decoder import Decoding, SpecStats, SpeculativeDecoder, rollback_cache
from rlsched.specdec.drafter import GroupDrafter

PROMPT = [5, 9, 11, 5, 9, 30, 2]


@torch.no_grad()
def test_start_prefills_the_prompt_and_chooses_the_models_first_token() -> None:
    model = random_model("llama", seed=0)
    drafter = GroupDrafter()
    state = SpeculativeDecoder(model, drafter).start(PROMPT, 5)
    expected = int(model(torch.tensor([PROMPT])).logits[0, -1].argmax())
    assert state.tokens == [*PROMPT, expected] and state.prompt_len == len(PROMPT)
    assert state.cache.get_seq_length() == len(PROMPT)  # every token but the pending one
    assert state.stats == SpecStats(forward_passes=1, tokens=1) and not state.done
    assert drafter.sequences[state.seq_id] == state.tokens  # the group sees the request
    assert SpecStats(1, 2, 3, 4, 5) + SpecStats(10, 20, 30, 40, 50) == SpecStats(11, 22, 33, 44, 55)
    assert SpeculativeDecoder(model, drafter).start(PROMPT, 1).done  # the budget is spent


@torch.no_grad()
def test_rollback_cuts_the_cache_to_what_a_fresh_prefill_would_hold() -> None:
    model = random_model("gpt2", seed=1)
    tokens = torch.tensor([[3, 4, 5, 6, 7, 8, 9, 10, 11]])
    cache = DynamicCache()
    keyword = cache_keyword(model)
    model(input_ids=tokens, use_cache=True, **{keyword: cache})
    rollback_cache(cache, 5)
    assert cache.get_seq_length() == 5
    after = model(input_ids=torch.tensor([[40]]), use_cache=True, **{keyword: cache}).logits
    fresh = model(input_ids=torch.tensor([[3, 4, 5, 6, 7, 40]])).logits
    assert torch.allclose(after[0, -1], fresh[0, -1], atol=1e-5)
    rollback_cache(cache, 6)  # nothing to cut
    assert cache.get_seq_length() == 6
    with pytest.raises(AssertionError, match="surplus >= 0"):
        rollback_cache(cache, 7)


def test_end_of_sequence_ends_the_request() -> None:
    model = random_model("llama", seed=2)
    first = SpeculativeDecoder(model).start(PROMPT, 8).tokens[-1]
    state = SpeculativeDecoder(model, eos_token_id=first).start(PROMPT, 8)
    assert state.done and state.tokens[state.prompt_len :] == [first]


def test_bad_input_is_refused_by_name() -> None:
    model = random_model("llama", seed=0)
    decoder = SpeculativeDecoder(model, GroupDrafter())
    with pytest.raises(ValueError, match="ids"):
        decoder.start([], 4)
    with pytest.raises(ValueError, match="ids"):
        decoder.start([1, 2, 48], 4)  # outside the vocabulary of 48
    with pytest.raises(ValueError, match="ids"):
        decoder.start([[1, 2], [3, 4]], 4)  # a batch, not one prompt
    with pytest.raises(ValueError, match="max_new_tokens"):
        decoder.start(PROMPT, 0)
    with pytest.raises(ValueError, match="temperature"):
        decoder.start(PROMPT, 4, temperature=-1.0)
    with pytest.raises(ValueError, match="k_init"):
        SpeculativeDecoder(model, k_init=9, k_max=8)
    assert decoder.drafter.sequences == {}  # nothing was registered
    assert isinstance(decoder.start(torch.tensor(PROMPT), 2), Decoding)  # a 1-D tensor is fine
