"""Step 13 of design/rlsched_runtime.md: a whole run on a cluster it starts and stops."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import ray
from runtime_parts import tiny

from rlsched.runtime.cluster import connect, run_training
from rlsched.runtime.workers import EnvPool
from rlsched.sim.params import load_sim_config


def test_a_run_writes_its_outputs_and_leaves_ray_stopped(tmp_path: Path) -> None:
    cfg = tiny(run={"eval_episodes": 8})
    files = {k: tmp_path / f"out/{k}" for k in ("m.jsonl", "t.png", "trace.jsonl")}
    driver = run_training(
        cfg, 2, None, files["m.jsonl"], files["t.png"], trace=files["trace.jsonl"]
    )
    assert not ray.is_initialized()
    assert isinstance(driver.envpool, EnvPool)  # GridWalk's steps are quick: in the driver
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


def test_a_run_that_fails_before_its_driver_exists_still_cleans_up(tmp_path: Path) -> None:
    """The driver refuses a stop word its tokenizer lacks: the error is the driver's, the
    metrics file holds no summary, and Ray is stopped."""
    out = tmp_path / "m.jsonl"
    with pytest.raises(ValueError, match="rollout.stop_words: unknown token"):
        run_training(tiny(rollout={"stop_words": ["zzz"]}), 1, None, out, tmp_path / "t.png")
    assert out.read_text() == "" and not ray.is_initialized()


def test_ray_timeline_when_asked(tmp_path: Path) -> None:
    png = tmp_path / "t.png"
    driver = run_training(tiny(env={"process": "actor"}), 1, None, None, png, ray_timeline=True)
    assert not isinstance(driver.envpool, EnvPool)  # the pool actor, as asked
    ray_tasks = json.loads(png.with_suffix(".ray.json").read_text())
    assert any("offload" in str(e.get("name", "")) for e in ray_tasks)


def test_where_environments_step() -> None:
    """`auto`: in the driver for a class that declares quick steps and no latency, else the
    actor; `driver` and `actor` as asked."""
    faulty = {"name": "faulty-grid", "kwargs": {"size": 3, "max_steps": 6}}
    assert tiny().env.in_driver()
    assert not tiny(env={"process": "actor"}).env.in_driver()
    assert not tiny(env={"latency": {"mean_s": 0.01}}).env.in_driver()
    assert tiny(env={"latency": {"mean_s": 0.0, "kind": "lognormal"}}).env.in_driver()
    assert not tiny(env=faulty).env.in_driver()  # it sleeps: quick_steps is False
    assert tiny(env={**faulty, "process": "driver"}).env.in_driver()
    assert not tiny(env={"name": "runtime_parts:SilentEnv", "kwargs": {}}).env.in_driver()
    # a subclass of a quick class does not inherit the promise (this one ends its process)
    assert not tiny(env={"name": "dying_env:DyingGrid", "kwargs": {}}).env.in_driver()


def test_engine_and_switch_totals_sum_the_devices() -> None:
    from rlsched.runtime.cluster import engine_totals, switch_totals
    from rlsched.runtime.workers import SwitchRecord, Timing

    stats = [
        {"version": 3, "generated": 10, "spec_drafted": 8, "spec_accepted": 6,
         "spec_rounds": 2, "spec_tokens": 9, "forward_passes": 4},
        {"version": 3, "generated": 5, "spec_drafted": 4, "spec_accepted": 2,
         "spec_rounds": 2, "spec_tokens": 3, "forward_passes": 2},
    ]  # fmt: skip
    total = engine_totals(stats)
    assert "version" not in total and total["generated"] == 15 and total["spec_tokens"] == 12
    # 1 + 8 accepted drafts over 4 rounds; 12 tokens over 6 forward passes
    assert total["acceptance_length"] == 3.0 and total["tokens_per_pass"] == 2.0
    plain = engine_totals([{"version": 1, "generated": 7, "forward_passes": 7}])
    assert plain == {"generated": 7, "forward_passes": 7, "acceptance_length": 0.0,
                     "tokens_per_pass": 0.0}  # fmt: skip
    assert engine_totals([]) == {"acceptance_length": 0.0, "tokens_per_pass": 0.0}

    def switch(mib: int, unpark_s: float, park_s: float) -> SwitchRecord:
        return SwitchRecord(Timing(0.0, unpark_s), Timing(5.0, 5.0 + park_s), mib * 2**20,
                            mib * 2**20)  # fmt: skip

    assert switch_totals([]) == {"count": 0, "mib_mean": 0.0, "unpark_s_mean": 0.0,
                                 "park_s_mean": 0.0}  # fmt: skip
    idle = SwitchRecord(Timing(0.0, 0.0), Timing(0.0, 0.0), 0, 0)  # moved nothing: not counted
    totals = switch_totals([switch(64, 0.5, 0.25), idle, switch(192, 1.5, 0.75)])
    assert totals == {"count": 2, "mib_mean": 128.0, "unpark_s_mean": 1.0, "park_s_mean": 0.5}


# A cluster of 3 logical GPUs in another process, which prints its address and lives until its
# standard input closes.
OTHER_CLUSTER = """
import sys, ray
from rlsched.runtime.cluster import connect
connect(None, 3)
print(ray.get_runtime_context().gcs_address, flush=True)
sys.stdin.read()
ray.shutdown()
"""


LOOPBACK = """
import sys
if sys.argv[1] == "ray first":
    import ray
from rlsched.runtime.cluster import connect
from rlsched.runtime.errors import RunError
import ray
try:
    connect(None, 2)
except RunError as exc:
    print(f"refused, Ray running: {ray.is_initialized()}: {exc}", flush=True)
else:
    print(ray.get_runtime_context().gcs_address, flush=True)
    ray.shutdown()
"""


@pytest.mark.parametrize("order", ["rlsched first", "ray first"])
def test_a_local_cluster_listens_on_loopback_or_is_refused(order: str) -> None:
    """Ray reads the loopback setting when imported (0.8.4): importing the runtime first sets
    it in time; a process that imported Ray before gets a cluster on the machine's address,
    which `connect` stops and refuses in one line."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    done = subprocess.run(
        [sys.executable, "-c", LOOPBACK, order],
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
    )
    [line] = done.stdout.splitlines()
    if order == "rlsched first" or line.startswith("127.0.0.1:"):
        # (Ray first on a machine whose only address is loopback starts there: accepted)
        assert line.startswith("127.0.0.1:"), line
    else:
        assert line.startswith("refused, Ray running: False: Ray started on "), line
        assert line.endswith("(set it first, or import rlsched.runtime before Ray)")
        assert "127.0.0.1" not in line


def test_connect_joins_the_cluster_named_by_ray_address(monkeypatch) -> None:
    """Without `--address`, `RAY_ADDRESS` names the cluster to join (Ray refuses resources from
    a process that joins one); `local` starts one declaring the run's devices."""
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    other = subprocess.Popen(
        [sys.executable, "-c", OTHER_CLUSTER],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        address = other.stdout.readline().strip()
        assert address, "the other cluster did not start"
        monkeypatch.setenv("RAY_ADDRESS", address)
        assert connect(None, 2) and ray.cluster_resources()["GPU"] == 3
        assert connect(None, 2) is False  # this process's Ray, reused
    finally:
        ray.shutdown()
        other.stdin.close()
        other.wait(timeout=120)
    monkeypatch.setenv("RAY_ADDRESS", "local")
    try:
        assert connect(None, 2) and ray.cluster_resources()["GPU"] == 2
    finally:
        ray.shutdown()
