"""Step 12 of design/rlsched_runtime.md: the loop runs whole training steps; nothing is lost."""

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
        assert rows[0]["shrink_s"] is not None and any(r["expand_s"] for r in rows)
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
    finally:
        ray.shutdown()
