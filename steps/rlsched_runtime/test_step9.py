"""Step 9 of design/rlsched_runtime.md: turns in batches. A worker takes requests in `submit`
batches and hands each output back exactly once through `collect`; the caller's `Mailbox` sends
one `submit` per device and flush and keeps one `collect` out per device with requests out."""

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import ray
from runtime_parts import start_ray

from rlsched.engines.base import GenOutput, Sampling
from rlsched.model import ModelSpec
from rlsched.runtime.workers import DeviceWorker, Mailbox
from rlsched.trainer.grpo import TrainSpec

SPEC = ModelSpec(hidden_size=16, heads=2, kv_heads=1, intermediate_size=32)


def worker() -> DeviceWorker:
    return DeviceWorker(0, SPEC, 20, TrainSpec(), 1.0, (), seed=0, max_batch=8)


def within(call: Callable[[], Any], seconds: float = 30.0) -> Any:
    """`call()` run in a thread, its value or its exception; fails if it has not returned in
    `seconds` (a blocked `collect` would otherwise hang the check)."""
    box: list[Any] = []

    def run() -> None:
        try:
            box.append(("value", call()))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            box.append(("error", exc))

    th = threading.Thread(target=run, daemon=True)
    th.start()
    th.join(timeout=seconds)
    assert box, f"no answer within {seconds} s"
    kind, value = box[0]
    if kind == "error":
        raise value
    return value


def collect_all(w: DeviceWorker, count: int) -> list[list[GenOutput]]:
    """`collect` until `count` outputs came back; the answers as they came."""
    answers: list[list[GenOutput]] = []
    while sum(len(a) for a in answers) < count:
        answer = within(w.collect)
        assert answer, "collect returned nothing while requests were out"
        answers.append(answer)
    return answers


def test_a_batch_comes_back_through_collect_each_output_once() -> None:
    w = worker()
    batch = [(0, [3, 4, 5], 1, None), (1, [3, 4], 3, 7), (2, [5], 5, 7)]
    assert w.submit(batch, Sampling()) == 3
    answers = collect_all(w, 3)
    outputs = [out for answer in answers for out in answer]
    assert sorted(out.rid for out in outputs) == [0, 1, 2]
    # in the order they ended: the shortest first, the longest last
    assert [out.rid for out in outputs] == [0, 1, 2]
    for out in outputs:
        assert len(out.token_ids) == len(out.logprobs) == batch[out.rid][2]
        assert out.finish_reason == "length"
    assert w._finished == [] and not w._waiting
    w.stop()


def test_generate_and_submit_share_the_engine_and_keep_their_outputs_apart() -> None:
    w = worker()
    got: list[GenOutput] = []
    th = threading.Thread(target=lambda: got.append(w.generate(10, [3, 4], 6, Sampling())))
    th.start()
    w.submit([(11, [5, 6], 2, None)], Sampling())
    [[mine]] = collect_all(w, 1)
    th.join(timeout=30)
    assert mine.rid == 11 and len(mine.token_ids) == 2
    assert [out.rid for out in got] == [10] and len(got[0].token_ids) == 6
    assert w._finished == []  # generate's output never reached collect
    w.stop()


def test_an_aborted_request_answers_through_collect_with_its_tokens() -> None:
    w = worker()
    w.submit([(20, [3, 4], 500, None)], Sampling())
    deadline = time.monotonic() + 20
    while not w.engine.partial(20):
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert w.abort([20, 21]) == 1
    [[out]] = collect_all(w, 1)
    assert out.rid == 20 and out.finish_reason == "abort"
    assert 0 < len(out.token_ids) == len(out.logprobs) < 500
    w.stop()


def test_a_stop_wakes_a_waiting_collect_with_nothing() -> None:
    w = worker()
    answer: list[Any] = []
    th = threading.Thread(target=lambda: answer.append(w.collect()), daemon=True)
    th.start()
    time.sleep(0.05)  # let it wait (the check holds either way: stop wakes it or it finds stop)
    w.stop()
    th.join(timeout=10)
    assert answer == [[]]


def test_a_decode_failure_wakes_a_waiting_collect_and_every_later_one() -> None:
    """The engine fails at its third step, after the collect woken by the submit has found
    nothing and waits again (the check holds the gate between the steps until it does), so
    only the failure's own wake-up can end that wait."""
    w = worker()
    step = w.engine.step
    calls = [0]
    second, held = threading.Event(), threading.Event()

    def breaks_at_the_third_step() -> list:
        calls[0] += 1
        if calls[0] == 3:
            raise ValueError("the engine broke")
        outputs = step()
        if calls[0] == 2:
            second.set()
            assert held.wait(30)  # the check holds the gate: no third step until it lets go
        return outputs

    w.engine.step = breaks_at_the_third_step
    errors: list[BaseException] = []
    th = threading.Thread(
        target=lambda: errors.append(pytest.raises(RuntimeError, w.collect)), daemon=True
    )
    th.start()
    time.sleep(0.05)  # the collect waits before the failure (either order must wake it)
    w.submit([(30, [3, 4], 20, None)], Sampling())
    assert second.wait(30)
    with w._gate:
        held.set()
        deadline = time.monotonic() + 30
        while len(w._lock._waiters) < 1:  # the collect is waiting again, nothing to return
            assert time.monotonic() < deadline
            time.sleep(0.01)
    th.join(timeout=30)
    assert len(errors) == 1, "the waiting collect was not woken by the failure"
    with pytest.raises(RuntimeError) as later:
        within(w.collect)
    for exc in (errors[0].value, later.value):
        assert str(exc) == "decode loop of device 0 failed"
        assert isinstance(exc.__cause__, ValueError)
    with pytest.raises(RuntimeError, match="decode loop of device 0 failed"):
        w.submit([(31, [3], 1, None)], Sampling())
    w.stop()


@pytest.fixture(scope="module")
def actors() -> Iterator[list[Any]]:
    start_ray()
    cls = ray.remote(DeviceWorker).options(num_gpus=1, num_cpus=0, max_concurrency=8)
    workers = [cls.remote(d, SPEC, 20, TrainSpec(), 1.0, (), 0, 8) for d in range(2)]
    yield workers
    for actor in workers:
        ray.kill(actor, no_restart=True)
    ray.shutdown()


def drain(mailbox: Mailbox, workers: list[Any], device: int, ref: Any) -> list[GenOutput]:
    """Follow `device`'s collects from `ref` until the mailbox arms none; every output."""
    outputs: list[GenOutput] = []
    while ref is not None:
        answer = ray.get(ref, timeout=60)
        outputs.extend(answer)
        ref = mailbox.collected(device, len(answer), workers)
    return outputs


def test_the_mailbox_sends_one_submit_per_device_and_keeps_one_collect_out(
    actors: list[Any],
) -> None:
    mailbox = Mailbox(Sampling())
    mailbox.queue(0, (0, [3, 4], 2, None))
    mailbox.queue(0, (1, [3, 5], 3, None))
    mailbox.queue(1, (2, [4], 1, None))
    assert mailbox.out() == 3
    sent = mailbox.flush(actors)
    assert [(device, collect) for _, device, collect in sent] == [
        (0, False),
        (0, True),
        (1, False),
        (1, True),
    ]
    assert ray.get([sent[0][0], sent[2][0]], timeout=60) == [2, 1]  # each submit's count
    assert mailbox.flush(actors) == [] and mailbox.out() == 3  # nothing queued, all still out
    mailbox.queue(0, (3, [6], 4, None))
    [(ref, device, collect)] = mailbox.flush(actors)  # device 0's collect is already out
    assert (device, collect) == (0, False) and ray.get(ref, timeout=60) == 1
    zero = drain(mailbox, actors, 0, sent[1][0])
    assert sorted((out.rid, len(out.token_ids)) for out in zero) == [(0, 2), (1, 3), (3, 4)]
    [one] = drain(mailbox, actors, 1, sent[3][0])
    assert (one.rid, len(one.token_ids)) == (2, 1)
    assert mailbox.out() == 0
    # the next turn arms a fresh collect: none was left out
    mailbox.queue(1, (4, [3], 1, None))
    again = mailbox.flush(actors)
    assert [(device, collect) for _, device, collect in again] == [(1, False), (1, True)]
    [four] = drain(mailbox, actors, 1, again[1][0])
    assert four.rid == 4


def test_the_mailbox_refuses_a_count_it_never_sent_and_forgets_a_lost_device(
    actors: list[Any],
) -> None:
    mailbox = Mailbox(Sampling())
    with pytest.raises(AssertionError):
        mailbox.collected(0, 0, actors)  # no collect out for device 0
    mailbox.queue(0, (10, [3], 1, None))
    _, (collect, _, _) = mailbox.flush(actors)
    with pytest.raises(AssertionError):
        mailbox.collected(0, 2, actors)  # one request out, two answers claimed
    [out] = drain(mailbox, actors, 0, collect)
    assert out.rid == 10
    mailbox.queue(1, (11, [3], 1, None))
    mailbox.queue(0, (12, [3], 1, None))
    mailbox.forget(1)
    assert mailbox.out() == 1  # device 1's queued turn is gone, device 0's stays
    sent = mailbox.flush(actors)
    assert {device for _, device, _ in sent} == {0}
    drain(mailbox, actors, 0, sent[1][0])
    # a device forgotten with a collect out starts afresh: its replacement's first turn arms a
    # collect of its own (the driver kills the lost actor, whose collect nobody reads again)
    cls = ray.remote(DeviceWorker).options(num_gpus=1, num_cpus=0, max_concurrency=8)
    lost, replacement = (cls.remote(1, SPEC, 20, TrainSpec(), 1.0, (), 0, 8) for _ in range(2))
    mailbox.queue(1, (13, [3], 1, None))
    first = mailbox.flush([actors[0], lost])
    assert [(d, c) for _, d, c in first] == [(1, False), (1, True)]
    mailbox.forget(1)
    ray.kill(lost, no_restart=True)
    mailbox.queue(1, (14, [3], 1, None))
    second = mailbox.flush([actors[0], replacement])
    assert [(d, c) for _, d, c in second] == [(1, False), (1, True)] and mailbox.out() == 1
    [out] = drain(mailbox, [actors[0], replacement], 1, second[1][0])
    assert out.rid == 14 and mailbox.out() == 0
    ray.kill(replacement, no_restart=True)


def test_an_empty_answer_from_a_stopped_worker_arms_no_collect(actors: list[Any]) -> None:
    cls = ray.remote(DeviceWorker).options(num_gpus=1, num_cpus=0, max_concurrency=8)
    actor = cls.remote(0, SPEC, 20, TrainSpec(), 1.0, (), 0, 8)
    ray.get(actor.stop.remote(), timeout=60)  # its decode thread never runs the request
    mailbox = Mailbox(Sampling())
    mailbox.queue(0, (20, [3], 4, None))
    _, (collect, _, _) = mailbox.flush([actor])
    assert ray.get(collect, timeout=60) == []
    assert mailbox.collected(0, 0, [actor]) is None and mailbox.out() == 1
    assert mailbox.flush([actor]) == []  # nothing queued: no call, no collect
    ray.kill(actor, no_restart=True)
