"""Step 4 of design/rlsched_engines.md: the vLLM engine where vLLM cannot run.

Starting vLLM (the rest of `__init__`), `submit` and the streaming consumer `_consume` need vLLM
on a CUDA GPU: they run in tests/test_vllm_engine.py, which is skipped, with the reason, without
one (the step lists their mutants as accepted for that reason). Everything else runs here for
real: the argument checks and the refusal without a GPU, the weight loader, the engine's event
loop thread, the finished queue behind `step`, `abort` and `offload`, against a stand-in for
vLLM's AsyncLLM that records what the engine asks of it.
"""

import asyncio
from collections.abc import Iterator
from types import SimpleNamespace

import pytest
import torch
from vllm_standin import engine_without_vllm

from rlsched.engines.base import Engine, GenOutput, Sampling
from rlsched.engines.hf import LiveRequest
from rlsched.engines.vllm_engine import VllmEngine, load_into_worker


@pytest.fixture
def engine() -> Iterator[VllmEngine]:
    with engine_without_vllm() as eng:
        yield eng


def live(rid: int, new_ids: list[int], logprobs: list[float]) -> LiveRequest:
    return LiveRequest(rid, [7, 8], 16, Sampling(), list(new_ids), list(logprobs))


def test_the_module_imports_without_vllm_and_builds_nothing_without_a_gpu() -> None:
    assert isinstance(VllmEngine.num_active, property)
    for name in ("submit", "step", "abort", "offload", "reload", "load_weights"):
        assert callable(getattr(VllmEngine, name)) and hasattr(Engine, name)
    with pytest.raises(ValueError, match="VAL_IN_SET"):
        VllmEngine("/nonexistent", sleep_level=3)
    with pytest.raises(ValueError, match="VAL_FLOAT_RANGE"):
        VllmEngine("/nonexistent", gpu_memory_utilization=1.5)
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="needs a CUDA GPU"):
            VllmEngine("/nonexistent")


def test_load_into_worker_hands_every_tensor_to_the_model() -> None:
    received: list[list[tuple[str, torch.Tensor]]] = []
    model = SimpleNamespace(load_weights=lambda weights: received.append(weights))
    worker = SimpleNamespace(model_runner=SimpleNamespace(model=model))
    state = {"a": torch.zeros(2), "b": torch.ones(3)}
    assert load_into_worker(worker, state) == 2
    assert [[name for name, _ in call] for call in received] == [["a", "b"]]


def test_the_loop_thread_runs_coroutines(engine: VllmEngine) -> None:
    async def answer() -> int:
        await asyncio.sleep(0)
        return 42

    assert engine._run(answer()) == 42


def test_step_returns_each_finished_request_once(engine: VllmEngine) -> None:
    engine._requests = {1: live(1, [5, 6], [-0.5, -0.25]), 2: live(2, [9], [-1.0])}
    assert engine.num_active == 2
    engine._finished.put((1, "stop"))
    engine._finished.put((7, "abort"))  # aborted before its stream ended: already returned
    engine._finished.put((2, "length"))
    assert engine.step() == [
        GenOutput(1, (5, 6), (-0.5, -0.25), "stop", 3),
        GenOutput(2, (9,), (-1.0,), "length", 3),
    ]
    assert engine.num_active == 0 and engine.step() == []


def test_abort_returns_what_streamed_and_tells_vllm(engine: VllmEngine) -> None:
    engine._requests = {1: live(1, [5, 6, 7], [-0.5, -0.25]), 2: live(2, [9], [-1.0])}
    # a token whose log-probability has not arrived yet is not returned
    assert engine.abort([1, 4]) == [GenOutput(1, (5, 6), (-0.5, -0.25), "abort", 3)]
    assert engine._llm.calls == [("abort", ["1"])] and engine.num_active == 1
    assert engine.abort([4]) == [] and engine._llm.calls == [("abort", ["1"])]


def test_offload_sleeps_once_and_only_when_idle(engine: VllmEngine) -> None:
    engine._requests = {1: live(1, [], [])}
    with pytest.raises(AssertionError, match="AST_PRECONDITION"):
        engine.offload()
    assert engine._llm.calls == [] and engine._resident
    engine._requests = {}
    engine.offload()
    assert engine._llm.calls == [("sleep", 2)] and not engine._resident
    engine.offload()
    assert engine._llm.calls == [("sleep", 2)]


def test_stream_logprobs_are_the_processed_ones_and_never_silently_zero() -> None:
    from rlsched.engines.vllm_engine import stream_logprobs

    entry = SimpleNamespace
    chunk = [{5: entry(logprob=-0.25), 9: entry(logprob=-3.0)}, {6: entry(logprob=-1.5)}]
    assert stream_logprobs([5, 6], chunk, 0.7) == [-0.25, -1.5]
    assert stream_logprobs([5, 6], None, 0.0) == [0.0, 0.0]  # greedy: the engines' convention
    with pytest.raises(RuntimeError, match="sampled token 7"):
        stream_logprobs([7], [{5: entry(logprob=-0.1)}], 1.0)
    with pytest.raises(RuntimeError, match="no log-probability"):
        stream_logprobs([5], None, 1.0)
