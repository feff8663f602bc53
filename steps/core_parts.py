"""The scheduler's lifecycles wired as `Scheduler.__init__` wires them, for the checks of the
lifecycle documents, which run before the `Scheduler` itself is generated."""

from __future__ import annotations

from typing import Any

from rlsched.config import RlschedConfig
from rlsched.core.buffer import TrajectoryBuffer
from rlsched.core.context import Context, Stats
from rlsched.core.hooks import BoundedStaleness, FifoPlacement
from rlsched.core.policies import make_policy
from rlsched.core.routing import Request, Router
from rlsched.pool import GpuPool


class CoreParts:
    """Context, router and (once generated) turns, transitions and training of one config."""

    def __init__(self, cfg: RlschedConfig | dict[str, Any]) -> None:
        cfg = cfg if isinstance(cfg, RlschedConfig) else RlschedConfig.model_validate(cfg)
        sch = cfg.scheduler
        self.cfg = cfg
        self.policy = make_policy(cfg)
        self.placement = FifoPlacement()
        self.staleness = BoundedStaleness(sch.staleness)
        self.pool = GpuPool(
            cfg.num_devices, cfg.devices.gpus_per_rank, self.policy.initial_offloaded()
        )
        self.buffer = TrajectoryBuffer(sch.group_size, sch.max_tokens)
        self.ctx = Context(cfg, self.pool, self.buffer, self.staleness)
        self.router = Router(self.ctx, sch.max_inflight_per_rank)
        self.turns = self.transitions = self.trainer = None
        try:
            from rlsched.core.turns import Turns

            self.turns = Turns(self.ctx, self.router, self.placement)
            from rlsched.core.transitions import Transitions

            self.transitions = Transitions(self.ctx, self.router)
            from rlsched.core.training import Training

            self.trainer = Training(self.ctx, self.router)
        except ImportError:
            pass  # a later step generates it

    @property
    def stats(self) -> Stats:
        return self.ctx.stats

    @property
    def in_flight(self) -> int:
        return len(self.router.requests)

    @property
    def shrinking(self) -> tuple[int, ...]:
        op = self.transitions.shrink
        return op.devices if op is not None else ()

    @property
    def reload_pending(self) -> frozenset[int]:
        return frozenset(self.transitions.reload_after_offload)

    @property
    def training(self) -> bool:
        return self.trainer.op is not None


def release(parts: Any, rid: int, new_tokens: int) -> Request | None:
    """What the scheduler's request handlers do with a slot: forget the request, then let the
    transitions decide what the freed slot means (offer it, or offload a drained rank)."""
    req = parts.router.release(rid, new_tokens)
    if req is not None:
        rank_freed = getattr(parts.transitions, "rank_freed", None)  # a later step generates it
        if rank_freed is not None:
            rank_freed(req.rank)
        else:
            parts.router.push_rank(req.rank)
    return req
