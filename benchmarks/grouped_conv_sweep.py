"""Grouped 3x3 convolutions as eager PyTorch runs them (NCHW, cuDNN's heuristic choice), by channels per group,
after blind round 20: the predictor's grouped-convolution model is off by 0.3-2x depending on the group width
(benchmarks/results/library_rounds_notes.md, "Grouped convolutions in eager PyTorch"). Times each shape on the
local CUDA GPU (a CUDA graph of 10 calls, median of 5 replays) with the kernels PyTorch launched, in fp16 and
fp32 (TF32, PyTorch's default for convolutions).

    python benchmarks/grouped_conv_sweep.py --out grouped_conv.json
"""

from __future__ import annotations

import argparse
import json
import sys

import torch
import torch.nn.functional as F
from slow_ops_sweep import timed

from tops_advisor.probe.kit import CudaBackend, environment

# (channels per group, total channels, spatial side): RegNet/ResNeXt-like stages, the same total width where
# possible so that only the grouping changes
SHAPES = [(cpg, channels, side) for cpg in (4, 8, 16, 24, 32, 40, 48, 56, 64, 112, 128)
          for channels, side in ((448, 28), (896, 14))]
BATCHES = (8, 32, 128)


def case(n: int, cpg: int, channels: int, side: int, dtype: torch.dtype, backend: CudaBackend) -> dict:
    groups = channels // cpg
    x = torch.randn(n, groups * cpg, side, side, device="cuda", dtype=dtype)
    w = torch.randn(groups * cpg, cpg, 3, 3, device="cuda", dtype=dtype)
    t, names = timed(lambda: F.conv2d(x, w, padding=1, groups=groups), backend)
    flops = 2.0 * n * side * side * groups * cpg * cpg * 9
    return {"n": n, "cpg": cpg, "groups": groups, "side": side, "dtype": str(dtype).removeprefix("torch."),
            "time_s": t, "tflops": flops / t / 1e12, "kernels": names}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    torch.backends.cudnn.benchmark = False  # PyTorch's default: cuDNN's heuristic choice, as in a model
    backend = CudaBackend()
    out = {"environment": environment("cuda", command="python " + " ".join(sys.argv)), "cases": []}
    with torch.inference_mode():
        for dtype in (torch.float16, torch.float32):
            for n in BATCHES:
                for cpg, channels, side in SHAPES:
                    r = case(n, cpg, channels, side, dtype, backend)
                    out["cases"].append(r)
                    print(f"{r['dtype']} n={n} cpg={cpg} groups={r['groups']} {side}: {r['time_s'] * 1e6:.1f} us "
                          f"{r['tflops']:.1f} TFLOPS {r['kernels'][:1]}", file=sys.stderr)
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
