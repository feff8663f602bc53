"""Step 2 of design/rlsched_trainer.md: shards stay replicas; an update follows the advantage."""

import torch

from rlsched.model import ModelSpec, build_model
from rlsched.trainer.grpo import (
    TrainExample,
    TrainSpec,
    grpo_loss,
    pack_examples,
    token_logprobs,
)
from rlsched.trainer.shard import TrainerShard

SPEC = ModelSpec(hidden_size=16, heads=2, kv_heads=1, intermediate_size=32, init_std=0.2)


def shard(spec: TrainSpec = TrainSpec(lr=0.05)) -> TrainerShard:
    return TrainerShard(build_model(SPEC, 12), spec, 1.0, (5, 6))


def examples() -> list[TrainExample]:
    model = build_model(SPEC, 12)
    out = []
    for action, adv in ((5, 1.0), (6, -1.0), (5, 1.0), (6, -1.0)):
        ids = (3, 4, action)
        with torch.no_grad():
            lp = token_logprobs(
                model, torch.tensor([ids]), torch.ones(1, 3, dtype=torch.long), 1.0, (5, 6)
            )
        out.append(TrainExample(ids, (False, False, True), (0.0, 0.0, float(lp[0, -1])), adv))
    return out


def test_two_shards_with_half_the_data_equal_one_shard_with_all() -> None:
    data = examples()
    one, a, b = shard(), shard(), shard()
    whole = one.compute_grads(data)
    one.apply_grads([whole])
    pa, pb = a.compute_grads(data[:2]), b.compute_grads(data[2:])
    assert (
        torch.allclose(whole.flat, pa.flat + pb.flat, atol=1e-6)
        and whole.tokens == pa.tokens + pb.tokens
    )
    a.apply_grads([pa, pb])
    b.apply_grads([pa, pb])
    for p1, p2, p3 in zip(one.params, a.params, b.params, strict=True):
        assert torch.allclose(p1, p2, atol=1e-3) and torch.equal(p2, p3)


def test_updates_raise_the_probability_of_the_advantaged_action() -> None:
    s = shard()
    ids = torch.tensor([[3, 4, 5]])
    att = torch.ones_like(ids)
    before = token_logprobs(s.model, ids, att, 1.0, (5, 6))[0, -1].item()
    for _ in range(5):
        metrics = s.apply_grads([s.compute_grads(examples())])
    after = token_logprobs(s.model, ids, att, 1.0, (5, 6))[0, -1].item()
    assert after > before + 0.1
    assert metrics["tokens"] == 4.0 and "grad_norm" in metrics


def test_an_empty_share_contributes_nothing() -> None:
    s = shard()
    packet = s.compute_grads([])
    assert packet.tokens == 0.0 and not packet.flat.any()
    batch = pack_examples(examples())
    assert batch["ids"].shape == (4, 3)


def test_micro_batches_give_the_whole_minibatch_s_gradient() -> None:
    """Six examples (four of 3 tokens, one of 4, one of 5) run as four passes at a budget of 8
    padded positions; the packet is the one-pass packet: gradient, tokens and metric sums."""
    data = examples() + [
        TrainExample((3, 4, 5, 6), (False, False, True, True), (0.0, 0.0, -0.7, -0.9), 0.5),
        TrainExample((3, 4, 6, 5, 5), (False, False, True, True, True), (0.0,) + (-0.8,) * 4, -2.0),
    ]
    whole = shard().compute_grads(data)
    split = shard(TrainSpec(lr=0.05, micro_batch_tokens=8))
    passes: list[int] = []
    split.model.register_forward_hook(
        lambda _m, _a, kwargs, _o: passes.append(tuple(kwargs["input_ids"].shape)), with_kwargs=True
    )
    packet = split.compute_grads(data)
    assert passes == [(1, 5), (2, 4), (2, 3), (1, 3)]  # (rows, width): 2 x 5 > 8, 3 x 4 > 8
    assert torch.allclose(packet.flat, whole.flat, atol=1e-5)
    assert packet.tokens == whole.tokens == 9.0
    # the metrics are sums over all passes: the loss and token sums of the batch in one piece
    batch = pack_examples(data)
    with torch.no_grad():
        new = token_logprobs(split.model, batch["ids"], batch["attention"], 1.0, (5, 6))
    loss, metrics = grpo_loss(new, batch["old"], batch["adv"], batch["mask"], 0.2)
    expect = {"loss": loss.item()} | {k: v * 9.0 for k, v in metrics.items() if k != "tokens"}
    assert packet.metrics.keys() == whole.metrics.keys() == expect.keys()
    for key, value in expect.items():
        assert abs(packet.metrics[key] - value) < 1e-5 and abs(whole.metrics[key] - value) < 1e-5
    assert packet.metrics["loss"] != 0.0 and packet.metrics["ratio"] > 0.0
    # gradients do not carry over from one call to the next
    assert torch.allclose(split.compute_grads(data).flat, packet.flat, atol=1e-6)
