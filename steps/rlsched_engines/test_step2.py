"""Step 2 of design/rlsched_engines.md: batched decode, sampling and log-probabilities."""

import pytest
import torch

from rlsched.engines.base import Sampling
from rlsched.engines.hf import TransformersEngine
from rlsched.model import ModelSpec, build_model

VOCAB = 24


def engine(seed: int = 0) -> TransformersEngine:
    return TransformersEngine(build_model(ModelSpec(init_std=0.3), VOCAB), seed=seed, max_batch=8)


def test_a_padded_batch_computes_what_each_request_computes_alone() -> None:
    eng = engine()
    contexts = [[3, 4, 5], [3, 6, 7, 8, 9, 10, 11], [12]]
    batched = eng._forward_last(contexts)
    for row, ctx in enumerate(contexts):
        alone = eng._forward_last([ctx])[0]
        assert torch.allclose(batched[row], alone, atol=1e-5)
    assert eng.forward_passes == 4 and eng.tokens_computed == 2 * sum(map(len, contexts))


def test_lengths_stops_and_mask() -> None:
    eng = engine(seed=1)
    allowed = Sampling(allowed_token_ids=(10, 11, 12, 13))
    eng.submit(0, [3, 4], 5, allowed)
    eng.submit(1, [3, 4, 5], 50, Sampling(stop_token_ids=tuple(range(VOCAB))))
    first = eng.step()
    assert [o.rid for o in first] == [1] and first[0].finish_reason == "stop"
    assert eng.num_active == 1
    done = []
    while not done:
        done = eng.step()
    (out,) = done
    assert out.finish_reason == "length" and len(out.token_ids) == 5
    assert set(out.token_ids) <= {10, 11, 12, 13} and all(lp <= 0 for lp in out.logprobs)
    assert eng.num_active == 0 and eng.step() == []


def test_logprob_is_that_of_the_sampling_distribution() -> None:
    eng = engine(seed=2)
    sampling = Sampling(temperature=0.7, allowed_token_ids=(10, 11, 12, 13))
    eng.submit(0, [3, 4, 5], 1, sampling)
    logits = eng._forward_last([[3, 4, 5]])[0]
    (out,) = eng.step()
    expected = torch.log_softmax(logits[[10, 11, 12, 13]] / 0.7, dim=-1)
    assert out.logprobs[0] == pytest.approx(
        float(expected[[10, 11, 12, 13].index(out.token_ids[0])]), abs=1e-5
    )


def test_sampling_is_seeded_and_batch_cap_holds() -> None:
    def draw(seed: int) -> list[int]:
        eng = engine(seed)
        for rid in range(12):
            eng.submit(rid, [3, rid % 5 + 4], 3, Sampling())
        eng.step()
        assert sum(len(r.new_ids) for r in eng._requests.values()) == 8  # 8 of 12 advanced
        outs = []
        while eng.num_active:
            outs += eng.step()
        return [t for o in sorted(outs, key=lambda o: o.rid) for t in o.token_ids]

    assert draw(5) == draw(5) and draw(5) != draw(6)


def test_submit_is_validated() -> None:
    eng = engine()
    with pytest.raises(ValueError, match="VAL_NON_EMPTY"):
        eng.submit(0, [], 3, Sampling())
    with pytest.raises(ValueError, match="VAL_INT_RANGE"):
        eng.submit(0, [1], 0, Sampling())
    with pytest.raises(ValueError, match="VAL_INT_RANGE"):
        eng.submit(0, [1] * 1020, 5, Sampling())
    eng.submit(0, [1], 1, Sampling())
    with pytest.raises(AssertionError, match="AST_PRECONDITION"):
        eng.submit(0, [1], 1, Sampling())
