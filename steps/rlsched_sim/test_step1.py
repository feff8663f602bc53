"""Step 1 of design/rlsched_sim.md: the device timeline and its totals."""

import pytest

from rlsched.timeline import KINDS, Span, Timeline


def test_spans_and_totals_follow_activity_changes() -> None:
    timeline = Timeline(2)
    timeline.set(0, "rollout", 1.0)
    timeline.set(0, "rollout", 2.0)  # no change: no new span
    timeline.set(0, "train", 3.0)
    timeline.set(1, "offload", 0.5)
    timeline.close(4.0)
    assert timeline.spans[:2] == [Span(0, 0.0, 1.0, "idle"), Span(0, 1.0, 3.0, "rollout")]
    assert timeline.seconds([0], ["rollout"]) == pytest.approx(2.0)
    assert timeline.seconds([0], ["train"]) == pytest.approx(1.0)
    assert timeline.seconds([1], ["offload"]) == pytest.approx(3.5)
    assert timeline.kind(0) == "train"


def test_shares_add_up_to_one_per_device() -> None:
    timeline = Timeline(3, keep_spans=False)
    for t, kind in enumerate(["rollout", "sync", "reload", "train", "idle", "rollout"]):
        timeline.set(t % 3, kind, float(t))
    timeline.close(10.0)
    assert timeline.spans == []
    total = sum(timeline.share(range(3), [k]) for k in KINDS)
    assert total == pytest.approx(1.0)
    assert timeline.share([0], ["rollout"]) == pytest.approx(0.3)  # device 0: rollout 0..3
