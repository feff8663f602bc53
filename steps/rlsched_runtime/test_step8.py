"""Step 8 of design/rlsched_runtime.md: JSONL, Perfetto trace, timeline PNG."""

import json
from pathlib import Path

from rlsched.runtime.recorder import Recorder


def test_outputs(tmp_path: Path) -> None:
    rec = Recorder(2)
    rec.span(0, "rollout", 0.0, 1.5)
    rec.span(1, "offload", 0.2, 0.4)
    rec.span(1, "train", 0.4, 1.4)
    rec.add_row({"step": 1, "mean_reward": 0.5})
    rec.write_jsonl(tmp_path / "m" / "metrics.jsonl", [{"kind": "summary"}])
    lines = (tmp_path / "m" / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in lines] == [
        {"mean_reward": 0.5, "step": 1},
        {"kind": "summary"},
    ]
    rec.write_trace(tmp_path / "trace.json")
    events = json.loads((tmp_path / "trace.json").read_text())["traceEvents"]
    assert {(e["name"], e["tid"]) for e in events} == {("rollout", 0), ("offload", 1), ("train", 1)}
    assert events[0]["dur"] == 1.5e6
    rec.plot(tmp_path / "t.png", "two devices", marks=[1.4])
    assert (tmp_path / "t.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert rec.as_dicts()[0] == {"device": 0, "kind": "rollout", "start": 0.0, "end": 1.5}
