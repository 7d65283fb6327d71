"""Measure single operators on the local CUDA GPU (graph replay), to check the roofline per operator kind.

Each primitive is a tiny nn.Module; ``benchmarks/reports/primitives_report.py`` counts the same modules and puts
the predictions beside these times. Usage on a GPU:

    python benchmarks/harness/measure_primitives.py --out primitives.json

Timing: 20 calls captured in one CUDA graph, replayed; CUDA events; median of 15 replays / 20.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from tops_advisor.validate.measure import capture_graph


class Fn(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *xs):
        return self.fn(*xs)


class Attn(nn.Module):
    def __init__(self, causal: bool):
        super().__init__()
        self.causal = causal

    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)


def primitives():
    """(name, module factory, input shapes) triples; inputs are random in the run's dtype."""
    out = []
    for b in (1, 32):
        out += [
            (f"conv7x7 3-64 224 s2 b{b}", lambda: nn.Conv2d(3, 64, 7, 2, 3, bias=False), [(b, 3, 224, 224)]),
            (f"conv3x3 64-64 56 b{b}", lambda: nn.Conv2d(64, 64, 3, 1, 1, bias=False), [(b, 64, 56, 56)]),
            (f"conv1x1 256-64 56 b{b}", lambda: nn.Conv2d(256, 64, 1, bias=False), [(b, 256, 56, 56)]),
            (f"conv1x1 64-256 56 b{b}", lambda: nn.Conv2d(64, 256, 1, bias=False), [(b, 64, 56, 56)]),
            (f"conv3x3 256-256 14 b{b}", lambda: nn.Conv2d(256, 256, 3, 1, 1, bias=False), [(b, 256, 14, 14)]),
            (f"conv3x3 512-512 7 b{b}", lambda: nn.Conv2d(512, 512, 3, 1, 1, bias=False), [(b, 512, 7, 7)]),
            (f"dwconv3x3 144 56 b{b}", lambda: nn.Conv2d(144, 144, 3, 1, 1, groups=144, bias=False),
             [(b, 144, 56, 56)]),
            (f"batchnorm 256 56 b{b}", lambda: nn.BatchNorm2d(256).eval(), [(b, 256, 56, 56)]),
            (f"relu 256x56x56 b{b}", lambda: nn.ReLU(), [(b, 256, 56, 56)]),
            (f"maxpool3x3s2 64 112 b{b}", lambda: nn.MaxPool2d(3, 2, 1), [(b, 64, 112, 112)]),
            (f"add 256x56x56 b{b}", lambda: Fn(torch.add), [(b, 256, 56, 56), (b, 256, 56, 56)]),
        ]
    for tokens in (128, 1024, 8192):
        out += [
            (f"linear 1024-4096 t{tokens}", lambda: nn.Linear(1024, 4096), [(tokens, 1024)]),
            (f"linear 4096-1024 t{tokens}", lambda: nn.Linear(4096, 1024), [(tokens, 4096)]),
            (f"linear 768-2304 t{tokens}", lambda: nn.Linear(768, 2304), [(tokens, 768)]),
            (f"layernorm 1024 t{tokens}", lambda: nn.LayerNorm(1024), [(tokens, 1024)]),
            (f"gelu 4096 t{tokens}", lambda: nn.GELU(), [(tokens, 4096)]),
            (f"softmax 16x128 t{tokens}", lambda: Fn(lambda x: torch.softmax(x, -1)), [(tokens, 16, 128)]),
        ]
    for b, h, s, d, causal in ((1, 16, 128, 64, False), (32, 16, 128, 64, False), (8, 12, 1024, 64, True),
                               (1, 32, 4096, 128, True)):
        out.append((f"sdpa b{b} h{h} s{s} d{d}{' causal' if causal else ''}", lambda c=causal: Attn(c),
                    [(b, h, s, d)] * 3))
    for mb in (1, 16, 256):
        n = mb * 2**20 // 2
        out.append((f"copy {mb}MiB", lambda: Fn(lambda x: x.clone()), [(n,)]))
    return out


def time_graph(mod, inputs, calls: int = 20, replays: int = 15) -> float:
    with torch.inference_mode():
        g = capture_graph(lambda: mod(*inputs), calls=calls)
        for _ in range(3):
            g.replay()
        times = []
        for _ in range(replays):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            g.replay()
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b) / 1e3 / calls)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--dtypes", default="fp16,fp32")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("error: no CUDA GPU", file=sys.stderr)
        return 2
    dt = {"fp16": torch.float16, "fp32": torch.float32, "bf16": torch.bfloat16}
    res = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "runs": []}
    for dtype in args.dtypes.split(","):
        for name, factory, shapes in primitives():
            torch.manual_seed(0)
            mod = factory().to("cuda", dt[dtype])
            inputs = [torch.randn(s, device="cuda", dtype=dt[dtype]) for s in shapes]
            try:
                t = time_graph(mod, inputs)
                res["runs"].append({"name": name, "dtype": dtype, "shapes": shapes, "seconds": t})
                print(f"{dtype} {name}: {t * 1e6:.2f} us", file=sys.stderr, flush=True)
            except Exception as exc:
                res["runs"].append({"name": name, "dtype": dtype, "shapes": shapes, "error": str(exc)})
    Path(args.out).write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
