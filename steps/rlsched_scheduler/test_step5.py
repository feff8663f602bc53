"""Step 5 of design/rlsched_scheduler.md: what shells and tests read."""

from rlsched.config import RlschedConfig
from rlsched.core.machine import Scheduler


def test_views_read_the_lifecycles() -> None:
    sched = Scheduler(
        RlschedConfig.model_validate(
            {
                "devices": {"count": 4, "train": 2},
                "scheduler": {"train_batch_size": 4, "group_size": 2},
            }
        )
    )
    assert (sched.version, sched.step, sched.now, sched.in_flight) == (0, 0, 0.0, 0)
    assert sched.training is False and sched._training is None and sched.shrinking == ()
    assert sched.stats is sched.ctx.stats
    sched.turns.backlog.append(10)
    assert list(sched._backlog) == [10] and sched._load_pending is None
    sched.turns.admit()
    sched.turns.dispatch_queued()
    sched.transitions.begin_shrink((2, 3))
    sched.ctx.now, sched.ctx.version = 4.0, 2
    assert sched.in_flight == 2 and sched.shrinking == (2, 3)
    assert (sched.now, sched.version) == (4.0, 2) and sched._load_pending == 0
