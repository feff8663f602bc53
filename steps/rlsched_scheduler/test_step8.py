"""Step 8 of design/rlsched_scheduler.md: handlers of prompts, requests and environments."""

import pytest

from rlsched.config import RlschedConfig
from rlsched.core.buffer import TrajState
from rlsched.core.commands import InitialLayout, StartEnvStep
from rlsched.core.events import (
    EnvStepDone,
    EnvStepTimedOut,
    PromptsLoaded,
    RequestAborted,
    RequestFinished,
    Started,
)
from rlsched.core.machine import Scheduler


def _sched(max_turns: int = 2) -> Scheduler:
    sched = Scheduler(
        RlschedConfig.model_validate(
            {
                "devices": {"count": 2, "train": 1},
                "scheduler": {
                    "train_batch_size": 2,
                    "group_size": 2,
                    "max_turns": max_turns,
                    "max_tokens": 100,
                    "env_timeout_s": 10,
                },
            }
        )
    )
    sched._on_started(Started(0.0))
    sched._admit()  # asks for prompts: LoadPrompts(0, 2)
    sched._on_prompts_loaded(PromptsLoaded(0.0, 0, (10,)))
    sched._admit()
    sched._dispatch_queued()
    sched._out.clear()
    return sched


def test_prompts_are_validated_and_exhaustion_is_remembered() -> None:
    sched = _sched()
    load_id = sched._load_pending  # the second LoadPrompts, for the group still missing
    assert load_id == 1
    with pytest.raises(ValueError, match="VAL_INT_RANGE failed"):
        sched._on_prompts_loaded(PromptsLoaded(0.0, load_id, (0,)))
    assert sched._load_pending == load_id  # rejected: nothing changed
    sched._on_prompts_loaded(PromptsLoaded(0.0, load_id, ()))
    assert sched._exhausted and sched._load_pending is None


def test_started_announces_the_layout_once() -> None:
    sched = Scheduler(
        RlschedConfig.model_validate(
            {"devices": {"count": 4, "train": 2}, "scheduler": {"mode": "disaggregated"}}
        )
    )
    sched._on_started(Started(0.0))
    assert sched._out == [InitialLayout((0, 1), (2, 3))]
    sched._on_started(Started(0.0))
    assert sched._out == [InitialLayout((0, 1), (2, 3))] and sched.stats.ignored_events == 1


def test_only_the_outstanding_prompt_load_is_applied() -> None:
    """A duplicated or unknown PromptsLoaded must not admit prompts twice."""
    sched = _sched()
    assert sched.buffer.admitted_groups == 1 and sched._load_pending == 1  # second load
    backlog = list(sched._backlog)
    sched._on_prompts_loaded(PromptsLoaded(0.5, 0, (10,)))  # the first answer, again
    sched._on_prompts_loaded(PromptsLoaded(0.5, 7, (10,)))  # an id never sent
    assert list(sched._backlog) == backlog and sched.stats.ignored_events == 2
    assert sched._load_pending == 1


def test_turn_loop_until_max_turns() -> None:
    sched = _sched(max_turns=2)
    sched._on_request_finished(RequestFinished(1.0, 0, 7))
    assert sched._out == [StartEnvStep(0, 0, 10.0)]  # clock 0: handlers called directly
    sched._on_env_step_done(EnvStepDone(2.0, 0, 0, 3, False))
    traj = sched.buffer.trajs[0]
    assert traj.state is TrajState.QUEUED and traj.turn == 1 and traj.context_tokens == 20
    assert traj.env_deadline == 0.0 + 10  # clock 0: the idle session's deadline starts
    sched._dispatch_queued()
    rid = traj.rid
    sched._on_request_finished(RequestFinished(3.0, rid, 1))
    sched._on_env_step_done(EnvStepDone(4.0, 0, 1, 0, False))
    assert traj.state is TrajState.DONE and sched.stats.completed == 1


def test_abort_requeues_and_timeouts_complete_flagged() -> None:
    sched = _sched()
    sched._on_request_aborted(RequestAborted(1.0, 1, 4))
    assert sched.buffer.trajs[1].state is TrajState.QUEUED and sched.stats.aborted == 1
    sched._on_request_finished(RequestFinished(1.0, 0, 2))
    sched._on_env_step_timed_out(EnvStepTimedOut(11.0, 0, 0))
    traj = sched.buffer.trajs[0]
    assert traj.state is TrajState.DONE and traj.timed_out and sched.stats.env_timeouts == 1


def test_late_and_unknown_events_are_ignored_and_counted() -> None:
    sched = _sched()
    sched._on_request_finished(RequestFinished(1.0, 42, 1))
    sched._on_env_step_done(EnvStepDone(1.0, 0, 5, 1, True))  # wrong state and turn
    sched._on_env_step_timed_out(EnvStepTimedOut(1.0, 77, 0))
    assert sched.stats.ignored_events == 3
