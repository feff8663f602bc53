"""Step 2 of design/rlsched_sim.md: the timeline picture and the Perfetto trace."""

import json
from pathlib import Path

from rlsched.timeline import Span, Timeline, plot_timelines, write_perfetto, write_span_trace


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
    assert [ax.get_title(loc="left") for ax in (top, bottom)] == ["timeshare", "copy"]
    assert top.get_ylabel() == "device" and bottom.get_xlabel() == "time (s)"
    assert top.get_ylim() == (3.5, -0.5) and top.get_xlim() == (0.0, 40.0)
    assert to_hex(top.get_facecolor()) == COLORS["idle"].lower()
    # a bar collection per (device, activity): rollout on 4 devices, 3 more on devices 2 and 3
    assert len(top.collections) == 4 + 2 * 3
    assert fig.get_suptitle() == "two panels"
    assert [t.get_text() for t in fig.legends[0].get_texts()] == list(KINDS)
    # 12 x (2 + 0.12 per device row + 0.6 per panel) inches at 120 dpi
    height, width = matplotlib.image.imread(path).shape[:2]
    assert (width, height) == (1440, int((2.0 + 0.12 * 8 + 0.6 * 2) * 120))
    close(fig)
