"""Step 1 of design/rlsched_core.md: the event base and the events of the sample path."""

import dataclasses

import pytest

from rlsched.core.events import (
    EnvStepDone,
    EnvStepTimedOut,
    Event,
    PromptsLoaded,
    RequestAborted,
    RequestFinished,
    Started,
)


def test_events_carry_time_first_and_are_values() -> None:
    events = [
        Started(0.0),
        PromptsLoaded(1.0, 0, (12, 30)),
        RequestFinished(2.0, 7, 100),
        RequestAborted(2.5, 8, 3),
        EnvStepDone(3.0, 5, 0, 20, False),
        EnvStepTimedOut(4.0, 5, 1),
    ]
    assert [e.time for e in events] == [0.0, 1.0, 2.0, 2.5, 3.0, 4.0]
    assert all(isinstance(e, Event) for e in events)
    assert RequestFinished(2.0, 7, 100) == events[2]
    assert hash(events[4]) == hash(EnvStepDone(3.0, 5, 0, 20, False))
    assert (events[4].tid, events[4].turn, events[4].obs_tokens, events[4].done) == (
        5,
        0,
        20,
        False,
    )


def test_events_are_frozen_and_slotted() -> None:
    event = RequestFinished(0.0, 1, 2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.rid = 3  # type: ignore[misc]
    assert not hasattr(event, "__dict__")
    assert [f.name for f in dataclasses.fields(RequestAborted)] == [
        "time",
        "rid",
        "new_tokens",
        "kv_free",
    ]
    assert [f.name for f in dataclasses.fields(PromptsLoaded)] == [
        "time",
        "load_id",
        "prompt_tokens",
    ]


def test_a_finish_says_whether_the_engine_stopped_the_turn() -> None:
    """`stopped` (0.5.0) comes last and defaults to False, so every older caller stays valid."""
    assert [f.name for f in dataclasses.fields(RequestFinished)] == [
        "time",
        "rid",
        "new_tokens",
        "stopped",
        "kv_free",
    ]
    assert RequestFinished(2.0, 7, 100).stopped is False
    stopped = RequestFinished(2.0, 7, 100, stopped=True)
    assert stopped.stopped is True and stopped != RequestFinished(2.0, 7, 100)


def test_memory_is_reported_optionally_after_every_older_field() -> None:
    """0.7.0 (issue 15): a rank's KV capacity once, its free KV on every answer; None (the
    default) when the shell does not know, so every older caller stays valid."""
    assert [f.name for f in dataclasses.fields(Started)] == ["time", "kv_tokens"]
    assert Started(0.0).kv_tokens is None and Started(0.0, 212_973).kv_tokens == 212_973
    assert RequestFinished(2.0, 7, 100).kv_free is None
    assert RequestAborted(2.0, 7, 3).kv_free is None
    assert RequestFinished(2.0, 7, 100, kv_free=5).kv_free == 5
    assert RequestAborted(2.0, 7, 3, 6) == RequestAborted(2.0, 7, 3, kv_free=6)
    assert RequestAborted(2.0, 7, 3, 6) != RequestAborted(2.0, 7, 3)
