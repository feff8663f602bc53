"""Step 8 of design/rlsched_runtime.md: what a run reports. JSONL, Perfetto trace, timeline
PNG; the policy on held-out episodes (Step 9's check until runtime 0.10.0)."""

import copy
import json
from pathlib import Path

import yaml

from rlsched.envs.grid import GridWalk
from rlsched.model import build_model, load_tokenizer
from rlsched.runtime.config import load_run_config
from rlsched.runtime.evaluate import evaluate_policy
from rlsched.runtime.recorder import Recorder

GRID_FILE = Path(__file__).resolve().parents[2] / "examples" / "run" / "grid.yaml"
GRID_RUN = yaml.safe_load(GRID_FILE.read_text(encoding="utf-8"))  # GridWalk, one-token turns


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
    rec.write_trace(tmp_path / "t" / "trace.json")  # one writer for both shells: names too
    events = json.loads((tmp_path / "t" / "trace.json").read_text())["traceEvents"]
    spans = [e for e in events if e["ph"] == "X"]
    assert {(e["name"], e["tid"]) for e in spans} == {("rollout", 0), ("offload", 1), ("train", 1)}
    assert spans[0]["dur"] == 1500000 and spans[1]["ts"] == 200000 and spans[1]["dur"] == 200000
    names = {(e["name"], e.get("tid"), e["args"]["name"]) for e in events if e["ph"] == "M"}
    assert names == {
        ("process_name", None, "rlsched run"),
        ("thread_name", 0, "device 0"),
        ("thread_name", 1, "device 1"),
    }
    rec.plot(tmp_path / "t.png", "two devices", marks=[1.4])
    assert (tmp_path / "t.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert rec.as_dicts()[0] == {"device": 0, "kind": "rollout", "start": 0.0, "end": 1.5}


def test_switches_are_drawn_visibly_and_in_order(tmp_path: Path) -> None:
    """A 1 ms offload and a 2 ms unpark right after it in a 50 s run: each drawn 0.25 s wide
    (0.5% of the axis), the second after the first; long spans keep their times."""
    rec = Recorder(2)
    rec.span(0, "rollout", 0.0, 50.0)
    rec.span(1, "unpark", 20.001, 20.003)
    rec.span(1, "offload", 20.0, 20.001)
    rec.span(1, "train", 20.003, 30.0)
    drawn = rec.drawn()
    assert drawn[0] == (0, "rollout", 0.0, 50.0)
    assert [(d, k) for d, k, _, _ in drawn[1:]] == [(1, "offload"), (1, "unpark"), (1, "train")]
    (_, _, x1, w1), (_, _, x2, w2) = drawn[1], drawn[2]
    assert (x1, w1) == (20.0, 0.25) and abs(x2 - 20.25) < 1e-9 and w2 == 0.25
    assert drawn[3][2:] == (20.003, 30.0 - 20.003)
    assert Recorder(1).drawn() == []
    rec.plot(tmp_path / "t.png", "two devices")
    assert (tmp_path / "t.png").read_bytes()[:4] == b"\x89PNG"


def test_jsonl_is_sorted_and_rewritable(tmp_path: Path) -> None:
    rec = Recorder(1)
    rec.add_row({"step": 1, "mean_reward": 0.5})
    path = tmp_path / "m" / "metrics.jsonl"
    rec.write_jsonl(path)
    rec.write_jsonl(path)  # a second run into the same directory replaces the file
    assert path.read_text() == '{"mean_reward": 0.5, "step": 1}\n'


def test_plot_draws_each_device_row_and_the_step_marks(tmp_path: Path, monkeypatch) -> None:
    import matplotlib.pyplot as plt

    from rlsched.runtime.recorder import KIND_COLOURS

    kept = []  # the figure, kept open to read back what was drawn
    close = plt.close
    monkeypatch.setattr(plt, "close", kept.append)
    rec = Recorder(2)
    rec.span(0, "rollout", 0.0, 1.5)
    rec.span(1, "offload", 0.2, 0.4)
    rec.span(1, "train", 0.4, 1.4)
    rec.span(1, "rollout", 1.4, 2.0)
    rec.plot(tmp_path / "t.png", "two devices", marks=[1.4])
    (fig,) = kept
    (ax,) = fig.axes
    # one bar collection per (kind, device) that has spans, in that device's row
    rows = sorted(round(float(c.get_paths()[0].vertices[:, 1].min())) for c in ax.collections)
    assert rows == [0, 1, 1, 1]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["device 0", "device 1"]
    assert ax.get_xlabel() == "seconds" and ax.get_title() == "two devices"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == list(KIND_COLOURS)
    assert [line.get_xdata()[0] for line in ax.lines if len(line.get_xdata())] == [1.4]
    close(fig)


def test_evaluation_is_seeded_and_sees_the_weights() -> None:
    data = copy.deepcopy(GRID_RUN)
    data["env"]["kwargs"] = {"size": 3, "max_steps": 6}
    cfg = load_run_config(data)
    first = evaluate_policy(cfg, None, 16)
    # seeded: the default seed is 0 (seed 1 plays these episodes otherwise)
    assert first == evaluate_policy(cfg, None, 16, seed=0)
    assert first["episodes"] == 16 and 1.0 <= first["mean_episode_len"] <= 6.0
    assert 0.0 <= first["mean_reward"] < 1.0
    # a model that never moves (every weight zero: uniform over the four moves) still plays
    vocab = load_tokenizer(cfg.model, GridWalk.words).get_vocab_size()
    zeros = {n: p.detach() * 0 for n, p in build_model(cfg.model, vocab).named_parameters()}
    uniform = evaluate_policy(cfg, zeros, 16)
    assert uniform != first and uniform["episodes"] == 16


def test_figures_are_rounded_means_and_the_turn_limit_ends_episodes() -> None:
    import torch

    data = copy.deepcopy(GRID_RUN)
    data["env"]["kwargs"] = {"size": 3, "max_steps": 6}
    cfg = load_run_config(data)
    threads = torch.get_num_threads()
    three = evaluate_policy(cfg, None, 3)
    assert torch.get_num_threads() == threads  # the caller's thread count comes back
    assert set(three) == {
        "mean_reward",
        "mean_episode_len",
        "terminated",
        "episodes",
        "random_terminated",
    }
    assert 0.0 <= three["random_terminated"] <= 1.0
    # means over three episodes: thirds, rounded to 3 (turns) and 4 (shares, reward) digits;
    # these seeded episodes take 13 turns in all and one of the three terminates
    turns = round(three["mean_episode_len"] * 3)
    assert turns % 3 != 0 and three["mean_episode_len"] == round(turns / 3, 3)
    done = round(three["terminated"] * 3)
    assert done % 3 != 0 and three["terminated"] == round(done / 3, 4)
    reward = three["mean_reward"]
    assert reward == round(reward, 4) and reward != round(reward, 3)
    # a limit of one turn ends every episode after its first action
    data["scheduler"]["max_turns"] = 1
    one = evaluate_policy(load_run_config(data), None, 7)
    assert one["mean_episode_len"] == 1.0 and one["episodes"] == 7
