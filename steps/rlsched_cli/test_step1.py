"""Step 1 of design/rlsched_cli.md: the lazy group and `rlsched shrink-plan` (unchanged)."""

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


def test_help_lists_lazy_commands_without_importing_them() -> None:
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from rlsched.cli import cli\n"
        "out = CliRunner().invoke(cli, ['--help']).output\n"
        "assert 'sim' in out and 'shrink-plan' in out, out\n"
        "heavy = sorted(m for m in sys.modules if m.startswith(('rlsched.sim', 'matplotlib')))\n"
        "assert not heavy, heavy\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr


def test_lazy_command_runs_through_the_group_and_its_listed_help_is_its_own() -> None:
    from rlsched.cli import LAZY_COMMANDS, LazyGroup

    result = CliRunner().invoke(cli, ["sim", "--help"])
    assert result.exit_code == 0, result.output
    assert "--sweep" in result.output
    for name, (_, line) in LAZY_COMMANDS.items():
        command = LazyGroup.get_command(cli, None, name)
        assert command.get_short_help_str(limit=200) == line


def test_h_is_help_everywhere() -> None:
    from click.testing import CliRunner

    from rlsched.cli import cli

    for args in (["-h"], ["check-config", "-h"], ["shrink-plan", "-h"], ["sim", "-h"]):
        out = CliRunner().invoke(cli, args)
        assert out.exit_code == 0 and "Usage:" in out.output, (args, out.output)


def test_a_command_without_its_extra_is_refused_in_one_line_naming_it() -> None:
    import subprocess
    import sys

    code = (
        "import sys\n"
        "sys.modules['ray'] = sys.modules['torch'] = None  # as if the extra were not installed\n"
        "from rlsched.cli import main\n"
        "sys.argv = ['rlsched', 'run', '--help']\n"
        "main()\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert proc.returncode == 1 and proc.stdout == ""
    (line,) = proc.stderr.splitlines()
    assert line.startswith("Error: `rlsched run` needs the `runtime` extra (")
    assert line.endswith(
        "pip install 'rlsched[runtime]' (in a checkout: pip install -e '.[runtime]')"
    )
