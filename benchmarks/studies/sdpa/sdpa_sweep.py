"""Fused attention (F.scaled_dot_product_attention) over sequence lengths, head dims and batch x heads.

Times each shape on the local CUDA GPU (contiguous fp16 inputs of shape (batch*heads, 1, L, d), CUDA events
over a CUDA-graph replay of 20 calls, median of 5) and records the kernel PyTorch picked (torch.profiler).
Small-sequence, small-head-dim attention is where mobile hybrids (MobileViT, TinyViT) are predicted up to 5x
too fast; this sweep separates the kernel's cost from the model's copies around it.

    python benchmarks/studies/sdpa/sdpa_sweep.py --out sdpa.json
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "slow-ops"))
from slow_ops_sweep import run_cases  # noqa: E402  (the sweeps' loop and result file)

from tops_advisor.probe.kit import CudaBackend, capture_graph

SHAPES = [(L, d, bh) for L in (16, 49, 64, 196, 256, 1024) for d in (32, 36, 48, 64, 128)
          for bh in (512, 4096) if L * bh <= 4096 * 1024]


def kernel_name(fn) -> str:
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    evts = [e for e in prof.key_averages() if e.device_type.name == "CUDA"]
    top = max(evts, key=lambda e: e.device_time_total, default=None)
    return (top.key[:120], len(evts)) if top else ("", 0)


def one(L: int, d: int, bh: int, backend: CudaBackend) -> dict:
    q, k, v = (torch.randn(bh, 1, L, d, device="cuda", dtype=torch.float16) for _ in range(3))
    fn = lambda: F.scaled_dot_product_attention(q, k, v)  # noqa: E731
    graph = capture_graph(fn, calls=20)
    t = backend.time(graph.replay, warmup=3, repeats=5, flush=False, warmup_s=0.2)
    name, kernels = kernel_name(fn)
    return {"L": L, "d": d, "bh": bh, "time_s": t.median_s / 20, "kernel": name, "kernels": kernels,
            "flops": 4.0 * bh * L * L * d}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    out = run_cases(args.out, "runs", one, SHAPES,
                    lambda r: f"L={r['L']:5d} d={r['d']:4d} bh={r['bh']:5d} {r['time_s'] * 1e6:9.1f} us "
                              f"{r['flops'] / r['time_s'] / 1e12:7.1f} TFLOPS  {r['kernel'][:50]}")
    print(statistics.median(r["time_s"] for r in out["runs"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
