"""Step 4 of design/rlsched_scheduler.md: records, counters and a constructed scheduler."""

from rlsched.config import RlschedConfig
from rlsched.core.machine import Request, Scheduler, ShrinkOp, Stats, TrainOp
from rlsched.pool import DeviceMode


def _cfg(mode: str) -> RlschedConfig:
    devices = {"count": 4, "gpus_per_rank": 2}
    if mode != "colocate":
        devices["train"] = 2
    return RlschedConfig.model_validate(
        {"devices": devices, "scheduler": {"mode": mode, "train_batch_size": 4, "group_size": 2}}
    )


def test_records() -> None:
    req = Request(rid=1, tid=2, rank=0, version=0, max_new_tokens=10)
    assert req.aborting is False
    op = ShrinkOp((1,), (2, 3), {2, 3})
    assert op.offload_sent == set()
    assert TrainOp(1, (2, 3), 0, []).failed is False
    assert Stats().events == 0 and Stats().shrinks_rolled_back == 0
    assert Stats().env_session_timeouts == 0


def test_constructed_scheduler_has_no_effects_yet() -> None:
    sched = Scheduler(_cfg("timeshare"))
    assert sched.version == 0 and sched.step == 0 and sched.now == 0.0
    assert sched.in_flight == 0 and sched.training is False
    assert sched.pool.gpus_in(DeviceMode.ROLLOUT) == (0, 1, 2, 3)
    assert [sched._routable(r) for r in range(2)] == [True, True]
    assert sorted(sched._heap) == [(0, 0), (0, 1)]
    assert sched._dev_op == [None] * 4 and sched._load_pending is None and not sched._started


def test_disaggregated_training_gpus_start_offloaded_and_unroutable() -> None:
    sched = Scheduler(_cfg("disaggregated"))
    assert sched.pool.gpus_in(DeviceMode.OFFLOADED) == (2, 3)
    assert sched._routable(0) and not sched._routable(1)
    sched._push_rank(1)
    assert (0, 1) not in sched._heap
