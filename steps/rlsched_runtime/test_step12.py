"""Step 12 of design/rlsched_runtime.md: the loop runs whole training steps; nothing is lost."""

import json
import time

import pytest
import ray
from runtime_parts import make_driver, start_ray, tiny

from rlsched.sim.workload import parse_trace_line


def assert_accounted(driver, trained: int) -> None:
    """`trained` trajectories trained, every admitted one trained, dropped or live, and the
    core's invariants hold."""
    acct = driver.accounting()
    assert acct["trained"] == trained
    assert acct["admitted"] == sum(acct[k] for k in ("trained", "dropped", "live"))
    driver.core.check_invariants()


def test_two_timeshare_steps_with_shrink_and_expand_account_for_every_trajectory() -> None:
    start_ray()
    try:
        driver = make_driver(tiny())
        seen = []
        began = time.monotonic()
        rows = driver.run(3, seen.append)
        wall = time.monotonic() - began
        assert [r["step"] for r in rows] == [1, 2, 3] and seen == rows
        # 0.10.1: the loop waited for the engines' answers for part of its time, not all of it
        assert 0 < driver.waited_s < wall
        assert rows[2]["version"] == 3 and rows[0]["trajectories"] == 16
        # the one training device is shrunk for step k + 1 only after its expand from step k
        # finished, so every row after the first measured an expand (and every row a shrink)
        assert all(r["shrink_s"] is not None for r in rows)
        assert all(r["expand_s"] is not None and r["reload_s"] is not None for r in rows[1:])
        stats = driver.core.stats
        assert stats.train_steps == 3 and stats.shrinks_committed >= 3 and stats.expands >= 1
        acct = driver.accounting()
        assert acct["trained"] == 48
        assert acct["admitted"] == sum(acct[k] for k in ("trained", "dropped", "live"))
        driver.core.check_invariants()
        lines = driver.trace_lines()
        assert all(len(line["samples"]) == 4 for line in lines)
        # every trained group and each live one whose samples all finished a turn, each line
        # one the simulator can replay
        assert acct["trained"] // 4 <= len(lines) <= acct["admitted"] // 4
        assert all(parse_trace_line(json.dumps(line)) for line in lines)
        assert sum(len(s) for line in lines for s in line["samples"]) >= 48
        assert driver.run(1)[-1]["step"] == 4  # resumes where it stopped
        driver.stop_requested = True  # what Ctrl-C sets: the loop stops between two events
        with pytest.raises(KeyboardInterrupt, match="stop requested"):
            driver.run(1)
        assert len(driver.recorder.rows) == 4 and not driver.looping
        driver.core.check_invariants()
    finally:
        ray.shutdown()


def test_losing_the_only_training_device_costs_a_retry_not_the_run() -> None:
    """Two devices, device 1 trains: its actor is killed as the first Train is issued. The
    step fails once, a replacement rejoins through the core's recovery path and trains, and
    every trajectory is accounted for."""
    from runtime_parts import kill_on

    from rlsched.core.commands import Train
    from rlsched.core.shell import PendingRecovery

    start_ray()
    try:
        driver = make_driver(tiny(), spawn=True)
        notes: list[str] = []
        driver.notify = notes.append
        killed = kill_on(driver, Train)
        rows = driver.run(2)
        assert len(killed) == 1 and killed[0].devices == (1,)
        stats = driver.core.stats
        assert stats.devices_lost == 1 and stats.devices_recovered == 1
        assert stats.train_steps == 2 and stats.train_steps_failed == 1
        assert driver.counters["workers_recovered"] == 1 and driver.lost == set()
        assert len(driver.rejoin_s) == 1 and driver.rejoin_s[0] > 0
        assert driver.ledger.outstanding(PendingRecovery) == []  # the replacement answered
        assert [r["workers_recovered_total"] for r in rows] == [1, 1]
        assert sum(" failed (device 1 lost); retry 1 of 2" in n for n in notes) == 1, notes
        assert any(n.startswith("device 1: worker lost (") for n in notes)
        assert_accounted(driver, trained=32)
    finally:
        ray.shutdown()


def test_a_stall_is_named_at_once_when_the_lost_device_is_not_replaced() -> None:
    """The same loss without restarts: the run stops with one line naming the lost device
    (before: a silent wait for env_timeout_s, then a traceback)."""
    from runtime_parts import kill_on

    from rlsched.core.commands import Train
    from rlsched.runtime.errors import RunStalled

    start_ray()
    try:
        driver = make_driver(tiny(run={"worker_restarts": 0}), spawn=True)
        kill_on(driver, Train)
        with pytest.raises(RunStalled) as info:
            driver.run(2)
        line = str(info.value)
        assert line.startswith("run stalled: no device can make progress: ")
        assert "lost devices [1]" in line and "; device 1 lost (" in line
        assert "restarts used 0 of 0" in line and "\n" not in line
        assert driver.core.stall() is not None and driver.core.in_flight == 0
        driver.accounting()  # still consistent
    finally:
        ray.shutdown()


def test_the_environment_pool_dying_ends_the_run_in_one_line() -> None:
    from rlsched.core.commands import StartEnvStep
    from rlsched.runtime.errors import RunError

    start_ray()
    try:
        driver = make_driver(tiny(), spawn=True)
        killed: list[object] = []

        def on_command(command: object) -> None:
            if not killed and isinstance(command, StartEnvStep):
                ray.kill(driver.envpool, no_restart=True)
                killed.append(command)

        driver.on_command = on_command
        with pytest.raises(RunError) as info:
            driver.run(1)
        assert killed and str(info.value).startswith("the environment pool died: ")
        assert "\n" not in str(info.value) and not driver.lost  # no device blamed
    finally:
        ray.shutdown()


def test_a_failed_training_call_fails_its_step_and_a_stranger_s_death_is_raised() -> None:
    """Answers the loop cannot see in a healthy run: a training call that raises (its actor
    alive) is one failed attempt of the step; an actor the driver does not know dying under a
    device call is not swallowed."""
    from ray.exceptions import RayActorError

    from rlsched.core.commands import Offload, Train
    from rlsched.core.events import TrainingDone
    from rlsched.core.shell import PendingDeviceOp
    from rlsched.runtime.driver import Pending, TrainCall

    start_ray()
    try:
        driver = make_driver(tiny())
        notes: list[str] = []
        driver.notify = notes.append

        @ray.remote(num_cpus=0)
        def broken() -> None:
            raise ValueError("bad batch")

        ref = broken.remote()
        ray.wait([ref], timeout=60)
        step = TrainCall(driver.now(), Train(4, (1,), 2, ()), (1,), None, (), {})
        driver.ledger.open(step)
        events = driver._answer(ref, Pending(step, 1))
        assert events == [TrainingDone(pytest.approx(driver.now(), abs=5), 4, 3, ok=False)]
        assert driver.counters["train_errors"] == 1 and not driver.ledger.holds(step)
        assert driver.train_failures == 1 and len(notes) == 1
        assert notes[0].startswith("training step 4 failed (ValueError: ")

        @ray.remote(num_cpus=0)
        class Stranger:
            def ping(self) -> int:
                return 0

        stranger = Stranger.remote()
        ray.kill(stranger, no_restart=True)
        ref = stranger.ping.remote()
        ray.wait([ref], timeout=60)
        with pytest.raises(RayActorError):
            driver._answer(ref, Pending(PendingDeviceOp(driver.now(), Offload(3, (0,)), 0), 0))
    finally:
        ray.shutdown()


def test_a_dispatch_to_a_rank_lost_earlier_in_its_batch_is_given_back_to_the_core() -> None:
    """The race behind a flaky fresh-clone run, built on purpose: the driver has met the dead
    actor's answer (device 0 lost, its WorkerLost queued) when the core, not told yet,
    dispatches to rank 0. The dispatch is not sent, the loss gives the request back, and the
    run completes with every trajectory accounted for."""
    from runtime_parts import wait_dead

    from rlsched.core.commands import Dispatch
    from rlsched.core.shell import PendingRequest
    from rlsched.pool import DeviceMode

    start_ray()
    try:
        driver = make_driver(tiny(), spawn=True)
        dispatched: list[Dispatch] = []
        raced: list[Dispatch] = []
        unsent: list[bool] = []

        def on_command(command: object) -> None:
            if not isinstance(command, Dispatch):
                return
            dispatched.append(command)
            if raced or command.rank != 0:
                return
            on_rank = [p for p in driver._requests.values() if p.device == 0]  # turns out there
            if not on_rank:
                return
            actor = driver.workers[0]
            ray.kill(actor, no_restart=True)
            wait_dead(actor)
            # what the dead actor's answer makes in a batch (a request that finished before
            # the kill would answer without the error, so the loss is built here)
            driver._ready.extend(driver._lose(0, RuntimeError("killed by the check")))
            assert 0 in driver.lost and driver.core.pool.mode(0) is not DeviceMode.LOST
            raced.append(command)

        original = driver._feed

        def feed(events: list) -> None:
            if raced and not unsent:  # the batch after the racing dispatch
                rid = raced[0].rid
                queued = [r[0] for q in driver.mailbox._queued.values() for r in q]
                sent = [op.command.rid for op in driver.ledger.outstanding(PendingRequest)]
                unsent.append(rid not in driver._requests and rid not in queued + sent)
            original(events)

        driver.on_command = on_command
        driver._feed = feed
        rows = driver.run(2)
        assert len(raced) == 1 and unsent == [True]
        later = dispatched[dispatched.index(raced[0]) + 1 :]
        assert any(d.tid == raced[0].tid and d.turn == raced[0].turn for d in later)
        stats = driver.core.stats
        assert stats.devices_lost == 1 and stats.migrated >= 1
        assert driver.counters["workers_lost"] == 1 and len(rows) == 2
        assert_accounted(driver, trained=32)
    finally:
        ray.shutdown()
