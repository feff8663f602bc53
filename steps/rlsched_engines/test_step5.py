"""Step 5 of design/rlsched_engines.md: the factory; vLLM's weight path where it cannot run.

The vLLM engine's weight path (load, reload after sleep, shutdown) runs against a recorded stand-in
for AsyncLLM (steps/vllm_standin.py); with vLLM on a GPU, tests/test_vllm_engine.py runs it for
real."""

from collections.abc import Iterator

import pytest
import torch
from vllm_standin import engine_without_vllm

from rlsched.engines.base import Engine, Sampling, SpecSettings
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


@pytest.fixture
def engine() -> Iterator[VllmEngine]:
    with engine_without_vllm(version=3) as eng:
        yield eng


def test_weights_loaded_while_awake_go_to_the_workers_at_once(engine: VllmEngine) -> None:
    engine.load_weights({"w": torch.zeros(2), "b": torch.ones(1)}, version=4)
    assert engine._llm.calls == [("rpc", "load_into_worker")]
    assert engine._llm.loaded == [["w", "b"]] and engine.version == 4
    engine.reload()  # awake: nothing to do
    assert engine._llm.calls == [("rpc", "load_into_worker")]
    with pytest.raises(ValueError, match="VAL_INT_RANGE"):
        engine.load_weights({}, version=-1)


def test_weights_loaded_while_asleep_wait_for_the_reload(engine: VllmEngine) -> None:
    engine.offload()
    engine.load_weights({"w": torch.zeros(2)}, version=5)
    assert engine._llm.calls == [("sleep", 2)] and engine.version == 5
    engine.reload()
    assert engine._llm.calls == [("sleep", 2), ("wake_up",), ("rpc", "load_into_worker")]
    assert engine._llm.loaded == [["w"]] and engine._resident
    engine.offload()
    engine.reload()  # asleep with nothing pending: wake up only
    assert engine._llm.calls[-2:] == [("sleep", 2), ("wake_up",)] and engine._llm.loaded == [["w"]]


def test_shutdown_stops_vllm_and_the_loop_thread(engine: VllmEngine) -> None:
    engine.shutdown()
    assert engine._llm.calls == [("shutdown",)] and not engine._thread.is_alive()


def test_spec_settings_need_ordered_draft_lengths() -> None:
    equal = SpecSettings.model_validate({"k_min": 2, "k_init": 2, "k_max": 2})
    assert equal == SpecSettings(k_min=2, k_init=2, k_max=2) and equal.k_init == 2
    assert SpecSettings.model_validate({"k_min": 1, "k_init": 3, "k_max": 5}).k_max == 5
    for bad in ({"k_min": 3, "k_init": 2}, {"k_init": 9, "k_max": 8}):
        with pytest.raises(ValueError, match="k_min <= k_init <= k_max"):
            SpecSettings(**bad)
