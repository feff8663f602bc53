"""Step 7 of design/rlsched_engines.md: the KV engine's batched pass over slot rows.

The reference for every row is the model run alone on that row's whole context: one pass over
rows with different cached and fed lengths must give each row its own logits, and store keys and
values that a later pass can continue from.
"""

import pytest
import torch
from specdec_model import VOCAB, random_model

from rlsched.engines.base import Sampling, SpecSettings
from rlsched.engines.hf import LiveRequest
from rlsched.engines.kv import KvEngine, KvState, common_prefix


@pytest.fixture(scope="module")
def model() -> torch.nn.Module:
    return random_model("llama", 3)


def alone(model: torch.nn.Module, context: list[int]) -> torch.Tensor:
    with torch.no_grad():
        return model(input_ids=torch.tensor([context])).logits[0].float()


def test_common_prefix() -> None:
    assert common_prefix([1, 2, 3], [1, 2, 4, 5]) == 2
    assert common_prefix([], [1]) == 0
    assert common_prefix([7, 8], [7, 8]) == 2


def test_one_pass_over_ragged_rows_gives_each_row_its_own_logits(model) -> None:
    engine = KvEngine(model, max_batch=4, retain=2)
    contexts = [[5, 6, 7, 8, 9, 10, 11], [12, 13], [14, 15, 16, 17, 18]]
    # first pass: prefills of different lengths, one row fed nothing cached
    logits = engine._forward([0, 1, 2], [0, 0, 0], [c[:-1] for c in contexts], keep=1)
    for row, context in enumerate(contexts):
        torch.testing.assert_close(
            logits[row, -1], alone(model, context[:-1])[-1], atol=1e-4, rtol=1e-4
        )
    assert engine.forward_passes == 1
    assert engine.tokens_computed == sum(len(c) - 1 for c in contexts)
    assert engine.tokens_padded == 3 * 6
    # second pass continues from the stored keys and values: rows feed 1, 1 and 3 tokens
    more = [[20], [21], [22, 23, 24]]
    cached = [len(c) - 1 for c in contexts]
    feeds = [[c[-1], *m] for c, m in zip(contexts, more, strict=True)]
    logits = engine._forward([0, 1, 2], cached, feeds, keep=4)
    for row, (context, extra) in enumerate(zip(contexts, more, strict=True)):
        full = alone(model, context + extra)
        k = len(feeds[row])
        torch.testing.assert_close(logits[row, 4 - k :], full[-k:], atol=1e-4, rtol=1e-4)
    assert engine.forward_passes == 2


def test_capacity_grows_and_keeps_the_rows(model) -> None:
    engine = KvEngine(model, max_batch=1, retain=0)
    context = list(range(2, VOCAB)) * 3  # longer than the first allocation
    engine._forward([0], [0], [context[:40]], keep=1)
    first = engine._kv.shape[4]
    logits = engine._forward([0], [40], [context[40:]], keep=1)
    assert engine._kv.shape[4] > first >= 40
    torch.testing.assert_close(logits[0, -1], alone(model, context)[-1], atol=1e-4, rtol=1e-4)
    # the next pass reads the grown cache: the 40 columns stored before growing must be there
    logits = engine._forward([0], [len(context)], [[3]], keep=1)
    torch.testing.assert_close(logits[0, -1], alone(model, [*context, 3])[-1], atol=1e-4, rtol=1e-4)


def test_claim_takes_its_own_prefix_else_a_free_slot_else_the_oldest(model) -> None:
    engine = KvEngine(model, max_batch=2, retain=2)
    engine._kept[3] = (1, 2, 3, 4)
    engine._kept[2] = (1, 2, 9)
    engine._free = [0, 1]
    slot = engine._claim([1, 2, 3, 4, 5, 6])
    assert slot == 3 and engine._slot_len[3] == 4 and engine.tokens_reused == 4
    # a full match still leaves one token to feed
    engine._kept[3] = (1, 2, 9)
    del engine._kept[2]
    assert engine._claim([1, 2, 9]) == 3 and engine._slot_len[3] == 2
    # no shared prefix: a free slot, valid length 0
    assert engine._claim([8, 8]) == 1 and engine._slot_len[1] == 0
    engine._kept[2] = (4,)
    engine._free = []
    assert engine._claim([8]) == 2 and engine._slot_len[2] == 0  # the oldest kept slot
    engine._kept[1] = (5, 5)
    engine._forget_kept()
    assert not engine._kept and 1 in engine._free


def test_a_slot_shared_in_part_is_copied_while_a_slot_is_free(model) -> None:
    """0.6.0: a joining request takes a kept slot only when all its tokens are a prefix of the
    context (its own earlier turns); a slot sharing part of it stays kept for its trajectory, its
    shared prefix copied into a free slot, and is taken only when no slot is free."""
    engine = KvEngine(model, max_batch=2, retain=2)
    engine._ensure_capacity(torch.zeros(1, 2, 1, 8), 2, 8)
    engine._kv[:, :, 3, :, :5] = torch.randn(2, 2, 2, 5, 8)
    engine._kept[3] = (1, 2, 3, 4, 9)  # another trajectory's: shares 4 tokens, then differs
    engine._kept[2] = (1, 2, 3)  # this trajectory's own earlier turns
    engine._free = [0, 1]
    assert engine._claim([1, 2, 3, 4, 5]) == 2 and engine._slot_len[2] == 3
    assert list(engine._kept) == [3] and engine.tokens_reused == 3
    slot = engine._claim([1, 2, 3, 4, 7, 7])  # only a part shared: a copy in a free slot
    assert slot == 1 and engine._slot_len[1] == 4 and engine.tokens_reused == 7
    torch.testing.assert_close(engine._kv[:, :, 1, :, :4], engine._kv[:, :, 3, :, :4])
    assert list(engine._kept) == [3] and engine._free == [0]
    assert engine._claim([1, 2, 8]) == 0 and engine._slot_len[0] == 2  # a copy again
    assert engine._claim([1, 2, 3, 4, 6]) == 3 and engine._slot_len[3] == 4  # none free: taken
    assert not engine._kept and engine.tokens_reused == 13


def test_verify_greedy_sampled_and_masked(model) -> None:
    engine = KvEngine(model, settings=SpecSettings(drafter="group"))
    rows = torch.tensor([[0.0, 3.0, 1.0, 2.0], [0.0, 0.0, 5.0, 1.0], [4.0, 0.0, 0.0, 1.0]])
    greedy = LiveRequest(0, [1], 4, Sampling(temperature=0.0))
    state = KvState(0)
    assert engine._verify(greedy, state, rows, [1, 3]) == (1, [1, 2], [0.0, 0.0])
    assert engine._verify(greedy, state, rows[:1], []) == (0, [1], [0.0])
    masked = KvState(0, mask=torch.tensor([float("-inf"), float("-inf"), 0.0, 0.0]))
    assert engine._verify(greedy, masked, rows[:1], [])[1] == [3]
    sampled = LiveRequest(1, [1], 4, Sampling(temperature=0.5))
    for _ in range(20):
        accepted, tokens, logprobs = engine._verify(sampled, masked, rows[:1], [])
        expected = torch.log_softmax(rows[0] / 0.5 + masked.mask, dim=-1)
        assert accepted == 0 and tokens[0] in (2, 3)
        assert logprobs[0] == pytest.approx(float(expected[tokens[0]]))
    accepted, tokens, logprobs = engine._verify(sampled, masked, rows, [2, 3])
    assert len(tokens) == accepted + 1 == len(logprobs)
    assert all(t in (2, 3) for t in tokens) and all(lp <= 0.0 for lp in logprobs)


def test_emit_stops_at_a_stop_token_or_the_budget(model) -> None:
    engine = KvEngine(model)
    req = LiveRequest(0, [1, 2], 5, Sampling(stop_token_ids=(9,)))
    state = KvState(0)
    assert engine._emit(req, state, [4, 9, 6], [-1.0, -2.0, -3.0]) == "stop"
    assert req.new_ids == [4, 9] and req.context == [1, 2, 4, 9] and req.logprobs == [-1.0, -2.0]
    req = LiveRequest(1, [1], 2, Sampling())
    assert engine._emit(req, state, [4], [-0.5]) is None
    assert engine._emit(req, state, [5, 6], [-0.1, -0.2]) == "length" and req.new_ids == [4, 5]
