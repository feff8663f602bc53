"""Step 5 of design/rlsched_sim.md: seeded draws and the trace file format."""

import random
from pathlib import Path

import pytest

from rlsched.sim.params import Dist
from rlsched.sim.workload import TraceError, TraceGroup, Turn, draw, load_trace, write_trace


def test_draws_are_seeded_and_clipped() -> None:
    dist = Dist(median=10.0, sigma=2.0, min=5.0, max=20.0, source="test")
    first = [draw(random.Random("s"), dist) for _ in range(3)]
    assert first == [draw(random.Random("s"), dist) for _ in range(3)]
    values = [draw(random.Random(i), dist) for i in range(500)]
    assert min(values) == 5.0 and max(values) == 20.0
    assert draw(random.Random(1), Dist(median=3.0, source="test")) == 3.0
    assert draw(random.Random(1), Dist(median=3.0, source="test"), median=7.0) == 7.0


def test_trace_round_trips(tmp_path: Path) -> None:
    groups = [
        TraceGroup(12, ((Turn(5, 3, 0.25), Turn(7, 0, 1.5)), (Turn(1, 1, 0.0),))),
        TraceGroup(30, ((Turn(40, 2, 0.125),),)),
    ]
    path = tmp_path / "trace.jsonl"
    write_trace(groups, path)
    assert load_trace(path) == tuple(groups)


def test_malformed_trace_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(
        '{"prompt_tokens": 3, "samples": [[[1, 0, 0.1]]]}\n{"prompt_tokens": 0, "samples": []}\n'
    )
    with pytest.raises(TraceError, match=r"bad\.jsonl:2: prompt_tokens must be an int >= 1"):
        load_trace(path)
    path.write_text('{"prompt_tokens": 3, "samples": [[[1, -2, 0.1]]]}\n')
    with pytest.raises(TraceError, match=r"bad\.jsonl:1: every sample needs"):
        load_trace(path)
    path.write_text("\n")
    with pytest.raises(TraceError, match="no group"):
        load_trace(path)
