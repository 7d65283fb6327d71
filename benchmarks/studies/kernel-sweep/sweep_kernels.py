"""Single operators where the roofline was found wrong: measure them on a GPU, or compare with predictions.

The fifth blind round (docs/accuracy.md) left four mechanisms unexplained: 1-D convolutions (wav2vec 2.0,
Conformer), attention with a head dimension that is not a multiple of 8, plain-FP32 GEMMs with 1-200 rows, and
small convolutions at batch 1. This script times one module per case, shaped like the layers of those models,
in a CUDA graph (20 calls per replay) and eagerly, and records the kernels each call launches:

    python benchmarks/studies/kernel-sweep/sweep_kernels.py measure --out sweep.json          # on a GPU
    python benchmarks/studies/kernel-sweep/sweep_kernels.py report sweep.json                 # anywhere: predicted beside measured
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

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "harness"))  # measure_primitives
from measure_primitives import Fn, time_graph  # noqa: E402

DTYPES = {"fp16": torch.float16, "fp32": torch.float32}


class Attn(nn.Module):
    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v)


def cases() -> list[tuple[str, object, list[tuple[int, ...]]]]:
    """(name, module factory, input shapes)."""
    out = []
    for b in (1, 32):
        out += [
            # 1-D convolutions: wav2vec 2.0 feature encoder and positional conv, Whisper stem, Conformer module
            (f"conv1d 1-512 k10 s5 L16000 b{b}", lambda: nn.Conv1d(1, 512, 10, 5, bias=False), [(b, 1, 16000)]),
            (f"conv1d 512-512 k3 s2 L3199 b{b}", lambda: nn.Conv1d(512, 512, 3, 2, bias=False), [(b, 512, 3199)]),
            (f"conv1d 512-512 k2 s2 L199 b{b}", lambda: nn.Conv1d(512, 512, 2, 2, bias=False), [(b, 512, 199)]),
            (f"conv1d 768-768 k128 g16 L49 b{b}", lambda: nn.Conv1d(768, 768, 128, padding=64, groups=16),
             [(b, 768, 49)]),
            (f"conv1d 80-512 k3 L3000 b{b}", lambda: nn.Conv1d(80, 512, 3, padding=1), [(b, 80, 3000)]),
            (f"conv1d 512-512 k3 s2 L3000 b{b}", lambda: nn.Conv1d(512, 512, 3, 2, 1), [(b, 512, 3000)]),
            (f"conv1d 144-288 k1 L249 b{b}", lambda: nn.Conv1d(144, 288, 1), [(b, 144, 249)]),
            (f"conv1d dw144 k31 L249 b{b}", lambda: nn.Conv1d(144, 144, 31, padding=15, groups=144),
             [(b, 144, 249)]),
            (f"conv1d 256-256 k1 L800 b{b}", lambda: nn.Conv1d(256, 256, 1, bias=False), [(b, 256, 800)]),
            (f"conv1d dw256 k33 L800 b{b}", lambda: nn.Conv1d(256, 256, 33, padding=16, groups=256, bias=False),
             [(b, 256, 800)]),
            # the same pointwise products as 2-D convolutions and as a Linear, for comparison
            (f"conv2d 144-288 1x1 1x249 b{b}", lambda: nn.Conv2d(144, 288, 1), [(b, 144, 1, 249)]),
            (f"conv2d 256-256 1x1 1x800 b{b}", lambda: nn.Conv2d(256, 256, 1, bias=False), [(b, 256, 1, 800)]),
            # batch norm over (batch, channels, length)
            (f"batchnorm1d 144 L249 b{b}", lambda: nn.BatchNorm1d(144).eval(), [(b, 144, 249)]),
            # attention head dims: 36 (Conformer-S), 40, 32, 64
            (f"sdpa h4 s249 d36 b{b}", Attn, [(b, 4, 249, 36)] * 3),
            (f"sdpa h4 s256 d40 b{b}", Attn, [(b, 4, 256, 40)] * 3),
            (f"sdpa h4 s256 d32 b{b}", Attn, [(b, 4, 256, 32)] * 3),
            (f"sdpa h4 s256 d64 b{b}", Attn, [(b, 4, 256, 64)] * 3),
            # small convolutions (ShuffleNetV2, MobileNetV2 stages)
            (f"conv2d 58-58 1x1 28 b{b}", lambda: nn.Conv2d(58, 58, 1, bias=False), [(b, 58, 28, 28)]),
            (f"conv2d 116-116 1x1 14 b{b}", lambda: nn.Conv2d(116, 116, 1, bias=False), [(b, 116, 14, 14)]),
            (f"conv2d 232-232 1x1 7 b{b}", lambda: nn.Conv2d(232, 232, 1, bias=False), [(b, 232, 7, 7)]),
            (f"conv2d 24-144 1x1 56 b{b}", lambda: nn.Conv2d(24, 144, 1, bias=False), [(b, 24, 56, 56)]),
            (f"conv2d 320-1280 1x1 7 b{b}", lambda: nn.Conv2d(320, 1280, 1, bias=False), [(b, 320, 7, 7)]),
        ]
    # plain-FP32-sized GEMMs (DeiT-S / BERT rows) and GEMVs (classifier heads at batch 1)
    for t in (1, 8, 197):
        out += [
            (f"linear 384-1152 t{t}", lambda: nn.Linear(384, 1152), [(t, 384)]),
            (f"linear 384-1536 t{t}", lambda: nn.Linear(384, 1536), [(t, 384)]),
            (f"linear 1536-384 t{t}", lambda: nn.Linear(1536, 384), [(t, 1536)]),
            (f"linear 1024-1000 t{t}", lambda: nn.Linear(1024, 1000), [(t, 1024)]),
            (f"linear 768-3072 t{t}", lambda: nn.Linear(768, 3072), [(t, 768)]),
        ]
    out.append(("bmm 6x197x64x197", lambda: Fn(torch.bmm), [(6, 197, 64), (6, 64, 197)]))
    out.append(("bmm 96x197x64x197", lambda: Fn(torch.bmm), [(96, 197, 64), (96, 64, 197)]))
    return out


def time_eager(mod, inputs, calls: int = 20, repeats: int = 7) -> float:
    times = []
    with torch.inference_mode():
        for _ in range(3):
            mod(*inputs)
        torch.cuda.synchronize()
        for _ in range(repeats):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            for _ in range(calls):
                mod(*inputs)
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b) / 1e3 / calls)
    return statistics.median(times)


def kernels(mod, inputs) -> list[list]:
    """[name, microseconds] of every kernel one eager call launches (after warm-up)."""
    from torch.profiler import ProfilerActivity, profile

    with torch.inference_mode():
        mod(*inputs)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            mod(*inputs)
            torch.cuda.synchronize()
    return [[e.name[:140], round(e.time_range.elapsed_us(), 3)]
            for e in prof.events() if e.device_type.name == "CUDA"]


def measure(args) -> int:
    if not torch.cuda.is_available():
        print("error: no CUDA GPU found; `measure` runs on a GPU", file=sys.stderr)
        return 2
    from tops_advisor.validate.measure import environment

    res = {"environment": environment("cuda"), "runs": []}
    for dtype in args.dtypes.split(","):
        for name, factory, shapes in cases():
            torch.manual_seed(0)
            run = {"name": name, "dtype": dtype, "shapes": shapes}
            try:
                mod = factory().to("cuda", DTYPES[dtype]).eval()
                inputs = [torch.randn(s, device="cuda", dtype=DTYPES[dtype]) for s in shapes]
                run["graph_s"] = time_graph(mod, inputs)
                run["eager_s"] = time_eager(mod, inputs)
                run["kernels"] = kernels(mod, inputs)
            except Exception as exc:  # record and go on
                run["error"] = f"{type(exc).__name__}: {exc}"[:300]
            res["runs"].append(run)
            print(f"{dtype} {name}: " + (run.get("error") or f"graph {run['graph_s'] * 1e6:.1f} us, eager "
                  f"{run['eager_s'] * 1e6:.1f} us, {len(run['kernels'])} kernels"), file=sys.stderr, flush=True)
    Path(args.out).write_text(json.dumps(res, indent=1))
    return 0


def report(args) -> int:
    from tops_advisor.api import calibration_for, load_catalog
    from tops_advisor.counting import count_module
    from tops_advisor.roofline import device_perf, predict

    res = json.loads(Path(args.results).read_text())
    hw = load_catalog().get(args.hardware or res["environment"]["gpu"])
    cal, source = calibration_for(hw)
    perf = device_perf(hw, cal, source)
    factories = {name: f for name, f, _ in cases()}
    print(f"{hw.id}, calibration: {source or 'none'}; graph mode, per call")
    print(f"{'case':36s} {'dtype':5s} {'measured':>9s} {'eager':>9s} {'predicted':>9s} {'error':>6s}  kernels")
    for run in res["runs"]:
        if "error" in run:
            print(f"{run['name']:36s} {run['dtype']:5s} {run['error']}")
            continue
        mod = factories[run["name"]]()
        inputs = [torch.randn(s, device="meta") for s in run["shapes"]]
        w = count_module(mod.to("meta"), tuple(inputs), run["dtype"])
        p = predict(w, hw, mode="graph", perf=perf)
        t = run["graph_s"]
        names = ", ".join(k[0].split("<")[0].split("(")[0][-38:] for k in run["kernels"][:3])
        print(f"{run['name']:36s} {run['dtype']:5s} {t * 1e6:7.1f}us {run['eager_s'] * 1e6:7.1f}us "
              f"{p.latency_s * 1e6:7.1f}us {p.latency_s / t - 1:+6.0%}  {len(run['kernels'])}: {names}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("measure", help="time each case on the local CUDA GPU, in a CUDA graph and eagerly")
    m.add_argument("--out", required=True)
    m.add_argument("--dtypes", default="fp16,fp32")
    r = sub.add_parser("report", help="put measured times beside the predictions")
    r.add_argument("results")
    r.add_argument("--hardware", default=None)
    args = ap.parse_args()
    return measure(args) if args.cmd == "measure" else report(args)


if __name__ == "__main__":
    sys.exit(main())
