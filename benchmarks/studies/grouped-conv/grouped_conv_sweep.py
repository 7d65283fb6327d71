"""Grouped 3x3 convolutions as eager PyTorch runs them (NCHW, cuDNN's heuristic choice), by channels per group,
after blind round 20: the predictor's grouped-convolution model is off by 0.3-2x depending on the group width
(benchmarks/results/library_rounds_notes.md, "Grouped convolutions in eager PyTorch"). Times each shape on the
local CUDA GPU (a CUDA graph of 10 calls, median of 5 replays) with the kernels PyTorch launched, in fp16 and
fp32 (TF32, PyTorch's default for convolutions).

``--plan eager`` (the default) runs each call eagerly before capturing it, as a model is measured: cuDNN's
execution plan is cached at the first call, and a first call under CUDA-graph capture gets another plan for
some shapes (a 448-channel, 56-per-group convolution: one kernel under capture, a loop of 8 x 4 kernels
eagerly; ``benchmarks/studies/grouped-conv/grouped_conv_context.py``). ``--plan capture`` is how ``studies/grouped-conv/h200_grouped_conv_sweep.json``
was measured. ``--grid groups`` sweeps the number of groups as well as their width.

    python benchmarks/studies/grouped-conv/grouped_conv_sweep.py --grid groups --out grouped_conv.json
"""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "slow-ops"))
from slow_ops_sweep import run_cases, timed  # noqa: E402  (the shared CUDA-event timer and sweep loop)

from tops_advisor.probe.kit import CudaBackend

# (channels per group, total channels, spatial side): RegNet/ResNeXt-like stages, the same total width where
# possible so that only the grouping changes
SHAPES = [(cpg, channels, side) for cpg in (4, 8, 16, 24, 32, 40, 48, 56, 64, 112, 128)
          for channels, side in ((448, 28), (896, 14))]
BATCHES = (8, 32, 128)
# --grid groups: (channels per group, groups, side) with at most 2048 channels, batches 8 and 64
GROUP_SHAPES = [(cpg, groups, side) for cpg in (4, 8, 16, 24, 32, 48, 56, 64, 112, 128)
                for groups in (2, 4, 8, 16, 32) if cpg * groups <= 2048 for side in (56, 14)]
GROUP_BATCHES = (8, 64)


def launches(fn) -> int:
    """Kernels (and memsets) one call launches."""
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return sum(1 for e in prof.events() if e.device_type.name == "CUDA")


def case(n: int, cpg: int, groups: int, side: int, dtype: torch.dtype, backend: CudaBackend, plan: str) -> dict:
    x = torch.randn(n, groups * cpg, side, side, device="cuda", dtype=dtype)
    w = torch.randn(groups * cpg, cpg, 3, 3, device="cuda", dtype=dtype)

    def fn():
        return F.conv2d(x, w, padding=1, groups=groups)
    if plan == "eager":
        fn()   # cuDNN picks and caches its plan here, outside capture, as in a model's eager warm-up
    t, names = timed(fn, backend)
    flops = 2.0 * n * side * side * groups * cpg * cpg * 9
    return {"n": n, "cpg": cpg, "groups": groups, "side": side, "dtype": str(dtype).removeprefix("torch."),
            "time_s": t, "tflops": flops / t / 1e12, "kernels": names, "launches": launches(fn)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--plan", choices=("eager", "capture"), default="eager")
    ap.add_argument("--grid", choices=("widths", "groups"), default="widths")
    args = ap.parse_args()
    if args.grid == "groups":
        shapes, batches = GROUP_SHAPES, GROUP_BATCHES
    else:
        shapes, batches = [(cpg, channels // cpg, side) for cpg, channels, side in SHAPES], BATCHES
    torch.backends.cudnn.benchmark = False  # PyTorch's default: cuDNN's heuristic choice, as in a model
    run_cases(args.out, "cases", functools.partial(case, plan=args.plan),
              [(n, cpg, groups, side, dtype) for dtype in (torch.float16, torch.float32) for n in batches
               for cpg, groups, side in shapes],
              lambda r: f"{r['dtype']} n={r['n']} cpg={r['cpg']} groups={r['groups']} {r['side']}: "
                        f"{r['time_s'] * 1e6:.1f} us {r['tflops']:.1f} TFLOPS {r['launches']} launches")
    return 0


if __name__ == "__main__":
    sys.exit(main())
