"""Step 5 of design/rlsched_runtime.md: weights, the training rounds, exports, stop."""

import threading
import time

import torch

from rlsched.engines.base import Sampling
from rlsched.model import ModelSpec
from rlsched.runtime.workers import DeviceWorker
from rlsched.trainer.grpo import TrainExample, TrainSpec

SPEC = ModelSpec(hidden_size=16, heads=2, kv_heads=1, intermediate_size=32)
DATA = [
    TrainExample((3, 4, 5), (False, False, True), (0.0, 0.0, -2.9), 1.0),
    TrainExample((3, 4, 6), (False, False, True), (0.0, 0.0, -3.1), -1.0),
]


def worker(device: int) -> DeviceWorker:
    return DeviceWorker(device, SPEC, 20, TrainSpec(lr=0.05), 1.0, (), seed=0, max_batch=8)


def test_two_devices_train_one_step_and_an_engine_serves_it_after_reload() -> None:
    a, b = worker(0), worker(1)
    assert (a.ping(), b.ping()) == (0, 1)
    pa = a.train_grads(DATA[:1], 0, None)
    pb = b.train_grads(DATA[1:], 0, None)
    assert a.train_apply(pa, pb)["tokens"] == 2.0
    b.train_apply(pa, pb)
    weights, ckpt = a.train_export(1)
    assert ckpt["version"] == 1
    for name, tensor in b.train_export(1)[0].items():
        assert torch.equal(tensor, weights[name]), name
    # the RL-Fusion switch of the step on each device: unparked at its first round, parked now
    for w in (a, b):
        record = w.train_commit(1)
        # the first step came with parameters only and leaves with Adam's two moments too
        assert record.park_bytes == 3 * record.unpark_bytes > 0
        assert record.unpark.end <= record.park.start and w.trainer.parked
    # a third replica catches up from the checkpoint before its next round
    c = worker(2)
    c.train_grads(DATA, 1, ckpt)
    assert c.trainer.version == 1
    # an offloaded engine takes weights into its host copy; reload serves them
    a.offload()
    a.load_weights(weights, 1)
    a.reload()
    assert a.stats()["version"] == 1.0
    out = a.generate(1, [3, 4], 2, Sampling())
    stats = a.stats()
    assert out.version == 1 and stats["forward_passes"] >= 2
    # the KV engine's counters: the prompt and the pending token fed, nothing padded or reused
    assert stats["tokens_computed"] == stats["tokens_padded"] == 3
    assert stats["tokens_reused"] == 0
    a.generate(2, [3, 4, *out.token_ids, 5], 1, Sampling())  # the next turn finds its prefix
    assert a.stats()["tokens_reused"] == 3
    for w in (a, b, c):
        w.stop()


def test_stop_returns_pending_calls_as_aborted() -> None:
    w = worker(0)
    out: list = []
    th = threading.Thread(target=lambda: out.append(w.generate(1, [3], 1000, Sampling())))
    th.start()
    deadline = time.monotonic() + 20
    while not w.engine.num_active:
        assert time.monotonic() < deadline and th.is_alive()
        time.sleep(0.01)
    w.stop()
    th.join(timeout=10)
    assert out and out[0].finish_reason == "abort"


def test_a_step_in_one_call_is_the_graph_s_calls_in_order() -> None:
    """`train_step` (one device's step as one call) against the same rounds called one by one
    on a replica: the same weights, checkpoint and metrics, parked at the end."""
    data = DATA + [
        TrainExample((3, 5, 6, 5), (False, True, True, True), (0.0, -3.0, -2.8, -3.2), 0.5)
    ]
    fused, graph = worker(0), worker(1)
    *rounds, weights, ckpt, record = fused.train_step(data, 2, 0, None)
    expect = [graph.train_apply(graph.train_grads(data[r::2], 0, None)) for r in range(2)]
    exported, expect_ckpt = graph.train_export(1)
    graph.train_commit(1)
    assert rounds == expect and [r["tokens"] for r in rounds] == [4.0, 1.0]
    assert weights.keys() == exported.keys()
    assert all(torch.equal(weights[n], exported[n]) for n in weights)
    assert ckpt["version"] == expect_ckpt["version"] == 1 and fused.trainer.version == 1
    assert fused.trainer.parked and record.park_bytes == 3 * record.unpark_bytes > 0
    # the next step starts from version 1 without a checkpoint
    assert fused.train_step(data, 1, 1, None)[0]["tokens"] == 5.0
    for w in (fused, graph):
        w.stop()
