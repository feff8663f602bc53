"""RL-Fusion memory switching: what a trainer shard's park and unpark move, and how long they take.

A shard (rlsched.trainer.shard.TrainerShard) parks its training state (policy parameters, the
reference model when `--kl` is given, Adam's two moments) in host memory while its device rolls
out, and unparks it for a training step. This benchmark builds shards of growing size, takes one
Adam step (so the moments exist), then times `--runs` park/unpark round trips and reports the
median of each, the bytes moved and the rate.

On a CPU the switch is a host-to-host copy into fresh storage plus the release of the old (the
same allocation and copy work as on a GPU, minus the PCIe transfer); on a CUDA device it is
device -> pinned host -> device and the figures are the real switch time.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run from a checkout

import torch

from rlsched.model import ModelSpec, build_model
from rlsched.trainer.grpo import TrainExample, TrainSpec
from rlsched.trainer.shard import TrainerShard

SIZES = {  # name: (hidden, layers, intermediate)
    "bundled sizes": (64, 2, 128),
    "small": (512, 8, 2048),
    "medium": (1024, 16, 4096),
}
VOCAB = 1024
DATA = [TrainExample((3, 4, 5, 6), (False, True, True, True), (-1.0, -1.0, -1.0, -1.0), 1.0)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--kl", action="store_true", help="with a reference model (KL term)")
    parser.add_argument("--sizes", nargs="*", default=list(SIZES), choices=list(SIZES))
    args = parser.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.set_num_threads(1)
    print(
        f"device {device}; median of {args.runs} round trips; torch {torch.__version__}, "
        f"1 thread, Python {platform.python_version()} on {platform.machine()}"
    )
    print()
    print("| model | parameters | moved per switch | unpark | park | unpark rate |")
    print("|---|---|---|---|---|---|")
    for name in args.sizes:
        hidden, layers, inter = SIZES[name]
        spec = ModelSpec(
            hidden_size=hidden,
            layers=layers,
            heads=max(1, hidden // 64),
            kv_heads=max(1, hidden // 128),
            intermediate_size=inter,
        )
        shard = TrainerShard(
            build_model(spec, VOCAB), TrainSpec(kl_coef=0.1 if args.kl else 0.0), device=device
        )
        shard.apply_grads([shard.compute_grads(DATA)])  # Adam's moments exist from here
        parks, unparks = [], []
        for _ in range(args.runs):
            parks.append(shard.park())
            unparks.append(shard.unpark())
        moved = parks[0].bytes
        assert all(s.bytes == moved for s in parks + unparks)
        park_s = statistics.median(s.seconds for s in parks)
        unpark_s = statistics.median(s.seconds for s in unparks)
        params = sum(p.numel() for p in shard.params)
        print(
            f"| {name} | {params / 1e6:.2f} M | {moved / 2**20:,.1f} MiB | "
            f"{unpark_s * 1e3:.2f} ms | {park_s * 1e3:.2f} ms | "
            f"{moved / unpark_s / 1e9:.1f} GB/s |"
        )


if __name__ == "__main__":
    main()
