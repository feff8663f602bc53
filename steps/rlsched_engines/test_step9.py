"""Step 9 of design/rlsched_engines.md: a wide feed runs apart.

`split_rows` on hand-computed widths, then the engine: a long prompt joining a decoding batch
runs in a second pass, with every output identical to the one-pass engine's and far fewer
padded positions; steps that verify drafts stay one pass.
"""

import copy

import pytest
import torch
from specdec_model import VOCAB, phrase_model, phrases

from rlsched.engines.base import GenOutput, Sampling, SpecSettings
from rlsched.engines.kv import KvEngine
from rlsched.engines.passes import split_rows
from rlsched.sim.steprank import StepRank

GREEDY = Sampling(temperature=0.0, allowed_token_ids=tuple(range(2, VOCAB)), stop_token_ids=(7,))


@pytest.fixture(scope="module")
def trained() -> torch.nn.Module:
    return phrase_model(seed=0)


def test_split_rows_takes_the_widest_apart_only_when_it_pads_less() -> None:
    assert split_rows([], 0) == [] and split_rows([40], 0) == []
    assert split_rows([1] * 64, 0) == []  # nothing to gain
    widths = [1] * 63
    widths.insert(10, 60)  # one pass: 64 x 60 = 3840; two: 63 x 1 + 60 + 128 = 251
    assert split_rows(widths, 128) == [10]
    assert split_rows(widths, 4000) == []  # the extra pass costs more than the padding
    # two passes: 2 x 1 + 2 x 30 + 0 = 62 < 4 x 30; the wide rows come back in index order
    assert split_rows([30, 1, 30, 1], 0) == [0, 2]
    assert split_rows([30, 1, 30, 1], 57) == [0, 2]  # 119 against 120
    assert split_rows([30, 1, 30, 1], 58) == []  # 120 against 120: one pass on a tie
    # the cut is where the total is least: [1, 2, 50, 60] -> 2 x 2 + 2 x 60 = 124, not
    # 1 x 1 + 3 x 60 = 181 nor 3 x 50 + 60 = 210
    assert split_rows([60, 1, 50, 2], 0) == [0, 2]
    assert split_rows([1, 50, 50], 0) == [1, 2]  # the narrowest alone: 1 + 2 x 50 < 3 x 50
    assert split_rows([200, 1], 0) == [0] and split_rows([200, 1], 199) == []  # two rows


def drain(engine: KvEngine) -> dict[int, GenOutput]:
    out: dict[int, GenOutput] = {}
    while engine.num_active:
        out.update((o.rid, o) for o in engine.step())
    return out


def join_wide_while_decoding(
    engine: KvEngine,
) -> tuple[dict[int, GenOutput], list[int], list[int]]:
    """Twelve requests decode; after two steps a long prompt joins, then another. Returns
    the outputs, the passes each step ran and the rows it advanced."""
    chunks = phrases(0)
    for r in range(12):
        engine.submit(r, chunks[r % 12][:3], 24, GREEDY)
    passes, rows = [], []
    out: dict[int, GenOutput] = {}
    for step in range(40):
        if step in (2, 5):
            engine.submit(100 + step, [t for c in chunks[:4] for t in c][:40], 8, GREEDY)
        before = engine.forward_passes
        rows.append(engine.num_active)
        out.update((o.rid, o) for o in engine.step())
        passes.append(engine.forward_passes - before)
        if not engine.num_active:
            break
    out.update(drain(engine))
    return out, passes, rows


def test_a_long_prompt_runs_apart_with_the_same_outputs(trained) -> None:
    one = KvEngine(copy.deepcopy(trained), max_batch=16, split_tokens=None)
    two = KvEngine(copy.deepcopy(trained), max_batch=16)
    out_one, passes_one, _ = join_wide_while_decoding(one)
    out_two, passes_two, rows = join_wide_while_decoding(two)
    assert out_two == out_one and len(out_two) == 14
    assert set(passes_one) == {1}
    assert passes_two[2] == 2 and passes_two[5] == 2  # the joining prompt ran apart
    assert passes_two.count(2) == 2
    assert two.tokens_computed == one.tokens_computed
    # every pass of the split engine fed rows of one width (decoding rows 1, a joining prompt
    # alone): nothing padded; one pass padded the decoding rows to each joining prompt
    assert two.tokens_padded == two.tokens_computed
    assert one.tokens_padded - one.tokens_computed >= 2 * (rows[2] - 1) * 20


def test_the_simulator_counts_the_positions_and_passes_the_engine_computes(trained) -> None:
    """The simulator's step model (design/rlsched_steprank.md 0.5.0) asks the same question
    of the same feeds: its count is the engine's."""
    engine = KvEngine(copy.deepcopy(trained), max_batch=16)
    rank = StepRank((0.0,) * 5, 16, 0.0, 0.0, 16, split_tokens=engine.split_tokens)
    chunks = phrases(0)
    for r in range(4):
        engine.submit(r, chunks[r][:5], 8, GREEDY)
    engine.step()  # four prompts of 5 tokens: one pass
    long = [t for c in chunks[4:] for t in c][:40]
    assert len(long) == 40
    for feeds, submit in (([1, 1, 1, 1, 40], True), ([1] * 5, False)):
        if submit:
            engine.submit(9, long, 8, GREEDY)
        padded, passes = engine.tokens_padded, engine.forward_passes
        engine.step()
        counted = (engine.tokens_padded - padded, engine.forward_passes - passes)
        assert counted == rank.padded(feeds), feeds
    assert rank.padded([1, 1, 1, 1, 40]) == (44, 2)  # the prompt ran apart


def test_steps_that_verify_drafts_stay_one_pass(trained) -> None:
    spec = KvEngine(copy.deepcopy(trained), max_batch=16, settings=SpecSettings(drafter="group"))
    chunks = phrases(0)
    for r in range(8):
        spec.submit(r, chunks[r % 4][:4], 30, GREEDY, group=r % 2)
    drain(spec)  # finished sequences for the group drafters to draft from
    for r in range(8):
        spec.submit(10 + r, chunks[r % 4][:4], 30, GREEDY, group=r % 2)
    calls: list[tuple[int, list[int]]] = []
    forward = spec._forward

    def record(slots, cached, feeds, keep):
        calls.append((keep, [len(feed) for feed in feeds]))
        return forward(slots, cached, feeds, keep)

    spec._forward = record
    spec.step()
    spec.submit(99, [t for c in chunks[:4] for t in c][:40], 4, GREEDY, group=0)
    spec.step()
    # the prompt joined eight rows verifying drafts: apart it would pad fewer positions, but
    # every row's logits must keep the same positions, so the step stays one pass
    (keep, widths), *rest = calls[1:]
    assert keep > 1 and len(widths) == 9 and not rest
    assert split_rows(widths, 128)  # one pass without drafts would have split
