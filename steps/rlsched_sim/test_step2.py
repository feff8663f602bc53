"""Step 2 of design/rlsched_sim.md: the timeline picture and the Perfetto trace."""

import json
from pathlib import Path

import pytest

from rlsched.timeline import (
    COLORS,
    Span,
    Timeline,
    drawn_spans,
    plot_spans,
    plot_timelines,
    write_perfetto,
    write_span_trace,
)


def _timeline() -> Timeline:
    timeline = Timeline(4)
    for device in range(4):
        timeline.set(device, "rollout", 0.0)
    for device in (2, 3):
        timeline.set(device, "offload", 10.0)
        timeline.set(device, "train", 12.0)
        timeline.set(device, "reload", 30.0)
        timeline.set(device, "rollout", 32.0)
    timeline.close(40.0)
    return timeline


def test_perfetto_trace_has_one_thread_per_device_and_no_idle_slices(tmp_path: Path) -> None:
    path = tmp_path / "trace.json"
    write_perfetto({"timeshare": _timeline()}, path)
    events = json.loads(path.read_text())["traceEvents"]
    threads = {e["tid"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    slices = [e for e in events if e["ph"] == "X"]
    assert threads == {0, 1, 2, 3}
    assert {e["name"] for e in slices} == {"rollout", "offload", "train", "reload"}
    train = next(e for e in slices if e["name"] == "train" and e["tid"] == 2)
    assert (train["ts"], train["dur"]) == (12_000_000, 18_000_000)


def test_span_trace_leaves_idle_out_and_makes_its_directory(tmp_path: Path) -> None:
    path = tmp_path / "runs" / "trace.json"  # the directory does not exist yet
    spans = [Span(0, 0.0, 1.5, "rollout"), Span(0, 1.5, 2.0, "idle"), Span(1, 0.25, 0.5, "sync")]
    write_span_trace({"rlsched run": (2, spans)}, path)
    events = json.loads(path.read_text())["traceEvents"]
    slices = [(e["name"], e["tid"], e["ts"], e["dur"]) for e in events if e["ph"] == "X"]
    assert slices == [("rollout", 0, 0, 1_500_000), ("sync", 1, 250_000, 250_000)]
    names = [e["args"]["name"] for e in events if e["ph"] == "M"]
    assert names == ["rlsched run", "device 0", "device 1"]


def test_plot_writes_a_png(tmp_path: Path) -> None:
    path = tmp_path / "timeline.png"
    plot_timelines({"timeshare": _timeline(), "copy": _timeline()}, path, "two panels")
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5_000


def test_trace_names_one_process_per_timeline(tmp_path: Path) -> None:
    path = tmp_path / "trace.json"
    write_perfetto({"timeshare": _timeline(), "copy": _timeline()}, path)
    events = json.loads(path.read_text())["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    assert names == {1: "timeshare", 2: "copy"}
    assert {e["pid"] for e in events} == {1, 2}


def test_plot_draws_one_labelled_panel_per_timeline(tmp_path: Path, monkeypatch) -> None:
    import matplotlib.image
    import matplotlib.pyplot as plt
    from matplotlib.colors import to_hex

    from rlsched.timeline import COLORS, KINDS

    kept = []  # the figure, kept open to read back what was drawn
    close = plt.close
    monkeypatch.setattr(plt, "close", kept.append)
    path = tmp_path / "timeline.png"
    plot_timelines({"timeshare": _timeline(), "copy": _timeline()}, path, "two panels")
    (fig,) = kept
    top, bottom = fig.axes
    assert [ax.get_title() for ax in (top, bottom)] == ["timeshare", "copy"]
    assert top.get_ylabel() == "device" and bottom.get_xlabel() == "seconds"
    assert top.get_ylim() == (3.5, -0.5) and top.get_xlim() == (0.0, 40.0)
    assert to_hex(top.get_facecolor()) == COLORS["idle"].lower()
    # a bar collection per (device, activity): rollout on 4 devices, 3 more on devices 2 and 3
    assert len(top.collections) == 4 + 2 * 3
    assert fig.get_suptitle() == "two panels"
    assert [t.get_text() for t in top.get_legend().get_texts()] == list(KINDS)
    assert bottom.get_legend() is None  # one legend, right of the top panel
    # 12 x (2 + 0.12 per device row + 0.6 per panel) inches at 120 dpi
    height, width = matplotlib.image.imread(path).shape[:2]
    assert (width, height) == (1440, int((2.0 + 0.12 * 8 + 0.6 * 2) * 120))
    close(fig)


def test_switches_are_drawn_visibly_and_in_order() -> None:
    """A 1 ms offload and a 2 ms unpark right after it in a 50 s run: each drawn 0.25 s wide
    (0.5% of the axis), the second after the first; other spans keep their times."""
    spans = [
        Span(0, 0.0, 50.0, "rollout"),
        Span(1, 20.001, 20.003, "unpark"),
        Span(1, 20.0, 20.001, "offload"),
        Span(1, 20.003, 30.0, "train"),
        Span(1, 30.0, 50.0, "idle"),
    ]
    drawn = drawn_spans(spans, 2)
    assert drawn[0] == (0, "rollout", 0.0, 50.0)
    kinds = [(d, k) for d, k, _, _ in drawn[1:]]
    assert kinds == [(1, "offload"), (1, "unpark"), (1, "train"), (1, "idle")]
    (_, _, x1, w1), (_, _, x2, w2) = drawn[1], drawn[2]
    assert (x1, w1) == (20.0, 0.25) and abs(x2 - 20.25) < 1e-9 and w2 == 0.25
    assert drawn[3][2:] == (20.003, 30.0 - 20.003) and drawn[4][2:] == (30.0, 20.0)
    assert drawn_spans(spans, 2, min_fraction=0.0)[1][2:] == (20.0, 20.001 - 20.0)
    # the axis starts where the spans do: 1% of 100 s from 100 s on
    late = [Span(0, 100.0, 200.0, "rollout"), Span(1, 150.0, 150.5, "sync")]
    assert drawn_spans(late, 2, min_fraction=0.01)[1] == (1, "sync", 150.0, 1.0)
    assert drawn_spans([], 3) == []


def test_one_renderer_draws_a_run_lanes_marks_and_its_legend(tmp_path: Path, monkeypatch) -> None:
    """The Ray runtime's picture through the same renderer: switches in a lane under their
    row, step marks as vertical lines, the kinds it names in the legend, devices named."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import to_hex

    kept = []
    close = plt.close
    monkeypatch.setattr(plt, "close", kept.append)
    spans = [
        Span(0, 0.0, 1.5, "rollout"),
        Span(1, 0.2, 0.4, "offload"),
        Span(1, 0.4, 1.4, "train"),
    ]
    path = tmp_path / "runs" / "t.png"  # the directory does not exist yet
    plot_spans({"a run": (2, spans)}, path, marks=iter([1.4, 2.5]), kinds=("train", "park"))
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    (fig,) = kept
    (ax,) = fig.axes
    bars = {}
    for collection in ax.collections:
        ys = collection.get_paths()[0].vertices[:, 1]
        bars[to_hex(collection.get_facecolor()[0])] = (float(ys.min()), float(ys.max()))
    assert bars[COLORS["rollout"].lower()] == pytest.approx((-0.4, 0.15))
    assert bars[COLORS["train"].lower()] == pytest.approx((0.6, 1.15))
    assert bars[COLORS["offload"].lower()] == pytest.approx(
        (1.2, 1.45)
    )  # the lane under device 1's row
    marks = [line.get_xdata()[0] for line in ax.lines]
    assert marks == [1.4, 2.5] and ax.get_xlim() == (0.0, 2.5)
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["train", "park"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["device 0", "device 1"]
    assert ax.get_title() == "a run" and ax.get_ylim() == (1.5, -0.5)
    close(fig)
    kept.clear()
    many = [Span(d, 0.0, 1.0, "rollout") for d in range(17)]
    plot_spans({"wide": (17, many)}, tmp_path / "w.png")
    (fig,) = kept
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert "device 0" not in labels and fig.axes[0].get_xlim() == (0.0, 1.0)
    close(fig)
