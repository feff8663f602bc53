"""A stand-in for vLLM's AsyncLLM, for the vLLM engine's checks where vLLM cannot run (no CUDA GPU).

The engine's own code runs for real (its event-loop thread, its queues, its bookkeeping); only
the calls into vLLM land here, recorded, with a worker whose model records the weights it is
given, so the checks see exactly what the engine asks of vLLM. On a GPU, tests/test_vllm_engine.py
runs the same engine against vLLM itself.
"""

import asyncio
import queue
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any

from rlsched.engines.vllm_engine import VllmEngine


class AsyncLLMStandIn:
    """Records the AsyncLLM calls the engine makes; `collective_rpc` runs the function on one
    stand-in worker (its model records the weights loaded into it)."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.loaded: list[list[str]] = []
        model = SimpleNamespace(
            load_weights=lambda weights: self.loaded.append([n for n, _ in weights])
        )
        self.worker = SimpleNamespace(model_runner=SimpleNamespace(model=model))

    async def abort(self, request_ids: list[str]) -> None:
        self.calls.append(("abort", list(request_ids)))

    async def sleep(self, level: int) -> None:
        self.calls.append(("sleep", level))

    async def wake_up(self) -> None:
        self.calls.append(("wake_up",))

    async def collective_rpc(
        self, method: Callable[..., Any], args: tuple[Any, ...] = ()
    ) -> list[Any]:
        self.calls.append(("rpc", method.__name__))
        return [method(self.worker, *args)]

    def shutdown(self) -> None:
        self.calls.append(("shutdown",))


@contextmanager
def engine_without_vllm(version: int = 3, sleep_level: int = 2) -> Iterator[VllmEngine]:
    """An engine as `__init__` sets it up before it starts vLLM, its loop thread running, the
    AsyncLLM replaced by the stand-in."""
    eng = object.__new__(VllmEngine)
    eng.version = version
    eng.sleep_level = sleep_level
    eng._requests = {}
    eng._finished = queue.Queue()
    eng._pending_weights = None
    eng._resident = True
    eng._loop = asyncio.new_event_loop()
    eng._thread = threading.Thread(target=eng._loop.run_forever, daemon=True)
    eng._thread.start()
    eng._llm = AsyncLLMStandIn()
    try:
        yield eng
    finally:
        eng._loop.call_soon_threadsafe(eng._loop.stop)
        eng._thread.join(timeout=10)
