"""H200 sweep of grouped 3x3 convolutions, fp16, NCHW and channels-last: which kernels cuDNN runs per channels per
group, and their time (blind round 26: RegNetY-3.2GF's 24-channel groups ran 13x slower channels-last than predicted).

    python benchmarks/studies/grouped-nhwc/sweep.py --out sweep.json

Per case: median of 20 CUDA-event-timed calls after warm-up, then (timing done) one profiled call for the kernel
names and their share of the time. cudnn.benchmark stays off (PyTorch's default, as in the eager runs).
"""

from __future__ import annotations

import argparse
import json
import statistics

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile


def timed(fn, repeats: int = 20) -> float:
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(repeats):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        out.append(a.elapsed_time(b) * 1e-3)
    return statistics.median(out)


def kernels(fn) -> list[list]:
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    by = {}
    for e in prof.key_averages():
        if e.device_time_total > 0:
            by[e.key[:120]] = by.get(e.key[:120], 0.0) + e.device_time_total
    return sorted(([k, round(v, 1)] for k, v in by.items()), key=lambda kv: -kv[1])[:4]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    cases = []
    for cpg in (1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64, 96, 128):
        for channels in (384, 768):
            if channels % cpg:
                continue
            for hw, batch in ((28, 128), (14, 128), (56, 32)):
                cases.append((cpg, channels, hw, batch))
    rows = []
    with torch.no_grad():
        for cpg, channels, hw, batch in cases:
            groups = channels // cpg
            w = torch.randn(channels, cpg, 3, 3, device="cuda", dtype=torch.float16)
            for layout in ("nchw", "nhwc"):
                x = torch.randn(batch, channels, hw, hw, device="cuda", dtype=torch.float16)
                wl = w
                if layout == "nhwc":
                    x, wl = x.to(memory_format=torch.channels_last), w.to(memory_format=torch.channels_last)

                def fn(x=x, wl=wl, groups=groups):
                    return F.conv2d(x, wl, padding=1, groups=groups)
                t = timed(fn)
                flops = 2 * batch * channels * hw * hw * cpg * 9
                rows.append({"cpg": cpg, "channels": channels, "groups": groups, "hw": hw, "batch": batch,
                             "layout": layout, "s": t, "tflops": flops / t / 1e12,
                             "bytes": 2 * batch * channels * hw * hw * 2, "kernels": kernels(fn)})
                print(json.dumps({k: rows[-1][k] for k in ("cpg", "channels", "hw", "batch", "layout", "tflops")}),
                      rows[-1]["kernels"][0][0][:70], flush=True)
    with open(args.out, "w") as f:
        json.dump({"torch": torch.__version__, "cudnn": torch.backends.cudnn.version(),
                   "gpu": torch.cuda.get_device_name(0), "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
