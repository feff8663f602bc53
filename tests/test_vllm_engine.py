"""VllmEngine on a GPU: streaming generation, abort keeping the tokens made so far, sleep and
wake-up, versioned weight loads. Skipped, with the reason, where vLLM cannot run."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch

from rlsched.engines.base import Sampling
from rlsched.model import ModelSpec, build_model

if importlib.util.find_spec("vllm") is None:
    pytest.skip("vLLM is not installed (pip install -e '.[runtime,vllm]')", allow_module_level=True)
if not torch.cuda.is_available():
    pytest.skip("vLLM needs a CUDA GPU and none is available here", allow_module_level=True)

from rlsched.engines.vllm_engine import VllmEngine  # noqa: E402

SPEC = ModelSpec(hidden_size=64, layers=2, heads=4, kv_heads=2, intermediate_size=128)
VOCAB = 64


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> VllmEngine:
    model_dir = Path(tmp_path_factory.mktemp("tiny"))
    build_model(SPEC, VOCAB).save_pretrained(model_dir)
    eng = VllmEngine(str(model_dir), max_batch=8, seed=0, max_model_len=512)
    yield eng
    eng.shutdown()


def run_to_end(engine: VllmEngine) -> dict:
    done = {}
    while engine.num_active:
        done.update({o.rid: o for o in engine.step()})
    return done


def test_generation_streams_tokens_with_logprobs(engine: VllmEngine) -> None:
    engine.submit(0, [3, 4, 5], 8, Sampling(allowed_token_ids=(10, 11, 12)))
    engine.submit(1, [3], 4, Sampling())
    done = run_to_end(engine)
    assert len(done[0].token_ids) == 8 and set(done[0].token_ids) <= {10, 11, 12}
    assert all(lp <= 0.0 for lp in done[0].logprobs) and done[1].finish_reason == "length"


def test_abort_returns_the_tokens_made_so_far(engine: VllmEngine) -> None:
    engine.submit(2, [3, 4], 400, Sampling())
    while not engine._requests[2].new_ids:
        engine.step()
    [out] = engine.abort([2, 99])
    assert out.finish_reason == "abort" and 0 < len(out.token_ids) < 400
    assert engine.num_active == 0


def test_logprobs_are_the_trainers_masked_tempered_distribution(engine: VllmEngine) -> None:
    """vLLM's processed log-probabilities equal log_softmax(logits / T + mask) of the same
    weights run by transformers (the trainer's convention), not the raw model's."""
    allowed = (10, 11, 12, 13)
    prompt = [3, 4, 5, 6]
    engine.submit(7, prompt, 6, Sampling(temperature=0.6, allowed_token_ids=allowed))
    out = run_to_end(engine)[7]
    model = build_model(SPEC, VOCAB)
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([prompt + list(out.token_ids)])).logits[0]
    mask = torch.full((VOCAB,), float("-inf"))
    mask[list(allowed)] = 0.0
    for i, token in enumerate(out.token_ids):
        row = torch.log_softmax(logits[len(prompt) - 1 + i] / 0.6 + mask, dim=-1)
        assert out.logprobs[i] == pytest.approx(float(row[token]), abs=2e-2)


def test_sleep_wake_and_weights_of_a_version(engine: VllmEngine) -> None:
    import time

    state = {n: p.detach() * 0 for n, p in build_model(SPEC, VOCAB).named_parameters()}
    started = time.perf_counter()
    engine.offload()
    engine.load_weights(state, 3)
    engine.reload()
    print(f"offload + load + reload: {time.perf_counter() - started:.3f}s")
    engine.submit(5, [3, 4], 4, Sampling())
    assert run_to_end(engine)[5].version == 3
