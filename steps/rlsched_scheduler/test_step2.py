"""Step 2 of design/rlsched_scheduler.md: the colocate and disaggregated policies."""

from rlsched.config import RlschedConfig
from rlsched.core.policies import ColocatePolicy, DisaggregatedPolicy, Policy
from rlsched.pool import GpuPool


def _cfg(mode: str, **devices) -> RlschedConfig:
    return RlschedConfig.model_validate(
        {
            "devices": {"count": 4, **devices},
            "scheduler": {"mode": mode, "train_batch_size": 4, "group_size": 2, "staleness": 0},
        }
    )


def test_colocate_shrinks_everything_once_a_batch_is_ready() -> None:
    policy = ColocatePolicy(_cfg("colocate"))
    assert isinstance(policy, Policy)
    pool = GpuPool(4)
    assert policy.shrink_targets(pool, ready_groups=1) == ()
    assert policy.shrink_targets(pool, ready_groups=2) == (0, 1, 2, 3)
    assert policy.train_devices(pool) == ()  # still rolling out
    pool.shrink_sampler([0, 1, 2, 3])
    for gpu in range(4):
        pool.mark_offloaded(gpu)
    assert policy.train_devices(pool) == (0, 1, 2, 3)
    pool.expand_sampler([0])
    assert policy.shrink_targets(GpuPool(4), 2) == (0, 1, 2, 3)
    assert policy.shrink_targets(pool, 2) == ()  # an expand is still running


def test_disaggregated_keeps_fixed_sides() -> None:
    policy = DisaggregatedPolicy(_cfg("disaggregated", train=2))
    assert policy.initial_offloaded() == (2, 3)
    pool = GpuPool(4, offloaded=policy.initial_offloaded())
    assert policy.shrink_targets(pool, 10) == ()
    assert policy.train_devices(pool) == (2, 3)
    assert policy.expand_targets(pool, (2, 3)) == ()
    assert policy.reclaim_targets(pool, 0) == ()


def test_disaggregated_reclaims_a_training_gpu_when_rollout_is_gone() -> None:
    policy = DisaggregatedPolicy(_cfg("disaggregated", train=2))
    pool = GpuPool(4, offloaded=(2, 3))
    pool.mark_lost(0)
    pool.mark_lost(1)
    assert policy.reclaim_targets(pool, 0) == (3,)
    assert policy.train_set == (2,)


def test_disaggregated_keeps_a_recovered_training_gpu_asleep() -> None:
    policy = DisaggregatedPolicy(_cfg("disaggregated", train=2))
    pool = GpuPool(4, offloaded=(2, 3))
    for gpu in (1, 3):
        pool.mark_lost(gpu)
        pool.mark_recovered(gpu)
    assert policy.rejoin_targets(pool, (3,)) == ()  # a training device: the next step's
    assert policy.rejoin_targets(pool, (1,)) == (1,)  # a rollout device reloads
