"""Does vLLM's CPU matmul path grow memory when batch sizes repeat?  (Where the soak's worker growth is not.)

vLLM gives every linear layer on CPU its own oneDNN handler with a cache of 32 primitives, one per batch size
(rows) seen.  This builds SmolLM2-135M's 120 linear shapes as such handlers, runs ``--sizes`` distinct batch sizes
(more than the cache holds) through every one of them ``--cycles`` times, and prints the process's RSS growth after
each cycle.  Growth that stops after the first cycle is a bounded cache or allocator high-water mark; growth in
every cycle would be a leak.  Run it once as is and once with ``LD_PRELOAD`` naming tcmalloc to compare allocators:

    python bench/onednn_memory.py --label glibc
    LD_PRELOAD=/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 python bench/onednn_memory.py --label tcmalloc
"""

from __future__ import annotations

import argparse

import psutil
import torch

SMOLLM2_LINEAR = [(576, 3072), (1536, 576), (576, 1728), (576, 576)]
"""(in, out) of SmolLM2-135M's gate_up, down, qkv and o projections; 30 layers of each."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--label", default="default")
    parser.add_argument("--sizes", type=int, default=64, help="distinct batch sizes (rows), 1, 5, 9, ...")
    parser.add_argument("--cycles", type=int, default=5)
    args = parser.parse_args()
    from vllm import _custom_ops as ops

    process = psutil.Process()
    torch.manual_seed(0)
    handlers = [
        (ops.create_onednn_mm(torch.randn(out, inp).t(), 32), inp) for _ in range(30) for inp, out in SMOLLM2_LINEAR
    ]
    sizes = [1 + 4 * i for i in range(args.sizes)]
    base = process.memory_info().rss
    for cycle in range(args.cycles):
        for rows in sizes:
            for handler, inp in handlers:
                ops.onednn_mm(handler, torch.randn(rows, inp), None)
        grown = (process.memory_info().rss - base) / 2**20
        print(f"{args.label}: cycle {cycle}: RSS +{grown:.0f} MB", flush=True)


if __name__ == "__main__":
    main()
