"""Step 4 of design/rlsched_runtime.md: the device worker serves blocking generate calls."""

import threading
import time

import pytest

from rlsched.engines.base import Sampling
from rlsched.model import ModelSpec
from rlsched.runtime.workers import DeviceWorker, Timing
from rlsched.trainer.grpo import TrainSpec

SPEC = ModelSpec(hidden_size=16, heads=2, kv_heads=1, intermediate_size=32)


def worker() -> DeviceWorker:
    return DeviceWorker(0, SPEC, 20, TrainSpec(), 1.0, (), seed=0, max_batch=8)


def test_concurrent_generate_calls_each_get_their_answer() -> None:
    w = worker()
    results: dict[int, object] = {}

    def call(rid: int, n: int) -> None:
        results[rid] = w.generate(rid, [3, 4, 5], n, Sampling())

    threads = [threading.Thread(target=call, args=(rid, rid + 1)) for rid in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=30)
    assert sorted(results) == [0, 1, 2, 3]
    for rid, out in results.items():
        assert out.rid == rid and len(out.token_ids) == rid + 1 and out.finish_reason == "length"
    w.stop()


def test_abort_returns_the_tokens_made_so_far_and_offload_is_timed() -> None:
    w = worker()
    out: list = []
    th = threading.Thread(target=lambda: out.append(w.generate(7, [3, 4], 500, Sampling())))
    th.start()
    deadline = time.monotonic() + 20
    while not w.engine.num_active or not w.engine.partial(7):
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert w.abort([7, 8]) == 1
    th.join(timeout=10)
    assert out[0].finish_reason == "abort" and 0 < len(out[0].token_ids) < 500
    assert len(out[0].logprobs) == len(out[0].token_ids)
    timing = w.offload()
    assert isinstance(timing, Timing) and timing.end >= timing.start
    assert not w.engine.resident
    with pytest.raises(AssertionError, match="resident"):
        w.generate(8, [3], 2, Sampling())
    w.stop()


def test_a_decode_failure_reaches_every_caller_with_its_cause() -> None:
    """0.8.5: a waiting call reads the failure only when its output is missing; each caller,
    the one waiting and a later one, gets one RuntimeError naming the device, the engine's error
    as its cause."""
    w = worker()

    def broken() -> list:
        raise ValueError("the engine broke")

    w.engine.step = broken
    errors: list[BaseException] = []
    for rid in (0, 1):  # 0 waits when the step fails; 1 comes after the failure
        with pytest.raises(RuntimeError) as caught:
            w.generate(rid, [3, 4, 5], 4, Sampling())
        errors.append(caught.value)
    for exc in errors:
        assert str(exc) == "decode loop of device 0 failed"
        assert isinstance(exc.__cause__, ValueError)
    w.stop()
