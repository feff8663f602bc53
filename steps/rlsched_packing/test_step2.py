"""Step 2 of design/rlsched_packing.md: the exact round trip and the byte counts."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.nn.utils.rnn import pad_sequence

from rlsched.packing import pack, padded_nbytes, unpack

torch.set_num_threads(1)  # many tiny tensors: one thread is fastest on a shared 2-core machine

DTYPES = [
    torch.int64,
    torch.int32,
    torch.uint8,
    torch.bool,
    torch.float32,
    torch.float16,
    torch.bfloat16,
    torch.float64,
]


def values(length: int, dtype: torch.dtype, trailing: tuple[int, ...], seed: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    shape = (length, *trailing)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=generator).bool()
    if dtype.is_floating_point:
        return torch.randn(shape, generator=generator).to(dtype)
    return torch.randint(0, 100, shape, generator=generator).to(dtype)


@st.composite
def batches(draw: st.DrawFn) -> list[dict[str, torch.Tensor]]:
    names = draw(
        st.lists(
            st.sampled_from(["input_ids", "logprobs", "advantages", "loss_mask", "h"]),
            min_size=1,
            max_size=4,
            unique=True,
        )
    )
    kinds = {
        name: (draw(st.sampled_from(DTYPES)), draw(st.sampled_from([(), (2,), (3, 2)])))
        for name in names
    }
    lengths = draw(st.lists(st.integers(0, 40), min_size=1, max_size=8))
    return [
        {
            name: values(length, dtype, trailing, seed=31 * i + j)
            for j, (name, (dtype, trailing)) in enumerate(kinds.items())
        }
        for i, length in enumerate(lengths)
    ]


@settings(max_examples=60, deadline=None)
@given(batches())
def test_unpack_gives_back_exactly_what_was_packed(batch: list[dict[str, torch.Tensor]]) -> None:
    copies = [{name: t.clone() for name, t in trajectory.items()} for trajectory in batch]
    packed = pack(batch)
    lengths = [next(iter(trajectory.values())).shape[0] for trajectory in batch]
    assert packed.cu_seqlens.tolist() == [sum(lengths[:i]) for i in range(len(lengths) + 1)]
    back = unpack(packed)
    assert len(back) == len(batch)
    for original, restored in zip(copies, back, strict=True):
        assert list(restored) == list(original)
        for name in original:
            assert restored[name].dtype == original[name].dtype
            assert torch.equal(restored[name], original[name])
    for original, given_batch in zip(copies, batch, strict=True):  # the input is not changed
        assert all(torch.equal(given_batch[name], original[name]) for name in original)
    # bytes: the packed form is the real positions plus cu_seqlens ...
    real = sum(t.nbytes for trajectory in batch for t in trajectory.values())
    assert packed.nbytes == real + 8 * (len(batch) + 1)
    # ... the padded form is what pad_sequence builds, plus the lengths
    padded = sum(
        pad_sequence([t[name] for t in batch], batch_first=True).nbytes for name in batch[0]
    )
    assert padded_nbytes(batch) == padded + 8 * len(batch)


def test_a_long_tailed_batch_packs_into_a_fraction_of_the_padded_bytes() -> None:
    lengths = [10] * 15 + [1000]
    batch = [
        {"input_ids": torch.zeros(n, dtype=torch.int64), "logprobs": torch.zeros(n)}
        for n in lengths
    ]
    packed = pack(batch)
    assert packed.nbytes == 1150 * 12 + 17 * 8
    assert padded_nbytes(batch) == 16 * 1000 * 12 + 16 * 8
    assert packed.nbytes < 0.08 * padded_nbytes(batch)


def test_a_bad_batch_builds_nothing() -> None:
    good = {"input_ids": torch.arange(3), "logprobs": torch.zeros(3)}
    with pytest.raises(ValueError, match="trajectory 1, field 'logprobs': 2 positions"):
        pack([good, {"input_ids": torch.arange(3), "logprobs": torch.zeros(2)}])
    with pytest.raises(ValueError, match="trajectories"):
        padded_nbytes([])
