"""Which algorithm cuDNN runs for fp32 convolutions PyTorch lets it run in TF32, with and without
``cudnn.benchmark``: time per convolution and the kernel names (torch.profiler), for the shapes of ResNet-50 and
VGG16 (NCHW, batch 64). Checks the assumption of ``rates.conv.fp32_simt_rate`` that a card whose TF32 peak is
many times its FP32 peak (here the H200: 494.5 vs 66.9 TFLOPS) keeps the TF32 implicit GEMM.

    python benchmarks/studies/fp32-conv-algo/measure.py --out $OUT/fp32_conv_algo.json
"""

from __future__ import annotations

import argparse
import json

import torch

SHAPES = [  # (in channels, out channels, kernel, stride, H=W), batch 64
    (64, 64, 3, 1, 56), (128, 128, 3, 1, 28), (256, 256, 3, 1, 14), (512, 512, 3, 1, 7),
    (64, 256, 1, 1, 56), (512, 2048, 1, 1, 7), (256, 256, 3, 1, 56), (512, 512, 3, 1, 28),
]


def time_conv(conv: torch.nn.Module, x: torch.Tensor, repeats: int = 20) -> float:
    for _ in range(3):
        conv(x)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(repeats):
        conv(x)
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / repeats * 1e-3


def kernels(conv: torch.nn.Module, x: torch.Tensor) -> list[str]:
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        conv(x)
        torch.cuda.synchronize()
    return sorted({e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA})


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    torch.backends.cudnn.allow_tf32 = True
    rows = []
    for cin, cout, k, s, hw in SHAPES:
        x = torch.randn(64, cin, hw, hw, device="cuda")
        flops = 2.0 * 64 * cout * (hw // s) ** 2 * cin * k * k
        for bench in (False, True):
            torch.backends.cudnn.benchmark = bench
            conv = torch.nn.Conv2d(cin, cout, k, s, k // 2, bias=False).cuda().eval()
            with torch.no_grad():
                t = time_conv(conv, x)
                names = kernels(conv, x)
            rows.append({"cin": cin, "cout": cout, "k": k, "stride": s, "hw": hw, "benchmark": bench,
                         "seconds": t, "tflops": flops / t / 1e12, "kernels": names})
            print(cin, cout, k, hw, bench, f"{flops / t / 1e12:.1f} TFLOPS", [n[:60] for n in names])
    out = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
           "cudnn": torch.backends.cudnn.version(), "rows": rows}
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
