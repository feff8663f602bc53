"""Step 12 of design/rlsched_runtime.md: the loop runs whole training steps; nothing is lost."""

import pytest
import ray
from runtime_parts import make_driver, start_ray, tiny


def test_two_timeshare_steps_with_shrink_and_expand_account_for_every_trajectory() -> None:
    start_ray()
    try:
        driver = make_driver(tiny())
        seen = []
        rows = driver.run(3, seen.append)
        assert [r["step"] for r in rows] == [1, 2, 3] and seen == rows
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
        assert len(lines) == acct["admitted"] // 4  # every admitted group, in order
        assert sum(len(s) for line in lines for s in line["samples"]) >= 48
        assert driver.run(1)[-1]["step"] == 4  # resumes where it stopped
        driver.stop_requested = True  # what Ctrl-C sets: the loop stops between two events
        with pytest.raises(KeyboardInterrupt, match="stop requested"):
            driver.run(1)
        assert len(driver.recorder.rows) == 4 and not driver.looping
        driver.core.check_invariants()
    finally:
        ray.shutdown()
