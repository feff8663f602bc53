"""Step 1 of design/rlsched_model.md: word-level tokenizer, seeded tiny model, checkpoints."""

from pathlib import Path

import pytest
import torch

from rlsched.envs.grid import GRID_WORDS, GridWalk
from rlsched.model import (
    SPECIAL_TOKENS,
    ModelSpec,
    action_token_ids,
    build_model,
    build_tokenizer,
    load_tokenizer,
)


def test_tokenizer_round_trips_environment_text() -> None:
    tok = build_tokenizer(GRID_WORDS)
    assert tok.get_vocab_size() == len(SPECIAL_TOKENS) + len(set(GRID_WORDS))
    text = "grid 4 goal 3 1 2 0 east"
    ids = tok.encode(text).ids
    assert len(ids) == 8 and tok.decode(ids) == text
    assert tok.encode("zebra").ids == [tok.token_to_id("<unk>")]
    with pytest.raises(ValueError, match="contains a space"):
        build_tokenizer(["two words"])


def test_same_spec_same_weights_and_caller_rng_untouched() -> None:
    torch.manual_seed(123)
    expected = torch.rand(1)
    torch.manual_seed(123)
    a = build_model(ModelSpec(seed=1), 30)
    assert torch.equal(torch.rand(1), expected)
    b = build_model(ModelSpec(seed=1), 30)
    c = build_model(ModelSpec(seed=2), 30)
    pa, pb, pc = (dict(m.named_parameters()) for m in (a, b, c))
    assert all(torch.equal(pa[k], pb[k]) for k in pa)
    assert not all(torch.equal(pa[k], pc[k]) for k in pa)
    assert a.lm_head.weight.data_ptr() != a.model.embed_tokens.weight.data_ptr()  # untied
    out = a(input_ids=torch.tensor([[3, 4, 5]])).logits
    assert out.shape == (1, 3, 30)


def test_bad_head_layout_and_llama_arch() -> None:
    with pytest.raises(ValueError, match="divide evenly"):
        build_model(ModelSpec(hidden_size=64, heads=3), 30)
    llama = build_model(ModelSpec(arch="llama", init_std=0.3), 30)
    assert type(llama).__name__ == "LlamaForCausalLM"


def test_action_ids_and_local_checkpoint(tmp_path: Path) -> None:
    tok = build_tokenizer(GRID_WORDS)
    ids = action_token_ids(tok, GridWalk.actions)
    assert [tok.id_to_token(i) for i in ids] == list(GridWalk.actions)
    with pytest.raises(ValueError, match="not a single token"):
        action_token_ids(tok, ["jump"])
    model = build_model(ModelSpec(), tok.get_vocab_size())
    model.save_pretrained(tmp_path)
    from transformers import PreTrainedTokenizerFast

    PreTrainedTokenizerFast(tokenizer_object=tok).save_pretrained(tmp_path)
    loaded = build_model(ModelSpec(path=str(tmp_path)), 0)
    assert all(
        torch.equal(p, q) for p, q in zip(model.parameters(), loaded.parameters(), strict=True)
    )
    assert (
        load_tokenizer(ModelSpec(path=str(tmp_path)), []).encode("2 0 east").ids
        == tok.encode("2 0 east").ids
    )


def test_the_default_model_and_its_special_tokens() -> None:
    spec = ModelSpec()
    assert spec.model_dump() == {
        "arch": "qwen2",
        "path": None,
        "hidden_size": 64,
        "layers": 2,
        "heads": 4,
        "kv_heads": 2,
        "intermediate_size": 128,
        "max_positions": 1024,
        "tie_embeddings": False,
        "init_std": 0.02,
        "seed": 0,
    }
    config = build_model(
        ModelSpec(hidden_size=16, heads=2, kv_heads=1, intermediate_size=32), 12
    ).config
    assert (config.pad_token_id, config.bos_token_id, config.eos_token_id) == (0, 2, 2)
    assert (config.vocab_size, config.num_hidden_layers, config.max_position_embeddings) == (
        12,
        2,
        1024,
    )
