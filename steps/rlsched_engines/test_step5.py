"""Step 5 of design/rlsched_engines.md: the factory; vLLM's weight path where it cannot run."""

import pytest
import torch

from rlsched.engines.base import Engine, Sampling
from rlsched.engines.factory import make_engine
from rlsched.engines.hf import TransformersEngine
from rlsched.engines.vllm_engine import VllmEngine
from rlsched.model import ModelSpec

SPEC = ModelSpec(hidden_size=16, heads=2, kv_heads=1, intermediate_size=32)


def test_the_factory_builds_a_transformers_engine_that_serves() -> None:
    engine = make_engine("transformers", SPEC, 20, 4, seed=1)
    assert isinstance(engine, TransformersEngine) and isinstance(engine, Engine)
    engine.submit(0, [3, 4], 2, Sampling())
    while engine.num_active:
        done = engine.step()
    assert len(done[0].token_ids) == 2
    with pytest.raises(ValueError, match="VAL_IN_SET"):
        make_engine("sglang", SPEC, 20, 4, seed=1)


@pytest.mark.skipif(torch.cuda.is_available(), reason="on a GPU the vLLM engine is built")
def test_the_factory_refuses_vllm_without_a_gpu() -> None:
    with pytest.raises(RuntimeError, match="needs a CUDA GPU"):
        make_engine("vllm", SPEC, 20, 4, seed=1)
    for name in ("reload", "load_weights", "shutdown"):
        assert callable(getattr(VllmEngine, name))
