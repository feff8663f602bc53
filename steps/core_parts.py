"""The scheduler's parts for the checks of the lifecycle documents (routing, transitions,
training): the core's own constructor, so no copy of `Scheduler.__init__`'s wiring can drift
from it. The checks call the lifecycles (`parts.router`, `parts.turns`, `parts.transitions`,
`parts.trainer`) directly, below `Scheduler.handle`."""

from __future__ import annotations

from collections.abc import Container
from typing import Any

from rlsched.config import RlschedConfig
from rlsched.core.hooks import FifoPlacement
from rlsched.core.machine import Scheduler
from rlsched.core.routing import Request, Router


def core_parts(cfg: RlschedConfig | dict[str, Any]) -> Scheduler:
    """The scheduler of `cfg` (a config or its dict) with FIFO placement, as the checks expect
    whatever placement the config would pick."""
    cfg = cfg if isinstance(cfg, RlschedConfig) else RlschedConfig.model_validate(cfg)
    return Scheduler(cfg, placement=FifoPlacement())


def release(parts: Scheduler, rid: int, new_tokens: int) -> Request | None:
    """What the scheduler's request handlers do with a slot first (`Scheduler.
    _on_request_finished`): forget the request, then let the transitions decide what the freed
    slot means (offer it, or offload a drained rank)."""
    req = parts.router.release(rid, new_tokens)
    if req is not None:
        parts.transitions.rank_freed(req.rank)
    return req


def roomiest(router: Router, blocked: Container[int] = ()) -> int | None:
    """The pump's pick under memory (`Turns.dispatch_queued`): the roomiest eligible rank under
    the fair share found now."""
    return router.pick_roomiest(router.fair_share(), blocked)
