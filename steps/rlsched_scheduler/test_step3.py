"""Step 3 of design/rlsched_scheduler.md: the timeshare policy and the factory."""

from rlsched.config import RlschedConfig
from rlsched.core.policies import (
    ColocatePolicy,
    DisaggregatedPolicy,
    TimesharePolicy,
    make_policy,
)
from rlsched.pool import GpuPool


def _cfg(mode: str = "timeshare", **scheduler) -> RlschedConfig:
    devices = {"count": 4} if mode == "colocate" else {"count": 4, "train": 2}
    return RlschedConfig.model_validate(
        {
            "devices": devices,
            "scheduler": {"mode": mode, "train_batch_size": 4, "group_size": 2, **scheduler},
        }
    )


def test_timeshare_shrinks_the_training_set_when_the_next_batch_reaches_the_trigger() -> None:
    """Progress is counted in whole groups of the next batch (2 groups of 2 here): ready
    groups beyond the batch do not count, since they train in a later step."""
    policy = TimesharePolicy(_cfg(shrink={"trigger": 3}))
    pool = GpuPool(4)
    assert policy.shrink_targets(pool, ready_groups=0) == ()
    assert policy.shrink_targets(pool, ready_groups=1) == ()  # 2 of the batch's 4 < 3
    assert policy.shrink_targets(pool, ready_groups=2) == (2, 3)
    whole = TimesharePolicy(_cfg(train_batch_size=4, group_size=1))  # trigger: the batch
    assert whole.shrink_targets(pool, ready_groups=3) == ()
    assert whole.shrink_targets(pool, ready_groups=9) == (2, 3)
    pool.shrink_sampler([3])
    assert policy.shrink_targets(pool, ready_groups=2) == ()  # a shrink of the set under way
    pool.mark_offloaded(3)  # the rest of the set asleep: its part in rollout is shrunk
    assert policy.shrink_targets(pool, ready_groups=2) == (2,)
    pool.expand_sampler([3])
    assert policy.shrink_targets(pool, ready_groups=2) == ()  # part of the set expanding


def test_timeshare_never_strands_the_tail() -> None:
    policy = TimesharePolicy(_cfg(shrink={"trigger": 1}))
    pool = GpuPool(4)
    pool.mark_lost(0)
    pool.mark_lost(1)
    assert policy.shrink_targets(pool, ready_groups=1) == ()  # batch incomplete
    assert policy.shrink_targets(pool, ready_groups=2) == (2, 3)


def test_factory() -> None:
    assert type(make_policy(_cfg("colocate"))) is ColocatePolicy
    assert type(make_policy(_cfg("disaggregated"))) is DisaggregatedPolicy
    assert type(make_policy(_cfg("timeshare"))) is TimesharePolicy
