"""Tiny causal LMs for the speculative-decoding checks and benchmark (no download).

`phrase_model` trains a 2-layer Llama for a few seconds on documents made of a fixed set of
phrases: inside a phrase the next token is certain, at a phrase boundary any phrase may follow.
Sampled responses to one prompt then differ in the order of phrases but share their n-grams,
the situation of a GRPO group. `random_model` is an untrained model of either family.
"""

from __future__ import annotations

import random

import torch
from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

VOCAB = 48

# A model this small runs fastest on one thread, and two threads per process on a shared 2-core
# machine can slow training down tenfold.
torch.set_num_threads(1)


def phrases(seed: int = 0, count: int = 12) -> list[list[int]]:
    """`count` phrases of 5 to 9 tokens over ids 2..VOCAB-1 (0 and 1 stay free, e.g. for EOS)."""
    rng = random.Random(seed)
    return [[rng.randrange(2, VOCAB) for _ in range(rng.randrange(5, 10))] for _ in range(count)]


def documents(phrase_list: list[list[int]], n: int, length: int, seed: int = 0) -> torch.Tensor:
    """`n` documents of `length` tokens, each a random sequence of phrases."""
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        row: list[int] = []
        while len(row) < length:
            row += rng.choice(phrase_list)
        rows.append(row[:length])
    return torch.tensor(rows)


def llama_config(**overrides: int) -> LlamaConfig:
    settings = dict(
        vocab_size=VOCAB,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=1024,
        bos_token_id=None,
        eos_token_id=None,
        pad_token_id=None,
    )
    settings.update(overrides)
    return LlamaConfig(**settings)


def random_model(family: str, seed: int) -> torch.nn.Module:
    """An untrained Llama or GPT-2 with seeded weights, in eval mode."""
    torch.manual_seed(seed)
    if family == "llama":
        return LlamaForCausalLM(llama_config()).eval()
    config = GPT2Config(
        vocab_size=VOCAB,
        n_embd=64,
        n_layer=2,
        n_head=4,
        n_positions=1024,
        bos_token_id=None,
        eos_token_id=None,
        pad_token_id=None,
    )
    return GPT2LMHeadModel(config).eval()


def phrase_model(seed: int = 0, steps: int = 150, **overrides: int) -> LlamaForCausalLM:
    """A Llama trained for `steps` AdamW steps (batch 16 x 49 tokens) on phrase documents."""
    torch.manual_seed(seed)
    model = LlamaForCausalLM(llama_config(**overrides))
    data = documents(phrases(seed), 256, 49, seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    generator = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        batch = data[torch.randint(0, len(data), (16,), generator=generator)]
        loss = model(input_ids=batch, labels=batch).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return model.eval()
