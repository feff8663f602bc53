"""Step 14 of design/rlsched_sim.md: several policies, in worker processes, same results."""

from pathlib import Path

from rlsched.sim.params import load_sim_config
from rlsched.sim.runner import ideal_of, run_policies

ROOT = Path(__file__).resolve().parents[2]


def test_parallel_runs_equal_sequential_runs() -> None:
    sim = load_sim_config(ROOT / "examples" / "four_gpu.yaml")
    names = list(sim.policies)
    seen: list[tuple[str, int]] = []
    sequential = run_policies(sim, names, 2, jobs=1)
    parallel = run_policies(sim, names, 2, jobs=2, progress=lambda n, d: seen.append((n, d)))
    for name in names:
        a = {k: v for k, v in sequential[name].summary.items() if k != "wall_s"}
        b = {k: v for k, v in parallel[name].summary.items() if k != "wall_s"}
        assert a == b
        assert parallel[name].result.timeline.spans == sequential[name].result.timeline.spans
    assert sorted(seen) == sorted((n, d) for n in names for d in (1, 2))
    ideal = ideal_of(sim, 2)
    assert ideal["step_time_s"] <= min(r.summary["step_time_s"] for r in sequential.values())


def test_a_global_kv_pool_fetches_moved_chunks_instead_of_prefilling_them() -> None:
    import yaml

    data = yaml.safe_load((ROOT / "examples" / "seer_workload.yaml").read_text())
    data["devices"]["count"] = 16  # two ranks, so chunks move
    data["scheduler"].update(train_batch_size=32, max_inflight_per_rank=8)
    data["policies"] = {
        "per_rank": {"mode": "colocate", "scheduler": {"chunk_tokens": 1024}},
        "global": {"mode": "colocate", "kv_pool": "global", "scheduler": {"chunk_tokens": 1024}},
        "global+undivided": {"mode": "colocate", "kv_pool": "global"},
        "undivided": {"mode": "colocate"},
    }
    sim = load_sim_config(data)
    runs = run_policies(sim, list(sim.policies), 1)
    per_rank, pooled = runs["per_rank"].result, runs["global"].result
    # the same work generated either way; the pool takes every re-prefill of a moved chunk's
    # context and kept tokens off, leaving the prompts and whatever preemption recomputes.
    # With memory reported, prefix affinity (design/rlsched_routing.md 0.6.0) sends most chunks
    # back to the rank holding their KV; the ones that still move cost per_rank a re-prefill
    assert per_rank.decoded_tokens == pooled.decoded_tokens
    assert pooled.prefill_tokens < per_rank.prefill_tokens
    # no preemption in this small world: with the pool only the prompts are prefilled, as
    # without chunks
    undivided = runs["undivided"].result
    assert per_rank.preemptions == pooled.preemptions == undivided.preemptions == 0
    assert pooled.prefill_tokens == undivided.prefill_tokens
    # without chunks nothing moves: the pool changes nothing at all
    a, b = runs["undivided"].summary, runs["global+undivided"].summary
    assert {k: v for k, v in a.items() if k != "wall_s"} == {
        k: v for k, v in b.items() if k != "wall_s"
    }


def test_a_policy_s_kv_options_reach_its_simulation() -> None:
    from kv_world import kv_world

    sim = kv_world(
        {
            "hbm": {"mode": "timeshare", "train": 2},
            "host": {"mode": "timeshare", "train": 2, "kv_host": True},
            "moving": {
                "mode": "timeshare",
                "train": 2,
                "kv_migration": "move",
                "scheduler": {"migration": "resume"},
            },
        }
    )
    runs = run_policies(sim, list(sim.policies), 2)
    copies = {name: run.summary["kv_transfers"] for name, run in runs.items()}
    assert copies["hbm"] == {"host": 0, "pool": 0, "moved": 0}
    assert copies["host"]["host"] > 0 and copies["host"]["moved"] == 0
    assert copies["moving"]["moved"] > 0 and copies["moving"]["host"] == 0
