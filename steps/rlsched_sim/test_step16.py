"""Step 16 of design/rlsched_sim.md: the training-share and migration sweeps."""

from pathlib import Path

from rich.console import Console

from rlsched.sim.params import load_sim_config
from rlsched.sim.sweep import migration_sweep, migration_table, share_points, share_sweep

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


def test_the_migration_sweep_moves_kv_when_the_config_has_a_link() -> None:
    from kv_world import kv_world

    sim = kv_world({"timeshare": {"mode": "timeshare", "train": 2}})
    rows = migration_sweep(sim, 1, 1)
    names = [r["policy"] for r in rows]
    assert names == ["timeshare+reissue", "timeshare+resume", "timeshare+resume+move"]
    by_name = {r["policy"]: r for r in rows}
    assert by_name["timeshare+resume+move"]["moved_tokens"] > 0
    assert by_name["timeshare+reissue"]["moved_tokens"] == 0
    assert all(r["prefill_per_decoded_token"] > 0 for r in rows)
    text = Console(record=True, width=160)
    text.print(migration_table(rows))
    assert "moved tokens" in text.export_text()
