"""Grouped and depthwise convolutions of compiled (inductor, channels-last) forwards, kernel by kernel: each
cuDNN NHWC depthwise kernel (``conv2d_c1_k1_nhwc_specialized``, ``depthwise_convolution``; a two-kernel
launch counts as one) and grouped implicit-GEMM kernel (``..._g<N>_...`` with N > 1) of a measured
``compiled_kernel_list`` is matched, in order, to its counted convolution; prints measured and predicted
time and the rates behind ``RooflineDefaults.depthwise_channels_last_vector_factor`` and
``grouped_channels_last_tile_channels`` (no GPU needed).

    python benchmarks/studies/compiled-conv-kernels/compiled_conv_kernels.py benchmarks/results/h200_compiled.json \
        benchmarks/results/h200_compiled_run2.json --only timm:mobilenetv2_100,timm:convnext_tiny

Kernel times exclude the gap between kernels; predictions include it (0.75 us on the H200).
"""

from __future__ import annotations

import argparse
import json
import re
import warnings

from tops_advisor.api import calibration_for, load_catalog
from tops_advisor.counting import count, load_model
from tops_advisor.counting.lowering import lowering_for
from tops_advisor.roofline import device_perf, predict

_GROUPED = re.compile(r"implicit_gemm.*_g(\d+)_")


def conv_kernels(kernels: list) -> tuple[list[float], list[float]]:
    """(depthwise, grouped) kernel times in order, microseconds."""
    depthwise, grouped, pending = [], [], None
    for name, us in kernels:
        if "c1_k1_nhwc" in name:
            depthwise.append(us)
        elif "depthwise_convolution" in name:   # cuDNN's tiled depthwise: a short set-up kernel, then the work
            if pending is None:
                pending = us
            else:
                depthwise.append(pending + us)
                pending = None
        elif (m := _GROUPED.search(name)) and int(m.group(1)) > 1:
            grouped.append(us)
    return depthwise, grouped


def report(rec: dict, hw, perf) -> None:
    w = count(load_model(rec["model"]), batch=rec["batch"], dtype=rec["dtype"], lowering=lowering_for("compiled"), captured=True)
    p = predict(w, hw, mode="compiled", perf=perf)
    convs = [(o, op) for o, op in zip(w.ops, p.ops, strict=True) if o.kind == "conv" and o.gemm.batch > 1]
    d = perf.defaults
    dw = [c for c in convs if c[0].gemm.n <= d.depthwise_max_channels_per_group.value]
    grouped = [c for c in convs if c[0].gemm.n > d.depthwise_max_channels_per_group.value]
    floor_s = perf.kind_floor_s["depthwise"]
    for label, ops, times in (("depthwise", dw, conv_kernels(rec["compiled_kernel_list"])[0]),
                              ("grouped", grouped, conv_kernels(rec["compiled_kernel_list"])[1])):
        if not ops:
            continue
        print(f"{rec['model']} b{rec['batch']} {rec['dtype']}: {len(times)} {label} kernels, {len(ops)} counted")
        if len(times) != len(ops):
            continue
        for (o, op), us in zip(ops, times, strict=True):
            g = o.gemm
            print(f"  {o.module:30s} {g.batch:4d} groups x {g.n} ch, window {g.window:2d}: {us:6.1f} us measured, "
                  f"{op.latency_s * 1e6:6.1f} predicted; {o.bytes / 1e6:6.2f} MB, {o.flops / 1e9:.3f} GFLOP")
        if label == "depthwise":
            busy_s = sum(us * 1e-6 - floor_s for us in times)
            print(f"  after the {floor_s * 1e6:.1f} us floor: {sum(o.bytes for o, _ in ops) / busy_s / 1e9:,.0f} GB/s "
                  f"({sum(o.bytes for o, _ in ops) / busy_s / perf.bandwidth_bytes_per_s:.2f} of the copy bandwidth), "
                  f"{sum(o.flops for o, _ in ops) / busy_s / 1e12:.1f} TFLOPS "
                  f"({sum(o.flops for o, _ in ops) / busy_s / perf.vector_ops_per_s:.2f} of the vector rate)")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("results", nargs="+")
    ap.add_argument("--only", help="comma-separated model specs")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    hw = load_catalog().get("h200-sxm")
    perf = device_perf(hw, *calibration_for(hw))
    for path in args.results:
        for rec in json.load(open(path))["runs"]:
            if "compiled_kernel_list" in rec and (not args.only or rec["model"] in args.only.split(",")):
                report(rec, hw, perf)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
