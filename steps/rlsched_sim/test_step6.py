"""Step 6 of design/rlsched_sim.md: the same work for every policy."""

import statistics
from pathlib import Path

from rlsched.sim.params import load_sim_config
from rlsched.sim.workload import TraceGroup, Turn, Workload, write_trace

ROOT = Path(__file__).resolve().parents[2]
MODEL = load_sim_config(ROOT / "examples" / "paper_160gpu.yaml").workload


def test_work_depends_only_on_seed_and_ids() -> None:
    a, b = Workload(MODEL, 7, 8, 65536), Workload(MODEL, 7, 8, 65536)
    asked_forward = [a.turns(g, 8 * g + i) for g in range(20) for i in range(8)]
    asked_backward = [
        b.turns(g, 8 * g + i) for g in reversed(range(20)) for i in reversed(range(8))
    ]
    assert asked_forward == list(reversed(asked_backward))
    assert [a.prompt_tokens(g) for g in range(20)] == [b.prompt_tokens(g) for g in range(20)]
    assert Workload(MODEL, 8, 8, 65536).turns(0, 0) != a.turns(0, 0)
    assert all(1 <= len(t) <= 100 for t in asked_forward)


def test_samples_of_a_group_agree_more_than_groups_do() -> None:
    work = Workload(MODEL, 1, 8, 65536)
    groups = [[len(work.turns(g, 8 * g + i)) for i in range(8)] for g in range(200)]
    within = statistics.fmean(statistics.pstdev(g) for g in groups)
    between = statistics.pstdev([statistics.fmean(g) for g in groups])
    assert between > within


def test_prompts_fit_the_token_budget_and_forget_frees_plans() -> None:
    work = Workload(MODEL, 0, 8, 1000)
    assert max(work.prompt_tokens(g) for g in range(300)) <= 999
    work.turns(0, 3)
    work.forget((3,))
    assert 3 not in work._turns


def test_trace_replay_wraps_groups_and_samples(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    write_trace(
        [
            TraceGroup(10, ((Turn(1, 2, 0.5),), (Turn(3, 4, 1.0),))),
            TraceGroup(20, ((Turn(5, 6, 2.0),),)),
        ],
        path,
    )
    work = Workload(MODEL.model_copy(update={"trace": path}), 0, 4, 100)
    assert [work.prompt_tokens(g) for g in range(3)] == [10, 20, 10]
    assert work.turns(0, 1) == (Turn(3, 4, 1.0),)
    assert work.turns(0, 2) == (Turn(1, 2, 0.5),)
    assert work.turns(1, 6) == (Turn(5, 6, 2.0),)


def _gen(work: Workload, groups: int, size: int) -> list[list[int]]:
    return [[work.turns(g, size * g + i)[0].gen for i in range(size)] for g in range(groups)]


def test_gen_within_group_sigma_correlates_a_groups_responses() -> None:
    from rlsched.sim.params import Sourced

    single = MODEL.model_copy(
        update={"turns": MODEL.turns.model_copy(update={"median": 1.0, "sigma": 0.0, "max": 1.0})}
    )
    plain = Workload(single, 3, 8, 10**6)
    tight = Workload(
        single.model_copy(update={"gen_within_group_sigma": Sourced(value=0.1, source="test")}),
        3,
        8,
        10**6,
    )
    for work in (plain, tight):
        groups = _gen(work, 300, 8)
        within = statistics.fmean(statistics.pstdev(g) / statistics.fmean(g) for g in groups)
        work.spread = within  # type: ignore[attr-defined]
    # without the option a group's samples spread as much as any draws (sigma 0.8), with
    # sigma 0.1 about a tenth of that
    assert plain.spread > 0.5
    assert tight.spread < 0.15
    # the group's median is its own: every sample of group 0 lies within 50% of it
    median = tight._gen_median(0)
    assert median == tight._gen_median(0)
    assert all(0.5 * median <= t <= 1.5 * median for t in _gen(tight, 1, 8)[0])
    # clipped to gen_tokens' bounds
    assert all(1 <= t <= MODEL.gen_tokens.max for g in _gen(tight, 300, 8) for t in g)


def test_without_the_option_the_draws_are_unchanged() -> None:
    from rlsched.sim.params import Sourced

    base = Workload(MODEL, 5, 8, 65536)
    assert base._gen_spread is None
    # what sim 0.4.1 drew for this trajectory, before the option existed
    plan = base.turns(2, 17)
    assert (len(plan), [t.gen for t in plan[:5]], sum(t.gen for t in plan)) == (
        41,
        [308, 548, 531, 475, 64],
        15289,
    )
    other = Workload(
        MODEL.model_copy(update={"gen_within_group_sigma": Sourced(value=0.3, source="test")}),
        5,
        8,
        65536,
    )
    first, second = base.turns(2, 17), other.turns(2, 17)
    # the same turn count, observations and latencies: only the generated tokens differ
    assert len(first) == len(second)
    assert [(t.obs, t.env_s) for t in first] == [(t.obs, t.env_s) for t in second]
    assert [t.gen for t in first] != [t.gen for t in second]
