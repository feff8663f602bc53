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
