"""What sets the idle time between kernels of a CUDA-graph replay: chains of one kernel kind at several sizes.

``benchmarks/studies/graph-gaps/graph_gaps.py`` found the idle time between kernels to be a level per replay (about 0.1, 0.27 or
0.42 us on the H200), not per kernel kind. This replays chains of 200 kernels, each chain one pattern (in-place
add; add then a small matrix product; add then a cuDNN 3x3 convolution) at tensor sizes from 1 K to 16 M
elements, and records from a profiled replay each chain's median kernel duration and median idle gap, with the
unprofiled replay time per kernel. Runs on a CUDA GPU; JSON on stdout:

    python benchmarks/studies/graph-gaps/graph_gap_sweep.py > sweep.json
"""

from __future__ import annotations

import json
import statistics
import sys

import torch
from graph_gaps import gaps, kernels_of_replays, replay_us

from tops_advisor.validate.measure import capture_graph, environment

CHAIN = 200
SIZES = (1 << 10, 1 << 14, 1 << 17, 1 << 20, 1 << 24)


def chain(pattern: str, n: int):
    """A function launching CHAIN kernels of ``pattern`` on fp16 tensors of ``n`` elements."""
    x = torch.randn(n, device="cuda", dtype=torch.float16)
    side = int(max(8, min(512, n ** 0.5)))
    a = torch.randn(side, side, device="cuda", dtype=torch.float16)
    c = int(max(4, min(64, (n / 4096) ** 0.5)))
    img = torch.randn(1, c, 64, 64, device="cuda", dtype=torch.float16)
    conv = torch.nn.Conv2d(c, c, 3, padding=1).cuda().half()

    def run():
        for i in range(CHAIN):
            if pattern == "add" or i % 2 == 0:
                x.add_(1.0)
            elif pattern == "add+mm":
                torch.mm(a, a)
            else:
                conv(img)
    return run


def one(pattern: str, n: int) -> dict:
    with torch.inference_mode():
        graph = capture_graph(chain(pattern, n))
        graph_us = replay_us(graph, warmup=3)
        ks = gaps(kernels_of_replays(graph, 3)[-1])
    return {"pattern": pattern, "elements": n, "kernels": len(ks),
            "graph_us_per_kernel": graph_us / len(ks),
            "median_dur_us": statistics.median(k["dur_us"] for k in ks),
            "median_gap_us": statistics.median(k["gap_us"] for k in ks[1:]),
            "mean_gap_us": statistics.mean(k["gap_us"] for k in ks[1:])}


def main() -> int:
    rows = []
    for pattern in ("add", "add+mm", "add+conv"):
        for n in SIZES:
            rows.append(one(pattern, n))
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    print(json.dumps({"environment": environment("cuda"), "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
