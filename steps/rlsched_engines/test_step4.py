"""Step 4 of design/rlsched_engines.md: the vLLM engine's contract where vLLM cannot run.

The GPU checks are in tests/test_vllm_engine.py (skipped, with the reason, without a GPU)."""

import importlib.util

import pytest
import torch

from rlsched.engines.base import Engine
from rlsched.engines.vllm_engine import VllmEngine, load_into_worker


def test_the_module_imports_without_vllm_and_builds_nothing_without_a_gpu() -> None:
    assert callable(load_into_worker) and {"submit", "step", "abort", "offload"} <= set(
        dir(VllmEngine)
    )
    with pytest.raises(ValueError, match="VAL_IN_SET"):
        VllmEngine("/nonexistent", sleep_level=3)
    with pytest.raises(ValueError, match="VAL_FLOAT_RANGE"):
        VllmEngine("/nonexistent", gpu_memory_utilization=1.5)
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="needs a CUDA GPU"):
            VllmEngine("/nonexistent")


def test_the_engine_class_matches_the_protocol_surface() -> None:
    for name in ("submit", "step", "abort", "offload"):
        assert callable(getattr(VllmEngine, name)) and hasattr(Engine, name)
    assert isinstance(VllmEngine.num_active, property)
    assert importlib.util.find_spec("rlsched.engines.vllm_engine") is not None
