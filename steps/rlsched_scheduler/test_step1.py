"""Step 1 of design/rlsched_scheduler.md: the policy base."""

from rlsched.config import RlschedConfig
from rlsched.core.policies import Policy
from rlsched.pool import DeviceMode, GpuPool


def _cfg() -> RlschedConfig:
    return RlschedConfig.model_validate(
        {
            "devices": {"count": 8, "train": 2, "gpus_per_rank": 2},
            "scheduler": {"train_batch_size": 8, "group_size": 4},
        }
    )


def test_defaults() -> None:
    policy = Policy(_cfg())
    pool = GpuPool(8, 2)
    assert policy.train_set == (6, 7) and policy.groups_per_batch == 2 and policy.trigger == 8
    assert policy.initial_offloaded() == ()
    assert policy.shrink_targets(pool, 100) == ()
    assert policy.reclaim_targets(pool, 0) == ()  # GPUs still roll out
    assert policy.train_devices(pool) == ()  # the training set is still in rollout


def test_train_and_expand_need_offloaded_gpus() -> None:
    policy = Policy(_cfg())
    pool = GpuPool(8, 2, offloaded=(6, 7))
    assert policy.train_devices(pool) == (6, 7)
    assert policy.expand_targets(pool, (5, 6, 7)) == (6, 7)


def test_reclaim_when_nothing_can_roll_out_and_the_batch_is_incomplete() -> None:
    policy = Policy(_cfg())
    pool = GpuPool(8, 2, offloaded=(4, 5, 6, 7))
    for gpu in (0, 2):
        pool.mark_lost(gpu)
        pool.mark_lost(gpu + 1)
    assert policy.reclaim_targets(pool, ready_groups=1) == (4, 5, 6, 7)
    assert policy.reclaim_targets(pool, ready_groups=2) == ()  # train instead


def test_lost_training_set_adopts_the_last_rollout_rank() -> None:
    policy = Policy(_cfg())
    pool = GpuPool(8, 2)
    pool.mark_lost(6)
    assert policy.alive_train_set(pool) == (7,)
    pool.mark_lost(7)
    assert policy.alive_train_set(pool) == (4, 5)
    assert pool.mode(4) is DeviceMode.ROLLOUT


def test_a_recovered_device_follows_its_side() -> None:
    """Training set (4, 5, 6, 7) in ranks of two: a recovered rollout rank reloads; a recovered
    training rank reloads while the rest of the set rolls out, and stays asleep while the rest
    of the set is asleep (it trains with them)."""
    policy = Policy(
        RlschedConfig.model_validate(
            {
                "devices": {"count": 8, "train": 4, "gpus_per_rank": 2},
                "scheduler": {"train_batch_size": 8, "group_size": 4},
            }
        )
    )
    pool = GpuPool(8, gpus_per_rank=2)
    for gpu in (0, 1, 6, 7):
        pool.mark_lost(gpu)
        pool.mark_recovered(gpu)
    assert policy.rejoin_targets(pool, (0, 1)) == (0, 1)
    assert policy.rejoin_targets(pool, (6, 7)) == (6, 7)  # 4 and 5 roll out
    pool.shrink_sampler([4, 5])
    assert policy.rejoin_targets(pool, (6, 7)) == ()  # 4 and 5 are going to sleep
    pool.mark_offloaded(4)
    assert policy.rejoin_targets(pool, (6, 7)) == ()
    assert policy.rejoin_targets(pool, (0, 1)) == (0, 1)
