"""Step 1 of design/rlsched_routing.md: the counters and the shared context."""

import dataclasses

from rlsched.config import RlschedConfig
from rlsched.core.buffer import TrajectoryBuffer
from rlsched.core.context import Context, Stats
from rlsched.core.hooks import BoundedStaleness
from rlsched.pool import GpuPool


def test_counters_start_at_zero() -> None:
    stats = Stats()
    assert all(getattr(stats, f.name) == 0 for f in dataclasses.fields(stats))
    assert {"env_session_timeouts", "shrinks_rolled_back", "stale_requests_aborted"} <= {
        f.name for f in dataclasses.fields(stats)
    }


def test_context_shares_one_operation_id_counter_and_a_fresh_command_list() -> None:
    cfg = RlschedConfig.model_validate({"devices": {"count": 2, "train": 1}})
    ctx = Context(cfg, GpuPool(2), TrajectoryBuffer(8, 100), BoundedStaleness(1))
    assert [ctx.new_op_id() for _ in range(3)] == [0, 1, 2]
    assert (ctx.now, ctx.version, ctx.out) == (0.0, 0, [])
    other = Context(cfg, GpuPool(2), TrajectoryBuffer(8, 100), BoundedStaleness(1))
    assert other.out is not ctx.out and other.stats is not ctx.stats
