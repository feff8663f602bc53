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


def qwen2(heads: int, kv_heads: int, seed: int = 0, arch: str = "qwen2") -> torch.nn.Module:
    from rlsched.model import ModelSpec, build_model

    spec = ModelSpec(
        arch=arch, hidden_size=32, layers=2, heads=heads, kv_heads=kv_heads, init_std=0.3, seed=seed
    )
    return build_model(spec, 12)


def random_pass(gen: torch.Generator, model: torch.nn.Module) -> tuple:
    """A pass as the engine builds one: rows with random cached and fed lengths (left-padded
    feeds, the mask of real columns), random cached keys and values, `keep` 1 to the feed."""

    def draw(low: int, high: int) -> int:
        return int(torch.randint(low, high + 1, (1,), generator=gen))

    rows, width = draw(1, 6), draw(0, 1) * draw(1, 12)
    cached = [draw(0, width) for _ in range(rows)]
    fed = [draw(1, 4) for _ in range(rows)]
    if draw(0, 2) == 0:  # a decode pass: one token each, every cached column real
        cached, fed = [width] * rows, [1] * rows
    new = max(fed)
    ids = torch.zeros(rows, new, dtype=torch.long)
    positions = torch.zeros(rows, new, dtype=torch.long)
    for r in range(rows):
        ids[r, new - fed[r] :] = torch.randint(3, 12, (fed[r],), generator=gen)
        positions[r, new - fed[r] :] = torch.arange(cached[r], cached[r] + fed[r])
    from rlsched.engines.kvpass import real_columns

    mask = real_columns(torch.tensor(cached), torch.tensor(fed), width, new)
    attn = model.model.layers[0].self_attn
    shape = (rows, model.config.num_key_value_heads, width, attn.head_dim)
    past = [
        (torch.randn(shape, generator=gen), torch.randn(shape, generator=gen)) for _ in range(2)
    ]
    return ids, positions, mask, past if width else [], draw(1, new), fed


def test_the_engine_s_qwen2_pass_is_transformers_pass_to_the_bit() -> None:
    """Logits of every row's real positions and the new keys and values, on 60 random passes
    of three head layouts (one key head per query head, two, four)."""
    from transformers import DynamicCache

    from rlsched.engines.kvpass import qwen2_pass
    from rlsched.model import cache_keyword

    gen = torch.Generator().manual_seed(5)
    for heads, kv_heads in ((2, 2), (4, 2), (4, 1)):
        model = qwen2(heads, kv_heads)
        for _ in range(20):
            ids, positions, mask, past, keep, fed = random_pass(gen, model)
            logits, layers = qwen2_pass(model, ids, positions, mask, past, keep)
            cache = DynamicCache(ddp_cache_data=past) if past else DynamicCache()
            with torch.no_grad():
                expect = model(
                    input_ids=ids,
                    attention_mask=mask,
                    position_ids=positions,
                    logits_to_keep=keep,
                    use_cache=True,
                    **{cache_keyword(model): cache},
                ).logits
            width, new = mask.shape[1] - ids.shape[1], ids.shape[1]
            for r, m in enumerate(fed):
                real = min(keep, m)
                assert torch.equal(logits[r, -real:], expect[r, -real:])
                for (keys, values), layer in zip(layers, cache.layers, strict=True):
                    assert torch.equal(
                        keys[r, :, width + new - m :], layer.keys[r, :, width + new - m :]
                    )
                    assert torch.equal(
                        values[r, :, width + new - m :], layer.values[r, :, width + new - m :]
                    )


def test_the_engine_takes_its_pass_only_where_it_is_transformers(monkeypatch) -> None:
    import rlsched.engines.kvpass as fast

    assert fast.same_as_transformers(qwen2(4, 2)) and fast.same_as_transformers(qwen2(2, 2))
    assert not fast.same_as_transformers(qwen2(4, 2, arch="llama"))  # another architecture
    eager = qwen2(4, 2)
    eager.config._attn_implementation = "eager"
    assert not fast.same_as_transformers(eager)
    # a pass one bit off in any one branch is refused: a probe covers each branch
    plain = fast.qwen2_pass
    branches = {
        "equal prompts, no cache": lambda ids, mask, past: not past and bool(mask.all()),
        "ragged prompts, no cache": lambda ids, mask, past: not past and not bool(mask.all()),
        "one token each, full cache": lambda ids, mask, past: past and bool(mask.all()),
        "one token each, ragged cache": lambda ids, mask, past: (
            past and ids.shape[1] == 1 and not bool(mask.all())
        ),
        "several tokens, ragged cache": lambda ids, mask, past: past and ids.shape[1] > 1,
    }
    for name, branch in branches.items():

        def off(model, ids, positions, mask, past, keep, branch=branch):  # noqa: ANN001, ANN202
            logits, layers = plain(model, ids, positions, mask, past, keep)
            if branch(ids, mask, past):
                logits = logits.clone()
                logits[0, -1, 0] = torch.nextafter(logits[0, -1, 0], torch.tensor(1e9))
            return logits, layers

        monkeypatch.setattr(fast, "qwen2_pass", off)
        assert not fast.same_as_transformers(qwen2(4, 2)), name
    monkeypatch.setattr(fast, "qwen2_pass", plain)
    assert fast.same_as_transformers(qwen2(4, 2))


def test_an_engine_on_its_own_pass_samples_what_transformers_pass_does() -> None:
    """Two engines of one seed, one forced onto transformers' pass: the same tokens and
    log-probabilities, sampled at temperature 1, over turns that reuse their prefixes."""
    model = qwen2(4, 2, seed=3)
    engines = [KvEngine(copy.deepcopy(model), max_batch=4, seed=11) for _ in range(2)]
    engines[1].fast_pass = False
    sampling = Sampling(temperature=1.0, allowed_token_ids=tuple(range(3, 12)))
    outs: list[list[GenOutput]] = [[], []]
    for engine, got in zip(engines, outs, strict=True):
        contexts = {rid: [3 + rid, 4, 5] for rid in range(4)}
        for turn in range(3):
            for rid, context in contexts.items():
                engine.submit(10 * turn + rid, context, 4, sampling)
            while engine.num_active:
                for out in engine.step():
                    got.append(out)
                    contexts[out.rid % 10] += [*out.token_ids, 6 + turn]
    assert engines[0].fast_pass is True and engines[0].tokens_reused > 0
    assert [(o.rid, o.token_ids, o.logprobs) for o in outs[0]] == [
        (o.rid, o.token_ids, o.logprobs) for o in outs[1]
    ]
