"""Packed transfer: bytes moved packed vs padded, and pack/unpack time, for long-tailed batches.

Batch: `--batch` trajectories with lognormal lengths (median `--median` tokens, each sigma of
`--sigmas`), cut to [16, 65536] (the seed's 64K-token limit). Fields per token: input_ids
(int64), logprobs and advantages (float32), loss_mask (bool): 17 bytes a position. The padded
form pads every field to the longest trajectory and carries the int64 lengths; the packed form
concatenates along the sequence axis and carries cu_seqlens. Byte counts are exact
(`PackedBatch.nbytes`, `padded_nbytes`; the padded batch is priced, not allocated). Times are
medians of `--runs` on this CPU. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout

import torch

from rlsched.packing import pack, padded_nbytes, unpack


def batch_of(lengths: list[int]) -> list[dict[str, torch.Tensor]]:
    return [
        {
            "input_ids": torch.randint(0, 150_000, (n,), dtype=torch.int64),
            "logprobs": -torch.rand(n),
            "advantages": torch.full((n,), 0.5),
            "loss_mask": torch.ones(n, dtype=torch.bool),
        }
        for n in lengths
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--median", type=int, default=4096)
    parser.add_argument("--sigmas", type=float, nargs="+", default=[0.5, 1.0, 1.5])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    generator = torch.Generator().manual_seed(0)
    print(
        f"{args.batch} trajectories, lognormal lengths (median {args.median}) cut to [16, 65536]; "
        f"17 bytes a position; median of {args.runs} runs; torch {torch.__version__}, "
        f"Python {platform.python_version()} on {platform.machine()} (cpu)"
    )
    print()
    print("| sigma | mean / p99 / max length | packed | padded | saving | pack | unpack |")
    print("|---|---|---|---|---|---|---|")
    for sigma in args.sigmas:
        mu = torch.log(torch.tensor(float(args.median)))
        raw = torch.exp(mu + sigma * torch.randn(args.batch, generator=generator))
        lengths = raw.round().clamp(16, 65536).long()
        batch = batch_of(lengths.tolist())
        pack_s, unpack_s = [], []
        for _ in range(args.runs):
            start = time.perf_counter()
            packed = pack(batch)
            pack_s.append(time.perf_counter() - start)
            start = time.perf_counter()
            back = unpack(packed)
            unpack_s.append(time.perf_counter() - start)
        if not all(
            torch.equal(b["logprobs"], a["logprobs"]) for a, b in zip(batch, back, strict=True)
        ):
            raise SystemExit("round trip failed")
        padded = padded_nbytes(batch)
        p99 = int(lengths.float().quantile(0.99))
        print(
            f"| {sigma} | {lengths.float().mean():.0f} / {p99} / {int(lengths.max())} | "
            f"{packed.nbytes / 2**20:.1f} MiB | {padded / 2**20:.1f} MiB | "
            f"{1 - packed.nbytes / padded:.1%} | {statistics.median(pack_s) * 1000:.1f} ms | "
            f"{statistics.median(unpack_s) * 1000:.2f} ms |"
        )


if __name__ == "__main__":
    main()
