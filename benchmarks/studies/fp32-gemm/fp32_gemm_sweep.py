"""Plain-FP32 Linear layers (cuBLAS SIMT kernels, PyTorch's default without TF32 matmuls) of the sizes small
transformers run at batch 1: 49-1024 rows by the projection and MLP shapes of hidden 256-1024. After blind round
19, whose one point over 40% was XtremeDistil (hidden 256, 128 tokens) in fp32 at batch 1, predicted 47% slow.
Times each shape on the local CUDA GPU (a CUDA graph of 10 calls, median of 5 replays; each call run eagerly
first) with the kernels it launched.

    python benchmarks/studies/fp32-gemm/fp32_gemm_sweep.py --out fp32_gemm.json
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "slow-ops"))
from slow_ops_sweep import run_cases, timed  # noqa: E402  (the shared CUDA-event timer and sweep loop)

from tops_advisor.probe.kit import CudaBackend

ROWS = (49, 128, 197, 256, 384, 512, 1024)
# (out features, in features): Q/K/V/O, fused QKV and the MLP of hidden 256, 384, 512, 768 and 1024
SHAPES = [(h, h) for h in (256, 384, 512, 768, 1024)] + [(3 * h, h) for h in (384, 768)] \
    + [(4 * h, h) for h in (256, 384, 512, 768, 1024)] + [(h, 4 * h) for h in (256, 384, 512, 768, 1024)]


def linear_case(m: int, n: int, k: int, backend: CudaBackend) -> dict:
    x = torch.randn(m, k, device="cuda")
    w = torch.randn(n, k, device="cuda")
    b = torch.randn(n, device="cuda")

    def fn():
        return F.linear(x, w, b)
    fn()
    t, names = timed(fn, backend)
    return {"m": m, "n": n, "k": k, "time_s": t, "tflops": 2.0 * m * n * k / t / 1e12, "kernels": names}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    run_cases(args.out, "cases", linear_case, [(m, n, k) for m in ROWS for n, k in SHAPES],
              lambda r: f"m={r['m']} n={r['n']} k={r['k']}: {r['time_s'] * 1e6:.1f} us {r['tflops']:.2f} TFLOPS "
                        f"{[s[:40] for s in r['kernels']]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
