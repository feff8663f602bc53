"""Step 12 of design/rlsched_sim.md: whole runs, hand-computed; a stalled schedule is reported."""

import pytest

from rlsched.config import RlschedConfig
from rlsched.core.machine import Scheduler
from rlsched.core.policies import ColocatePolicy
from rlsched.sim.params import CostModel, WorkloadModel
from rlsched.sim.shell import Simulation, SimulationStalled
from rlsched.sim.workload import Workload


def _fixed(value: float) -> dict:
    return {"median": value, "source": "hand-computed case"}


def _case(prefix_cache: bool) -> tuple[RlschedConfig, CostModel, Workload]:
    cfg = RlschedConfig.model_validate({
        "devices": {"count": 1},
        "scheduler": {"mode": "colocate", "train_batch_size": 1, "group_size": 1, "staleness": 0,
                      "max_turns": 10, "max_tokens": 10_000},
    })
    s = lambda v: {"value": v, "source": "hand-computed case"}  # noqa: E731
    cost = CostModel.model_validate({
        "decode_rank_tokens_per_s": s(100), "decode_request_tokens_per_s": s(10),
        "prefill_s_per_token": s(0.01), "prefix_cache": prefix_cache, "train_s_per_token": s(0.001),
        "train_fixed_s": s(2), "sync_s": s(0), "offload_s": s(0), "reload_s": s(0),
    })
    model = WorkloadModel.model_validate({
        "prompt_tokens": _fixed(100), "turns": _fixed(2), "turns_within_group_sigma": s(0),
        "gen_tokens": _fixed(50), "obs_tokens": _fixed(10), "env_step_s": _fixed(1.0),
    })
    return cfg, cost, Workload(model, 0, 1, 10_000)


@pytest.mark.parametrize(("prefix_cache", "step"), [(False, 16.82), (True, 15.32)])
def test_one_device_fixed_lengths_instant_switches(prefix_cache: bool, step: float) -> None:
    # turn 0: prefill 100 tokens (1.0 s) + 50 tokens at 10/s (5 s) + environment 1 s;
    # turn 1: prefill 160 tokens (1.6 s; 10 tokens, 0.1 s, when the rank kept its prefix) + 5 s
    # + 1 s; training: 2 s + 0.001 s x 220 tokens. Nothing overlaps on one device.
    cfg, cost, work = _case(prefix_cache)
    result = Simulation(cfg, cost, work, check_invariants=True).run(3)
    assert result.step_done == pytest.approx([step, 2 * step, 3 * step])
    assert result.decoded_tokens == 300 and result.useful_tokens == 300
    assert result.timeline.share([0], ["train"]) == pytest.approx(2.22 / step)


class _NeverTrains(ColocatePolicy):
    def train_devices(self, pool):  # type: ignore[no-untyped-def]
        return ()

    def shrink_targets(self, pool, ready_groups):  # type: ignore[no-untyped-def]
        return ()


def test_a_schedule_that_cannot_progress_is_reported() -> None:
    cfg, cost, work = _case(False)
    core = Scheduler(cfg, policy=_NeverTrains(cfg))
    with pytest.raises(SimulationStalled, match=r"stalled at t=14\.6s after 0 steps: 0 requests in flight, 1 ready"):
        Simulation(cfg, cost, work, scheduler=core).run(1)
