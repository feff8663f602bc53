"""Step 3 of design/rlsched_trainer.md: exports, checkpoints and parking."""

import pytest
import torch

from rlsched.model import ModelSpec, build_model
from rlsched.trainer.grpo import TrainExample, TrainSpec
from rlsched.trainer.shard import TrainerShard

SPEC = ModelSpec(hidden_size=16, heads=2, kv_heads=1, intermediate_size=32)
DATA = [
    TrainExample((3, 4, 5), (False, False, True), (0.0, 0.0, -0.7), 1.0),
    TrainExample((3, 4, 6), (False, False, True), (0.0, 0.0, -0.7), -1.0),
]


def test_a_checkpoint_makes_a_replica_that_stays_one() -> None:
    a = TrainerShard(build_model(SPEC, 10), TrainSpec(lr=0.05))
    b = TrainerShard(build_model(SPEC, 10), TrainSpec(lr=0.05))
    a.apply_grads([a.compute_grads(DATA)])
    a.version = 1
    b.load_checkpoint(a.checkpoint())
    assert b.version == 1
    for step in range(2):
        a.apply_grads([a.compute_grads(DATA)])
        b.apply_grads([b.compute_grads(DATA)])
    for name, tensor in a.weights().items():
        assert torch.allclose(tensor, b.weights()[name], atol=1e-6), name
    with pytest.raises(ValueError, match="VAL_KEYS_PRESENT"):
        b.load_checkpoint({"weights": {}})


def test_exported_weights_are_copies_and_parking_keeps_state() -> None:
    a = TrainerShard(build_model(SPEC, 10), TrainSpec())
    exported = a.weights()
    name, tensor = next(iter(exported.items()))
    tensor.add_(1.0)
    assert not torch.equal(dict(a.model.named_parameters())[name].detach(), tensor)
    a.park()
    a.unpark()
    assert all(p.device.type == "cpu" for p in a.params)


def test_the_memory_switch_moves_everything_and_changes_nothing() -> None:
    """RL-Fusion switching (0.2.0): parking moves parameters, reference model, Adam moments
    and any gradient to fresh host storage and releases the old; training after a round trip
    is bit-identical to training without one; a parked shard refuses to work."""
    spec = TrainSpec(lr=0.05, kl_coef=0.1)
    a = TrainerShard(build_model(SPEC, 10), spec)
    b = TrainerShard(build_model(SPEC, 10), spec)
    for shard in (a, b):
        shard.apply_grads([shard.compute_grads(DATA)])  # Adam moments exist from here
    a.compute_grads(DATA)  # and a gradient, left in place
    n_params = sum(p.numel() for p in a.params)
    storage = [p.data.data_ptr() for p in a.params]
    parked = a.park()
    assert parked.direction == "park" and a.parked
    # policy + reference parameters + gradient + two Adam moments, float32
    assert parked.bytes == 4 * n_params * 5 and parked.seconds > 0
    assert all(p.numel() == 0 for p in a.params)  # device storage released
    assert a.park().bytes == 0  # a no-op when parked
    for call in (lambda: a.compute_grads(DATA), a.weights, a.checkpoint):
        with pytest.raises(AssertionError, match="not self.parked"):
            call()
    unparked = a.unpark()
    assert unparked.bytes == parked.bytes and not a.parked and a.unpark().bytes == 0
    assert [p.data.data_ptr() for p in a.params] != storage  # fresh storage
    assert all(p.grad is not None for p in a.params)
    a.optimizer.zero_grad(set_to_none=True)
    for _ in range(2):
        a.park()
        a.unpark()
        for shard in (a, b):
            shard.apply_grads([shard.compute_grads(DATA)])
    for name, tensor in a.weights().items():
        assert torch.equal(tensor, b.weights()[name]), name
