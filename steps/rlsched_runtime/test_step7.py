"""Step 7 of design/rlsched_runtime.md: spans and utilisation."""

import pytest

from rlsched.runtime.recorder import Recorder


def test_rollout_spans_follow_requests_and_utilisation_merges_overlaps() -> None:
    rec = Recorder(2)
    rec.request_started(0, 0.0)
    rec.request_started(0, 1.0)
    rec.request_ended(0, 2.0)
    rec.request_ended(0, 4.0)  # one rollout span [0, 4]
    rec.span(0, "train", 3.0, 6.0)  # overlaps it: covered [0, 6]
    rec.request_started(1, 8.0)  # still open at the window's end
    assert [(s.kind, s.start, s.end) for s in rec.spans] == [
        ("rollout", 0.0, 4.0),
        ("train", 3.0, 6.0),
    ]
    assert rec.utilisation(0.0, 10.0) == pytest.approx((6 / 10 + 2 / 10) / 2)
    rec.device_lost(1, 9.0)
    assert rec.spans[-1].kind == "rollout" and rec.spans[-1].end == 9.0
    assert rec.utilisation(5.0, 5.0) == 0.0
    rec.add_row({"step": 1})
    assert rec.rows == [{"step": 1}]


def test_bad_spans_are_rejected() -> None:
    rec = Recorder(1)
    with pytest.raises(ValueError, match="VAL_IN_SET"):
        rec.span(0, "nap", 0.0, 1.0)
    with pytest.raises(ValueError, match="VAL_FLOAT_RANGE"):
        rec.span(0, "train", 2.0, 1.0)
    with pytest.raises(AssertionError, match="_inflight"):
        rec.request_ended(0, 1.0)


def test_a_lost_device_closes_its_span_and_starts_afresh() -> None:
    rec = Recorder(2)
    rec.device_lost(0, 1.0)  # nothing in flight: no span
    assert rec.spans == []
    rec.request_started(1, 2.0)
    rec.request_started(1, 3.0)
    rec.device_lost(1, 4.0)
    assert [(s.device, s.kind, s.start, s.end) for s in rec.spans] == [(1, "rollout", 2.0, 4.0)]
    # nothing of device 1 stays open after the loss: [4, 10] is idle
    assert rec.utilisation(4.0, 10.0) == 0.0
    # a replacement's first request opens a new span, its last one closes it
    rec.request_started(1, 5.0)
    rec.request_ended(1, 6.0)
    assert (rec.spans[-1].device, rec.spans[-1].start, rec.spans[-1].end) == (1, 5.0, 6.0)
    with pytest.raises(AssertionError, match="_inflight"):
        rec.request_ended(1, 7.0)


def test_utilisation_counts_each_device_over_the_window_only() -> None:
    rec = Recorder(2)
    rec.span(1, "train", 0.0, 2.0)
    rec.span(1, "sync", 1.0, 3.0)  # overlaps: covered [0, 3] once
    rec.span(0, "train", 9.0, 12.0)  # only [9, 10] inside the window
    assert rec.utilisation(0.0, 10.0) == pytest.approx((1 / 10 + 3 / 10) / 2)
    assert rec.utilisation(2.0, 4.0) == pytest.approx((0.0 + 1 / 2) / 2)
    rec.request_started(0, 1.0)  # open: counts up to the window's end
    assert rec.utilisation(0.0, 4.0) == pytest.approx((3 / 4 + 3 / 4) / 2)
    assert rec.utilisation(-1.0, 0.5) == pytest.approx((0.0 + 0.5 / 1.5) / 2)
