"""Step 16 of design/rlsched_sim.md: the training-share and migration sweeps."""

from pathlib import Path

from rlsched.sim.params import load_sim_config
from rlsched.sim.sweep import migration_sweep, share_points, share_sweep

ROOT = Path(__file__).resolve().parents[2]


def test_share_points_are_whole_ranks_plus_the_configs_own() -> None:
    paper = load_sim_config(ROOT / "examples" / "paper_160gpu.yaml")
    points = share_points(paper)
    assert points == [24, 40, 64, 80, 104, 120, 128, 144]
    assert all(p % 8 == 0 for p in points)


def test_sweeps_run_on_the_four_gpu_example() -> None:
    sim = load_sim_config(ROOT / "examples" / "four_gpu.yaml")
    rows = share_sweep(sim, 1, 1)
    assert [r["train_devices"] for r in rows] == [1, 2, 3]
    assert all(r["speedup_vs_disaggregated"] > 0 for r in rows)
    migration = migration_sweep(sim, 1, 1)
    assert [r["policy"] for r in migration] == ["timeshare+reissue", "timeshare+resume"]
