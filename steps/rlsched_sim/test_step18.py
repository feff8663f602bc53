"""Step 18 of design/rlsched_sim.md: the shell reports memory to the core (issue 15 item 2)."""

from pathlib import Path

from rlsched.core.events import Event, RequestAborted, RequestFinished, Started
from rlsched.sim.params import CostModel, load_sim_config
from rlsched.sim.shell import Simulation
from rlsched.sim.workload import Workload

ROOT = Path(__file__).resolve().parents[2]
FOUR = ROOT / "examples" / "four_gpu.yaml"
# A 7B-class model on one 24 GB GPU: 2 x 28 x 4 x 128 x 2 = 57,344 bytes a token and
# (24 x 0.9 - 16 - 3.3) GB left: 40,108 tokens of KV (test figures, not a claim).
KV = {
    "layers": 28,
    "kv_heads": 4,
    "head_dim": 128,
    "dtype_bytes": 2,
    "gpu_memory_gb": 24,
    "memory_utilization": 0.9,
    "weights_gb": 16,
    "activation_gb": 3.3,
    "gpu_bandwidth_gb_per_s": 900,
    "batch_tokens": 2048,
}


class Silent(Simulation):
    """The same memory model, but the shell tells the core nothing (a runtime that cannot)."""

    def _kv_tokens(self) -> int | None:
        return None


def _memory_world(policy: str = "timeshare", cls: type[Simulation] = Simulation, seen=None):
    sim = load_sim_config(FOUR)
    kv = {k: {"value": v, "source": "test figure"} for k, v in KV.items()}
    cost = CostModel.model_validate({**sim.cost.model_dump(), "kv": kv})
    cfg = sim.policy_config(policy)
    work = Workload(sim.workload, sim.seed, cfg.scheduler.group_size, cfg.scheduler.max_tokens)
    observer = None if seen is None else (lambda event, commands: seen.append(event))
    return cls(cfg, cost, work, observer=observer, check_invariants=True)


def test_the_reported_capacity_keeps_the_ranks_admission_headroom() -> None:
    paper = load_sim_config(ROOT / "examples" / "paper_160gpu.yaml")
    cfg = paper.policy_config("timeshare")
    work = Workload(paper.workload, 0, cfg.scheduler.group_size, cfg.scheduler.max_tokens)
    simulation = Simulation(cfg, paper.cost, work)
    assert simulation._kv_tokens() == 212_973 - 2_129  # less the rank's 1% headroom
    assert simulation._kv_free(3) == 212_973 - 2_129  # an empty rank
    four = load_sim_config(FOUR)
    plain = Simulation(
        four.policy_config("timeshare"), four.cost, Workload(four.workload, 0, 4, 16384)
    )
    assert plain._kv_tokens() is None and plain._kv_free(0) is None


def test_free_kv_is_what_requests_hold_less_and_cached_prefixes_count_as_free() -> None:
    simulation = _memory_world()
    usable = simulation._kv_tokens()
    assert usable == 40_108 - 401
    rank = simulation.ranks[1]
    rank.submit(0.0, 0, 7, 1_000, 50)  # prefilling: its whole context is held
    assert simulation._kv_free(1) == usable - 1_000
    rank.queue.append((1, 8, 30_000, 10))  # waiting for memory: held too
    assert simulation._kv_free(1) == usable - 31_000
    rank.queue.append((2, 9, 30_000, 10))
    assert simulation._kv_free(1) == 0  # never below zero
    rank.queue.clear()
    rank.remove(0.0, 0)  # aborted before any prefill: nothing cached, nothing held
    assert simulation._kv_free(1) == usable
    rank.submit(1.0, 3, 7, 1_000, 1)
    while rank.next_time() is not None:
        rank.complete(rank.next_time())
    assert rank.cache_sum == 1_001  # the finished turn's prefix stays cached ...
    assert simulation._kv_free(1) == usable  # ... and counts as free


def test_a_run_reports_capacity_once_and_free_kv_with_every_finish() -> None:
    seen: list[Event] = []
    simulation = _memory_world(seen=seen)
    simulation.run(2)
    usable = simulation._kv_tokens()
    assert seen[0] == Started(0.0, usable)
    finishes = [e for e in seen if isinstance(e, RequestFinished)]
    assert len(finishes) > 100
    assert all(e.kv_free is not None and 0 <= e.kv_free <= usable for e in finishes)
    assert len({e.kv_free for e in finishes}) > 10  # the figure moves with the load
    assert all(e.kv_free is None for e in seen if isinstance(e, RequestAborted))
    assert simulation.core.router.kv_cap == usable
    homed = [t for t in simulation.core.buffer.trajs.values() if t.home >= 0]
    assert homed  # trajectories whose turn finished know where their prefix is


def test_reporting_memory_brings_turns_home_and_prefills_less() -> None:
    told = _memory_world()
    told.run(3)
    silent = _memory_world(cls=Silent)
    silent.run(3)
    assert silent.core.router.kv_cap is None
    assert all(t.home == -1 for t in silent.core.buffer.trajs.values())

    def prefill_per_decoded(simulation: Simulation) -> float:
        prefilled = sum(rank.prefilled for rank in simulation.ranks)
        return prefilled / simulation.result.decoded_tokens

    assert prefill_per_decoded(told) < 0.8 * prefill_per_decoded(silent)


def test_a_turn_as_large_as_the_whole_cache_runs_on_an_emptied_rank() -> None:
    """A random world of tests/test_sim_properties.py stalled here: one rollout rank of 691
    reported tokens, prompts up to 3,000 tokens; after requests came and went the empty rank
    reported 690 free (a float residue of its running sums), the next turn needed all 691 and
    fitted nowhere while nothing was in flight. An empty rank now reports its whole capacity
    (design/rlsched_memory.md 0.3.0), and the run finishes."""
    from rlsched.config import RlschedConfig
    from rlsched.sim.params import WorkloadModel

    cfg = RlschedConfig.model_validate(
        {
            "devices": {"count": 4, "train": 2, "gpus_per_rank": 2},
            "scheduler": {
                "mode": "disaggregated",
                "train_batch_size": 16,
                "group_size": 2,
                "staleness": 0,
                "max_turns": 1,
                "max_tokens": 2000,
                "env_timeout_s": 5.0,
                "max_inflight_per_rank": 16,
            },
        }
    )
    s = lambda v: {"value": v, "source": "test figure"}  # noqa: E731
    figures = {**KV, "weights_gb": 0, "activation_gb": 21.58}  # 0.02 GB a GPU: 697 tokens
    cost = CostModel.model_validate(
        {
            "decode_rank_tokens_per_s": s(50.0),
            "decode_request_tokens_per_s": s(30.0),
            "prefill_s_per_token": s(0.0),
            "train_s_per_token": s(1e-4),
            "train_fixed_s": s(0),
            "sync_s": s(0),
            "offload_s": s(0),
            "reload_s": s(0),
            "kv": {k: s(v) for k, v in figures.items()},
        }
    )
    def d(median: float, sigma: float, lo: float, hi: float) -> dict:
        return {"median": median, "sigma": sigma, "min": lo, "max": hi, "source": "test figure"}

    model = WorkloadModel.model_validate(
        {
            "prompt_tokens": d(600, 0.5, 1, 3000),
            "turns": d(1, 0, 1, 8),
            "turns_within_group_sigma": s(0.5),
            "gen_tokens": d(80, 0, 1, 1000),
            "obs_tokens": d(20, 1, 0, 300),
            "env_step_s": d(1, 0, 0.01, 120),
        }
    )
    simulation = Simulation(cfg, cost, Workload(model, 1, 2, 2000))
    assert simulation._kv_tokens() == 691
    result = simulation.run(2)
    assert len(result.step_done) == 2
    assert [simulation._kv_free(rank) for rank in range(2)] == [691, 691]
