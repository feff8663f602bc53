"""Step 1 of design/rlsched_packing.md: the packed form, its byte count and its checks."""

import pytest
import torch

from rlsched.packing import PackedBatch, _check_batch, _check_packed


def trajectory(length: int) -> dict[str, torch.Tensor]:
    return {
        "input_ids": torch.arange(length, dtype=torch.int64),
        "logprobs": torch.full((length,), -0.5),
        "loss_mask": torch.ones(length, dtype=torch.bool),
    }


def test_a_packed_batch_knows_its_lengths_and_bytes() -> None:
    packed = PackedBatch(
        {"ids": torch.arange(7), "mask": torch.ones(7, 2, dtype=torch.bool)},
        torch.tensor([0, 3, 3, 7]),
    )
    assert packed.lengths == [3, 0, 4]
    assert packed.nbytes == 7 * 8 + 7 * 2 * 1 + 4 * 8


def test_a_valid_batch_yields_its_lengths() -> None:
    assert _check_batch([trajectory(3), trajectory(0), trajectory(5)]) == [3, 0, 5]
    two_d = [{"h": torch.zeros(4, 3)}, {"h": torch.zeros(1, 3)}]
    assert _check_batch(two_d) == [4, 1]


@pytest.mark.parametrize(
    ("batch", "error", "message"),
    [
        ([], ValueError, "trajectories"),
        ([{}], ValueError, "first"),
        (
            [trajectory(3), {"input_ids": torch.arange(3)}],
            ValueError,
            r"trajectory 1: fields differ from trajectory 0 \(missing \['logprobs', 'loss_mask'\]",
        ),
        (
            [trajectory(3), {**trajectory(3), "values": torch.zeros(3)}],
            ValueError,
            r"extra \['values'\]",
        ),
        (
            [trajectory(3), {**trajectory(3), "logprobs": [0.1, 0.2, 0.3]}],
            TypeError,
            "trajectory 1, field 'logprobs': expected a tensor",
        ),
        (
            [{**trajectory(3), "logprobs": torch.tensor(0.5)}],
            TypeError,
            "trajectory 0, field 'logprobs'",
        ),
        (
            [
                trajectory(2),
                trajectory(3),
                {**trajectory(4), "loss_mask": torch.ones(3, dtype=torch.bool)},
            ],
            ValueError,
            "trajectory 2, field 'loss_mask': 3 positions, but field 'input_ids' has 4",
        ),
        (
            [trajectory(2), {**trajectory(2), "logprobs": torch.zeros(2, dtype=torch.float16)}],
            ValueError,
            "trajectory 1, field 'logprobs': dtype, device, trailing shape .*float16.*float32",
        ),
        (
            [{"h": torch.zeros(4, 3)}, {"h": torch.zeros(4, 2)}],
            ValueError,
            r"trajectory 1, field 'h'.*\(2,\).*\(3,\)",
        ),
    ],
)
def test_a_bad_batch_is_refused_naming_the_trajectory_and_the_field(batch, error, message) -> None:
    with pytest.raises(error, match=message):
        _check_batch(batch)


def test_a_damaged_packed_batch_is_refused() -> None:
    good = PackedBatch({"ids": torch.arange(5)}, torch.tensor([0, 2, 5]))
    _check_packed(good)
    for cu, message in [
        (torch.tensor([0.0, 2.0, 5.0]), "cu_seqlens.dtype"),
        (torch.tensor([[0, 2, 5]]), "cu_seqlens.dim"),
        (torch.tensor([0]), "len\\(cu\\)"),
        (torch.tensor([1, 2, 5]), "cu\\[0\\]"),
        (torch.tensor([0, 3, 2, 5]), "ascending"),
        (torch.tensor([0, 2, 6]), "field 'ids': 5 positions, but cu_seqlens ends at 6"),
    ]:
        with pytest.raises(ValueError, match=message):
            _check_packed(PackedBatch({"ids": torch.arange(5)}, cu))
