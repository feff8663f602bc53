"""Step 2 of design/rlsched_specdec.md: the verification rules and the vLLM mapping."""

import pytest
import torch

from rlsched.specdec.verify import accept_greedy, accept_sampled
from rlsched.specdec.vllm_config import vllm_speculative_config

# thousands of tiny tensor operations: one thread (two per process oversubscribe a shared 2-core
# machine and ran this file 30x slower)
torch.set_num_threads(1)


def one_hot_rows(choices: list[int], vocab: int = 6) -> torch.Tensor:
    logits = torch.zeros(len(choices), vocab)
    logits[torch.arange(len(choices)), torch.tensor(choices)] = 5.0
    return logits


def test_greedy_accepts_the_prefix_that_agrees_with_the_argmax_then_adds_the_models_token() -> None:
    logits = one_hot_rows([3, 1, 4, 2])
    assert accept_greedy(logits, [3, 1, 4]) == (3, 2)  # all accepted, the model adds its 4th choice
    assert accept_greedy(logits, [3, 1, 5]) == (2, 4)  # the model's own token replaces the miss
    assert accept_greedy(logits, [0, 1, 4]) == (0, 3)
    assert accept_greedy(logits[:1], []) == (0, 3)
    with pytest.raises(ValueError, match="len\\(logits\\)"):
        accept_greedy(logits, [3, 1])  # 3 drafts need 4 rows, not 2 + 1


def test_sampled_rule_emits_tokens_with_the_models_distribution() -> None:
    """Monte Carlo on the rule alone: p0 and p1 are the model's distributions at the two
    drafted positions; whatever is drafted, the first emitted token follows p0, and after an
    accepted first draft the second follows p1 (the speculative-sampling theorem)."""
    p0 = torch.tensor([0.1, 0.5, 0.3, 0.1])
    p1 = torch.tensor([0.25, 0.05, 0.2, 0.5])
    p2 = torch.tensor([0.4, 0.3, 0.2, 0.1])
    logits = torch.stack([p0, p1, p2]).log()
    generator = torch.Generator().manual_seed(0)
    trials = 12000
    first = torch.zeros(4)
    second = torch.zeros(4)
    for _ in range(trials):
        accepted, token = accept_sampled(logits, [2, 0], 1.0, generator)
        first[2 if accepted >= 1 else token] += 1
        if accepted >= 1:
            second[0 if accepted == 2 else token] += 1
    assert torch.allclose(first / trials, p0, atol=0.015)
    assert abs(first[2] / trials - 0.3) < 0.015  # the draft is accepted with probability p0[2]
    assert torch.allclose(second / second.sum(), p1, atol=0.02)


def test_sampled_rule_at_the_extremes() -> None:
    generator = torch.Generator().manual_seed(1)
    certain = torch.tensor([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0]]).clamp_min(1e-30).log()
    assert accept_sampled(certain, [2], 1.0, generator) == (1, 1)  # p = 1: always accepted
    impossible = torch.tensor([[0.5, 0.5, 0.0], [1.0, 0.0, 0.0]]).clamp_min(1e-30).log()
    for _ in range(50):
        accepted, token = accept_sampled(impossible, [2], 1.0, generator)
        assert accepted == 0 and token in (0, 1)  # p = 0: never accepted, never emitted
    # a temperature near 0 is greedy
    assert accept_sampled(one_hot_rows([3, 1]), [3], 1e-3, generator) == (1, 1)
    with pytest.raises(ValueError, match="temperature"):
        accept_sampled(one_hot_rows([3]), [], 0.0, generator)


def test_vllm_speculative_config_uses_vllms_key_names() -> None:
    assert vllm_speculative_config("ngram", 5, min_ngram=2, max_ngram=4) == {
        "method": "ngram",
        "num_speculative_tokens": 5,
        "prompt_lookup_min": 2,
        "prompt_lookup_max": 4,
    }
    assert vllm_speculative_config("suffix", 8, max_tree_depth=32, min_token_prob=0.2) == {
        "method": "suffix",
        "num_speculative_tokens": 8,
        "suffix_decoding_max_tree_depth": 32,
        "suffix_decoding_max_cached_requests": 10000,
        "suffix_decoding_max_spec_factor": 1.0,
        "suffix_decoding_min_token_prob": 0.2,
    }


def test_vllm_speculative_config_refuses_bad_settings_by_name() -> None:
    with pytest.raises(ValueError, match="method"):
        vllm_speculative_config("eagle", 4)
    with pytest.raises(ValueError, match="num_speculative_tokens"):
        vllm_speculative_config("ngram", 0)
    with pytest.raises(ValueError, match="max_ngram"):
        vllm_speculative_config("ngram", 4, min_ngram=3, max_ngram=2)
    with pytest.raises(ValueError, match="min_token_prob"):
        vllm_speculative_config("suffix", 4, min_token_prob=1.5)
    # the other method's settings are neither checked nor passed
    assert "prompt_lookup_max" not in vllm_speculative_config("suffix", 4, max_ngram=0)


def test_vllm_settings_default_to_the_designed_values() -> None:
    assert vllm_speculative_config("ngram", 3) == {
        "method": "ngram",
        "num_speculative_tokens": 3,
        "prompt_lookup_min": 1,
        "prompt_lookup_max": 4,
    }
    assert vllm_speculative_config("suffix", 5) == {
        "method": "suffix",
        "num_speculative_tokens": 5,
        "suffix_decoding_max_tree_depth": 24,
        "suffix_decoding_max_cached_requests": 10000,
        "suffix_decoding_max_spec_factor": 1.0,
        "suffix_decoding_min_token_prob": 0.1,
    }
