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


def test_timeshare_shrinks_the_training_set_at_the_trigger() -> None:
    policy = TimesharePolicy(_cfg(shrink={"trigger": 3}))
    pool = GpuPool(4)
    assert policy.shrink_targets(pool, completed=2, ready_groups=0) == ()
    assert policy.shrink_targets(pool, completed=3, ready_groups=0) == (2, 3)
    pool.shrink_sampler([3])
    assert policy.shrink_targets(pool, completed=3, ready_groups=0) == ()  # not all in rollout


def test_timeshare_never_strands_the_tail() -> None:
    policy = TimesharePolicy(_cfg(shrink={"trigger": 1}))
    pool = GpuPool(4)
    pool.mark_lost(0)
    pool.mark_lost(1)
    assert policy.shrink_targets(pool, completed=2, ready_groups=1) == ()  # batch incomplete
    assert policy.shrink_targets(pool, completed=4, ready_groups=2) == (2, 3)


def test_factory() -> None:
    assert type(make_policy(_cfg("colocate"))) is ColocatePolicy
    assert type(make_policy(_cfg("disaggregated"))) is DisaggregatedPolicy
    assert type(make_policy(_cfg("timeshare"))) is TimesharePolicy
