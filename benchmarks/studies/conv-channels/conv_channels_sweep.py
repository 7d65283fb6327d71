"""fp16 convolutions whose channels are not tensor-core sized, after blind round 11's misses: 3-channel stems of
other windows than the stem sweep's (AlexNet's 11x11/4, patch embeddings), and 3x3 convolutions with 12-144
channels (HRNet-W18's 18- and 36-channel branches). Times each shape on the local CUDA GPU, NCHW as eager
PyTorch runs it (a CUDA graph of 10 calls, median of 5 replays), with the kernels PyTorch launched.

    python benchmarks/studies/conv-channels/conv_channels_sweep.py --out conv_channels.json
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "slow-ops"))
from slow_ops_sweep import new_result, timed, write_result  # noqa: E402  (the shared CUDA-event timer)

from tops_advisor.probe.kit import CudaBackend

STEMS = [(n, 3, cout, k, s, side) for n in (8, 128) for cout, k, s, side in
         ((64, 11, 4, 224), (32, 3, 1, 224), (32, 5, 2, 224), (48, 7, 2, 224), (768, 16, 16, 224),
          (384, 14, 14, 224), (64, 8, 8, 256))]
NARROW = [(n, c, side) for n in (1, 32) for c, side in
          ((12, 56), (16, 56), (18, 56), (20, 56), (24, 56), (36, 28), (40, 28), (72, 14), (144, 7))]


def conv_case(n: int, cin: int, cout: int, k: int, s: int, side: int, backend: CudaBackend) -> dict:
    x = torch.randn(n, cin, side, side, device="cuda", dtype=torch.float16)
    w = torch.randn(cout, cin, k, k, device="cuda", dtype=torch.float16)
    pad = k // 2 if s < k else 0
    t, names = timed(lambda: F.conv2d(x, w, stride=s, padding=pad), backend)
    return {"n": n, "cin": cin, "cout": cout, "k": k, "stride": s, "padding": pad, "side": side, "time_s": t,
            "kernels": names}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    torch.backends.cudnn.benchmark = False  # PyTorch's default: cuDNN's heuristic choice, as in a model
    backend = CudaBackend()
    out = new_result("stems", "narrow")
    with torch.inference_mode():
        for n, cin, cout, k, s, side in STEMS:
            out["stems"].append(conv_case(n, cin, cout, k, s, side, backend))
        for n, c, side in NARROW:
            out["narrow"].append(conv_case(n, c, c, 3, 1, side, backend))
    write_result(args.out, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
