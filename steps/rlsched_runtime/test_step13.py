"""Step 13 of design/rlsched_runtime.md: a whole run on a cluster it starts and stops."""

import json
from pathlib import Path

import ray
from runtime_parts import tiny

from rlsched.runtime.cluster import run_training
from rlsched.sim.params import load_sim_config


def test_a_run_writes_its_outputs_and_leaves_ray_stopped(tmp_path: Path) -> None:
    cfg = tiny(run={"eval_episodes": 8})
    files = {k: tmp_path / f"out/{k}" for k in ("m.jsonl", "t.png", "trace.jsonl")}
    driver = run_training(
        cfg, 2, None, files["m.jsonl"], files["t.png"], trace=files["trace.jsonl"]
    )
    assert not ray.is_initialized()
    rows = [json.loads(line) for line in files["m.jsonl"].read_text().splitlines()]
    assert [r.get("step") for r in rows[:2]] == [1, 2] and rows[2]["kind"] == "summary"
    summary = rows[2]
    assert summary["eval_before"]["episodes"] == 8 and summary["eval_after"]["episodes"] == 8
    assert summary["accounting"]["trained"] == 32 and summary == driver.summary
    assert files["t.png"].read_bytes()[:4] == b"\x89PNG"
    spans = json.loads(files["t.png"].with_suffix(".trace.json").read_text())["traceEvents"]
    assert {"rollout", "offload", "train"} <= {e["name"] for e in spans}
    assert not files["t.png"].with_suffix(".ray.json").exists()  # Ray's own: only when asked
    groups = [json.loads(line) for line in files["trace.jsonl"].read_text().splitlines()]
    assert groups and all(len(g["samples"]) == 4 for g in groups)
    sim = {
        "devices": {"count": 2},
        "policies": {"t": {"mode": "timeshare", "train": 1}},
        "cost": {
            k: {"value": 0.01, "source": "test"}
            for k in (
                "decode_rank_tokens_per_s",
                "decode_request_tokens_per_s",
                "prefill_s_per_token",
                "train_s_per_token",
                "train_fixed_s",
                "sync_s",
                "offload_s",
                "reload_s",
            )
        },
        "workload": {"trace": str(files["trace.jsonl"])},
    }
    assert load_sim_config(sim).workload.trace == files["trace.jsonl"]  # the simulator reads it


def test_ray_timeline_when_asked(tmp_path: Path) -> None:
    png = tmp_path / "t.png"
    run_training(tiny(), 1, None, None, png, ray_timeline=True)
    ray_tasks = json.loads(png.with_suffix(".ray.json").read_text())
    assert any("offload" in str(e.get("name", "")) for e in ray_tasks)
