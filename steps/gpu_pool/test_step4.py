"""Step 4 of design/gpu_pool.md: `rlsched shrink-plan` on the v0.2 pool."""

from click.testing import CliRunner

from rlsched.cli import cli


def test_shrink_plan_prints_offload_ranks() -> None:
    result = CliRunner().invoke(
        cli, ["shrink-plan", "--num-gpus", "8", "--gpus-per-rank", "2", "4", "5", "7"]
    )
    assert result.exit_code == 0, result.output
    assert result.output.strip() == "2 3"


def test_shrink_plan_reports_the_failed_check() -> None:
    result = CliRunner().invoke(cli, ["shrink-plan", "9"])
    assert result.exit_code == 1
    assert "VAL_INT_RANGE failed in GpuPool._validate_gpu_allocation" in result.output
    assert "item=9" in result.output


def test_shrink_plan_rejects_duplicates() -> None:
    result = CliRunner().invoke(cli, ["shrink-plan", "1", "1"])
    assert result.exit_code == 1
    assert "VAL_NO_DUPLICATES failed" in result.output
