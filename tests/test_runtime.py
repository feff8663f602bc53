"""The Ray runtime end to end on a real local cluster (the session's, loopback only):
learning, a timeshare step with shrink and expand, a killed rollout actor, failing and hanging
environments, Ctrl-C. Every test checks that every trajectory is accounted for."""

from __future__ import annotations

import copy
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ray = pytest.importorskip("ray")

import yaml  # noqa: E402

from rlsched.core.shell import PendingRequest  # noqa: E402
from rlsched.runtime.cluster import run_training  # noqa: E402
from rlsched.runtime.config import RunConfig, load_run_config  # noqa: E402
from rlsched.runtime.evaluate import evaluate_policy  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
# GridWalk (one-token turns, learned in 16 cheap steps): the runs of these tests; the bundled
# example (Recall) needs about 50 steps of 128 trajectories to learn, minutes, not a test
GRID = yaml.safe_load((REPO / "examples" / "run" / "grid.yaml").read_text(encoding="utf-8"))


def config(**patch: dict[str, Any]) -> RunConfig:
    """The GridWalk run with sections patched (merged one level deep), no evaluation."""
    data = copy.deepcopy(GRID)
    data["run"]["eval_episodes"] = 0
    for key, value in patch.items():
        data[key] = {**data.get(key, {}), **value}
    return load_run_config(data)


SMALL = {
    "scheduler": {"train_batch_size": 32, "group_size": 8, "max_turns": 16, "max_tokens": 256},
    "env": {"name": "grid", "kwargs": {"size": 3, "max_steps": 10}, "step_timeout_s": 10.0},
}


@pytest.fixture(scope="module")
def cluster(ray_cluster: str) -> Iterator[None]:
    """The session's cluster (tests/conftest.py), already connected in this process."""
    assert ray.is_initialized()
    yield


def check_accounting(driver: Any, steps: int) -> dict[str, int]:
    acct = driver.accounting()  # raises when a trajectory is missing or counted twice
    batch = driver.cfg.scheduler.train_batch_size
    assert acct["trained"] == steps * batch
    assert acct["admitted"] == acct["trained"] + acct["dropped"] + acct["live"]
    driver.core.check_invariants()
    return acct


class Learned(Exception):
    """Raised from a run's step callback to end it once the bar is met (see below)."""


def test_the_policy_learns_on_gridwalk(cluster: None) -> None:
    """Seeded run of the GridWalk example (timeshare, GridWalk 4x4): held-out reward rises by
    0.15 and episode length falls by 3 turns within 32 steps, judged on fixed held-out episodes
    every 4 steps from step 12; the per-step batch figures agree. Run until it happened,
    bounded: which trajectories fill each batch depends on the interleaving of Ray's answers,
    so one run learns faster than another (after 16 steps 0.65-0.87 in ten runs here, once
    0.42 in a loaded suite run); a learner that does not learn never meets the bar, and the
    same run with a zero learning rate moves nothing (checked below)."""
    cfg = config(run={"seed": 0})
    before = evaluate_policy(cfg, None, 64)
    found: dict[str, Any] = {}

    def judge(row: dict[str, Any]) -> None:
        step = row["step"]  # 1-based
        if step < 12 or step % 4:
            return
        after = evaluate_policy(cfg, ray.get(found["driver"]._weights), 64)
        found.setdefault("evals", []).append((step, after["mean_reward"]))
        reward, length = after["mean_reward"], after["mean_episode_len"]
        if reward > before["mean_reward"] + 0.15 and length < before["mean_episode_len"] - 3:
            found["after"] = after
            raise Learned

    try:
        run_training(cfg, 32, on_step=judge, on_ready=lambda d: found.setdefault("driver", d))
    except Learned:
        pass
    driver = found["driver"]
    # not learned in 32 steps: the held-out rewards at each check, and what the run counted
    assert "after" in found, (before, found.get("evals"), dict(driver.counters))
    rows = driver.recorder.rows
    first = sum(r["mean_reward"] for r in rows[:4]) / 4
    last = sum(r["mean_reward"] for r in rows[-4:]) / 4
    assert last > first, [r["mean_reward"] for r in rows]
    assert ray.is_initialized()  # the shared cluster is not stopped by a run that joined it
    check_accounting(driver, len(rows))
    frozen = run_training(config(train={"lr": 1e-9}, run={"eval_episodes": 64}), 2)
    assert frozen.summary["eval_before"] == before  # the held-out episodes are fixed
    assert abs(frozen.summary["eval_after"]["mean_reward"] - before["mean_reward"]) < 0.05


def test_a_timeshare_step_shrinks_trains_and_expands(cluster: None) -> None:
    driver = run_training(config(**SMALL), 3)
    stats = driver.core.stats
    assert stats.shrinks_committed >= 3 and stats.expands >= 2 and stats.train_steps == 3
    rows = driver.recorder.rows
    assert all(r["shrink_s"] is not None and r["offload_s"] is not None for r in rows)
    # device 1 is the only training device: it is shrunk for step k + 1 only after its expand
    # from step k finished, so every row after the first measured one (whatever the timing)
    assert all(r["expand_s"] is not None and r["reload_s"] is not None for r in rows[1:])
    kinds = {(s.device, s.kind) for s in driver.recorder.spans}
    assert {(1, "offload"), (1, "train"), (1, "reload"), (1, "sync"), (0, "rollout")} <= kinds
    check_accounting(driver, 3)


def test_speculative_chunked_turns_stop_at_their_stop_word_and_switches_are_timed(
    cluster: None,
) -> None:
    """Multi-token turns decoded by the speculative engine, cut into chunks of 3 tokens: a
    chunk that ends on the stop word ends its turn (never continued past it), the engines
    report their drafting, and every training step's memory switch is recorded."""
    patch = copy.deepcopy(SMALL)
    patch["scheduler"]["chunk_tokens"] = 3  # a first token, then a round with one draft
    rollout = {
        "max_turn_tokens": 7,
        "stop_words": ["east", "west"],  # half the actions end a turn
        "speculative": {"drafter": "group", "k_init": 2, "k_max": 4},
    }
    driver = run_training(config(**patch, rollout=rollout), 2)
    check_accounting(driver, 2)
    assert driver.core.stats.chunk_ends > 0  # turns did span several chunks
    stops = set(driver.sampling.stop_token_ids)
    turns = 0
    for rec in driver.store.records.values():  # the live trajectories' committed turns
        run: list[int] = []
        for token, generated in zip(rec.tokens, rec.gen_mask, strict=True):
            if generated:
                run.append(token)
                continue
            if run:
                turns += 1
                assert not stops & set(run[:-1]) and len(run) <= 7, run
            run = []
    assert turns > 0
    engines, switch = driver.summary["engines"], driver.summary["switch"]
    assert engines["spec_rounds"] > 0 and engines["spec_drafted"] > 0
    assert engines["tokens_per_pass"] >= 1.0
    assert switch["count"] >= 1 and switch["mib_mean"] > 0  # the last park may end after the run
    kinds = {s.kind for s in driver.recorder.spans}
    assert {"park", "unpark"} <= kinds


def test_a_killed_rollout_actor_loses_no_request(cluster: None) -> None:
    """Three devices (device 2 trains); device 0's actor is killed while step 2 rolls out.
    Its requests are re-queued by the core on device 1 and every step completes."""
    cfg = config(devices={"count": 3, "train": 1}, **SMALL)
    killed: list[float] = []

    def on_ready(driver: Any) -> None:
        original = driver._feed

        def feed(events: list) -> None:
            original(events)
            if not killed and driver.recorder.rows:
                running = driver.ledger.outstanding(PendingRequest)
                if any(op.command.rank == 0 for op in running):
                    ray.kill(driver.workers[0], no_restart=True)
                    killed.append(driver.now())

        driver._feed = feed

    driver = run_training(cfg, 3, on_ready=on_ready)
    assert killed, "the actor was never killed mid-rollout"
    assert driver.core.stats.devices_lost == 1 and driver.core.stats.migrated > 0
    assert driver.counters["workers_lost"] == 1
    # replaced (run.worker_restarts): back in the pool, or its replacement still starting
    recovered = driver.core.stats.devices_recovered
    assert (recovered, driver.lost) in ((1, set()), (0, {0}))
    assert len(driver.recorder.rows) == 3
    check_accounting(driver, 3)


KILL_MOMENTS = {
    "shrink": ("Offload", 1),  # the training device's offload: mid-shrink
    "expand": ("Reload", 1),  # its reload after training: mid-expand
    "sync": ("SyncWeights", 1),  # the weights sent to it after training
    "train": ("Train", None),  # the training step itself
}


@pytest.mark.parametrize("moment", sorted(KILL_MOMENTS))
def test_the_training_device_killed_at_each_moment_is_replaced(cluster: None, moment: str) -> None:
    """The bundled two-device layout (device 1 trains, the only training device): its actor is
    killed the moment the driver issues the command (not after a sleep). The device is
    replaced, rejoins through the core's recovery path, and the run completes its steps with
    every trajectory accounted for."""
    import rlsched.core.commands as commands

    sys.path.insert(0, str(REPO / "steps"))
    from runtime_parts import kill_on

    name, device = KILL_MOMENTS[moment]
    killed: list[Any] = []
    notes: list[str] = []

    def on_ready(driver: Any) -> None:
        killed.append(kill_on(driver, getattr(commands, name), device))
        driver.notify = notes.append

    driver = run_training(config(**SMALL), 3, on_ready=on_ready)
    assert len(killed[0]) == 1, f"no {name} command was issued"
    stats = driver.core.stats
    assert stats.devices_lost == 1 and stats.devices_recovered == 1, notes
    assert driver.lost == set() and len(driver.rejoin_s) == 1
    assert any(n.startswith("device 1: worker lost (") for n in notes)
    if moment == "shrink":
        assert stats.shrinks_rolled_back >= 1
    if moment == "train":
        assert stats.train_steps_failed == 1
    assert driver.summary["rejoin_s"] == [round(driver.rejoin_s[0], 3)]
    check_accounting(driver, 3)


def test_failing_and_hanging_environments_end_their_trajectories(cluster: None) -> None:
    env = {
        "name": "faulty-grid",
        "kwargs": {"size": 3, "max_steps": 10, "fail_prob": 0.04, "hang_prob": 0.04, "hang_s": 3.0},
        "step_timeout_s": 0.5,
    }
    driver = run_training(config(scheduler=SMALL["scheduler"], env=env), 3)
    assert driver.counters["env_failed"] > 0 and driver.counters["env_step_timeouts"] > 0
    # counted apart in the core too (0.4.0: a raising environment is no timeout). The driver
    # counts what it reported; the core what it acted on, which is less by the reports it
    # ignored: one event of a batch may drop a stale group whose failure or timeout is a later
    # event of the same batch (seen once in four suite runs: 11 timeouts reported, 10 acted on)
    stats = driver.core.stats
    failed, timeouts = driver.counters["env_failed"], driver.counters["env_step_timeouts"]
    assert 0 < stats.env_failures <= failed and 0 < stats.env_timeouts <= timeouts
    assert (failed - stats.env_failures) + (timeouts - stats.env_timeouts) <= stats.ignored_events
    acct = check_accounting(driver, 3)
    assert acct["failed_trained"] > 0
    assert sum(r["failed"] for r in driver.recorder.rows) == acct["failed_trained"]


def test_ctrl_c_stops_cleanly_and_leaves_no_ray_process(tmp_path: Path) -> None:
    """`rlsched run` in its own session: SIGINT after the first step exits 130, and no process
    of that session (raylet, GCS, workers) survives."""
    exe = Path(sys.executable).parent / "rlsched"
    proc = subprocess.Popen(
        [
            str(exe),
            "run",
            "--steps",
            "50",
            "--json",
            str(tmp_path / "m.jsonl"),
            "--plot",
            str(tmp_path / "t.png"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        cwd=tmp_path,
        env={**os.environ, "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"},
    )
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("step   1"):
                break
        proc.send_signal(signal.SIGINT)
        output = proc.communicate(timeout=90)[0]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, output
    assert "interrupted: actors stopped, Ray shut down" in output
    assert (tmp_path / "m.jsonl").read_text().count('"step"') >= 1  # what ran is written
    deadline = time.monotonic() + 20
    while True:
        ps = subprocess.run(["ps", "-eo", "sid=,pid=,comm="], capture_output=True, text=True)
        left = [line for line in ps.stdout.splitlines() if line.split()[0] == str(proc.pid)]
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert left == []


FAULT_SCRIPT = """
import os, sys
sys.path.insert(0, {steps!r})
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
import yaml
from rlsched.core.commands import Train
from rlsched.runtime.cluster import run_training
from rlsched.runtime.config import load_run_config
from rlsched.runtime.errors import RunError
from runtime_parts import kill_on
data = yaml.safe_load(open({grid!r}, encoding="utf-8"))
data["run"].update(eval_episodes=0, worker_restarts={restarts})
data["scheduler"].update(train_batch_size=16, group_size=4, max_turns=8, max_tokens=256)
data["env"]["kwargs"] = {{"size": 3, "max_steps": 6}}
try:
    driver = run_training(load_run_config(data), 2, on_ready=lambda d: kill_on(d, Train))
    print("completed", driver.core.stats.devices_recovered, driver.accounting()["trained"])
except RunError as exc:
    print("stopped:", exc)
"""


@pytest.mark.parametrize("restarts", [1, 0])
def test_a_killed_training_device_leaves_no_ray_process(restarts: int) -> None:
    """A run that starts its own Ray: with a restart, the run completes; without one, it stops
    at once with one line naming the lost device. Either way no Ray process is left."""
    grid = str(REPO / "examples" / "run" / "grid.yaml")
    script = FAULT_SCRIPT.format(steps=str(REPO / "steps"), restarts=restarts, grid=grid)
    proc = subprocess.Popen(
        [sys.executable, "-c", script],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env={**os.environ, "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"},
    )
    try:
        stdout, stderr = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 0, stderr[-3000:]
    last = stdout.splitlines()[-1]
    if restarts:
        assert last == "completed 1 32", stdout
    else:
        assert last.startswith("stopped: run stalled: no device can make progress"), stdout
        assert "device 1 lost (" in last
    deadline = time.monotonic() + 30
    while True:  # Ray's processes exit after the driver: wait until they did, bounded
        ps = subprocess.run(["ps", "-eo", "sid=,pid=,comm="], capture_output=True, text=True)
        left = [line for line in ps.stdout.splitlines() if line.split()[0] == str(proc.pid)]
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert left == []


@pytest.mark.parametrize(
    "path", sorted((REPO / "examples" / "run").glob("*.yaml")), ids=lambda p: p.stem
)
def test_shipped_run_configs_load(path: Path) -> None:
    """Run configs live in examples/run/; the runtime's own loader takes each (`rlsched
    check-config` does too: steps/rlsched_cli/test_step2.py)."""
    cfg = load_run_config(path)
    assert cfg.run.steps >= 1 and cfg.env.name
