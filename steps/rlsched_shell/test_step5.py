"""Step 5 of design/rlsched_shell.md: shrink and expand timed by one rule in every shell."""

from rlsched.config import RlschedConfig
from rlsched.core.events import OffloadDone, ReloadDone, Started
from rlsched.core.machine import Scheduler
from rlsched.core.shell import TransitionClock


def _core() -> Scheduler:
    cfg = {
        "devices": {"count": 3, "train": 2},
        "scheduler": {"mode": "timeshare", "train_batch_size": 2, "group_size": 2},
    }
    core = Scheduler(RlschedConfig.model_validate(cfg))
    core.handle(Started(0.0))
    return core


def _begin(core: Scheduler, start, devices: tuple[int, ...]) -> int:
    """Start a shrink or an expand as the pump does; the op id of its one command."""
    start(devices)
    [command] = core.ctx.out
    core.ctx.out = []
    return command.op_id


def test_a_shrink_and_an_expand_are_timed_from_the_event_that_began_them() -> None:
    core = _core()
    clock = TransitionClock()
    assert clock.observe(0.0, core) == [] and clock.shrink_since is None
    op = _begin(core, core.transitions.begin_shrink, (1,))
    assert clock.observe(1.0, core) == [] and clock.shrink_since == 1.0
    assert clock.observe(1.2, core) == []  # nothing moved: nothing ends, nothing restarts
    core.handle(OffloadDone(1.5, 1, op))
    assert clock.observe(1.5, core) == [("shrink_s", 0.5)] and clock.shrink_since is None
    op = _begin(core, core.transitions.begin_expand, (1,))
    assert clock.observe(2.0, core) == [] and clock.expanding == {1: 2.0}
    core.handle(ReloadDone(2.25, 1, op))  # the weights are current: back in rollout at once
    assert clock.observe(2.25, core) == [("expand_s", 0.25)] and clock.expanding == {}
    assert clock.observe(3.0, core) == []


def test_an_expand_ends_when_its_device_leaves_expanding_for_anything_but_lost() -> None:
    """EXPANDING -> ROLLOUT -> SHRINKING between two looks is a finished expand (the next
    batch was ready when the weights arrived); EXPANDING -> LOST is not."""
    core = _core()
    pool = core.pool
    clock = TransitionClock()
    for device in (1, 2):
        pool.shrink_sampler([device])
        pool.mark_offloaded(device)
        pool.expand_sampler([device])
    assert clock.observe(4.0, core) == [] and clock.expanding.keys() == {1, 2}
    pool.mark_rollout(1)
    pool.shrink_sampler([1])
    pool.mark_lost(2)
    assert clock.observe(4.5, core) == [("expand_s", 0.5)] and clock.expanding == {}
