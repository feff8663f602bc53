"""Step 1 of design/rlsched_trainer.md: advantages, packing, log-probabilities, clipped loss."""

import math
import random

import pytest
import torch

from rlsched.model import ModelSpec, build_model
from rlsched.trainer.grpo import (
    TrainExample,
    group_advantages,
    grpo_loss,
    micro_batches,
    pack_examples,
    synthetic_examples,
    token_logprobs,
)


def test_advantages_are_normalised_per_group_over_valid_members() -> None:
    adv = group_advantages([1.0, 0.0, 5.0, 5.0, 2.0, 0.0], 2, [True, True, True, True, True, False])
    assert adv[0] == pytest.approx(1.0, abs=1e-4) and adv[1] == pytest.approx(-1.0, abs=1e-4)
    assert adv[2:4] == [0.0, 0.0]  # equal rewards carry no signal
    assert adv[4:] == [0.0, 0.0]  # one valid member is not a group
    with pytest.raises(ValueError, match="whole groups"):
        group_advantages([1.0, 2.0, 3.0], 2)


def test_packing_aligns_predictions_with_the_next_token() -> None:
    ex = TrainExample((5, 6, 7), (False, True, True), (0.0, -0.5, -0.25), 2.0)
    short = TrainExample((5, 8), (False, True), (0.0, -1.0), -1.0)
    batch = pack_examples([ex, short])
    assert batch["ids"].tolist() == [[5, 6, 7], [5, 8, 0]]
    assert batch["mask"].tolist() == [[1.0, 1.0], [1.0, 0.0]]
    assert batch["old"].tolist() == [[-0.5, -0.25], [-1.0, 0.0]]
    assert batch["adv"].tolist() == [[2.0, 2.0], [-1.0, -1.0]]
    with pytest.raises(ValueError, match="VAL_LEN_RANGE"):
        pack_examples([TrainExample((1, 2), (True,), (0.0, 0.0), 0.0)])


def test_masked_log_probabilities_are_a_distribution_over_allowed_tokens() -> None:
    model = build_model(ModelSpec(hidden_size=16, heads=2, kv_heads=1, intermediate_size=32), 20)
    ids = torch.tensor([[3, 5, 7]])
    att = torch.ones_like(ids)
    torch.set_grad_enabled(False)
    lp = token_logprobs(model, ids, att, 1.0, (5, 7))
    assert torch.isfinite(lp).all()
    total = sum(
        math.exp(token_logprobs(model, torch.tensor([[3, t]]), att[:, :2], 1.0, (5, 7))[0, 0])
        for t in (5, 7)
    )
    assert total == pytest.approx(1.0, abs=1e-5)
    assert token_logprobs(model, torch.tensor([[3, 4]]), att[:, :2], 1.0, (5, 7))[0, 0] == float(
        "-inf"
    )
    torch.set_grad_enabled(True)


def test_clipped_objective_and_kl() -> None:
    old = torch.log(torch.tensor([[0.5, 0.5]]))
    new = torch.log(torch.tensor([[0.9, 0.5]]))  # ratio 1.8 on the first token
    adv = torch.tensor([[1.0, 1.0]])
    mask = torch.tensor([[1.0, 1.0]])
    loss, metrics = grpo_loss(new, old, adv, mask, clip=0.2)
    assert loss.item() == pytest.approx(-(1.2 + 1.0), abs=1e-5)
    assert metrics["clip_frac"] == pytest.approx(0.5) and metrics["tokens"] == 2.0
    _, with_kl = grpo_loss(new, old, adv, mask, 0.2, ref=old, kl_coef=0.1)
    assert with_kl["kl"] > 0.0
    masked, _ = grpo_loss(new, old, adv, torch.tensor([[0.0, 1.0]]), 0.2)
    assert masked.item() == pytest.approx(-1.0, abs=1e-5)


def test_synthetic_examples_have_a_run_s_shape() -> None:
    examples = synthetic_examples(random.Random(3), [4, 5, 6], 3, 5)
    assert len(examples) == 3
    for ex in examples:
        assert len(ex.token_ids) == 5 and set(ex.token_ids) <= {4, 5, 6}
        assert ex.gen_mask == (False, False, True, True, True)  # the second half generated
        assert ex.logprobs == (0.0, 0.0, -1.0, -1.0, -1.0)
    assert [ex.advantage for ex in examples] == [-1.0, 1.0, -1.0]
    # the same seed, the same examples
    assert synthetic_examples(random.Random(3), [4, 5, 6], 3, 5) == examples


def test_micro_batches_sort_longest_first_and_cut_at_the_budget() -> None:
    def ex(n: int, tag: float) -> TrainExample:
        return TrainExample((1,) * n, (False,) * n, (0.0,) * n, tag)

    share = [ex(3, 0.0), ex(9, 1.0), ex(4, 2.0), ex(9, 3.0), ex(2, 4.0), ex(12, 5.0)]
    runs = micro_batches(share, 20)
    # 12 alone (12 + 12 > 20); 9 and 9 (2 x 9 <= 20, 3 x 9 > 20); then 4, 3, 2 (3 x 4 <= 20)
    assert [[len(e.token_ids) for e in run] for run in runs] == [[12], [9, 9], [4, 3, 2]]
    assert [e.advantage for e in runs[1]] == [1.0, 3.0]  # equal lengths keep the share's order
    assert all(len(r) * len(r[0].token_ids) <= 20 for r in runs)
    # every example once; no budget is one run, longest first; an example over the budget alone
    assert sorted(e.advantage for r in runs for e in r) == [e.advantage for e in share]
    assert micro_batches(share, None) == [sorted(share, key=lambda e: -len(e.token_ids))]
    assert [len(r) for r in micro_batches(share, 5)] == [1, 1, 1, 1, 1, 1]
    assert micro_batches([], 20) == [[]]
    assert [len(r) for r in micro_batches([ex(5, 0.0), ex(5, 1.0)], 10)] == [2]  # exactly full
