"""Step 2 of design/rlsched_sim.md: the timeline picture and the Perfetto trace."""

import json
from pathlib import Path

from rlsched.timeline import Timeline, plot_timelines, write_perfetto


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


def test_plot_writes_a_png(tmp_path: Path) -> None:
    path = tmp_path / "timeline.png"
    plot_timelines({"timeshare": _timeline(), "copy": _timeline()}, path, "two panels")
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5_000
