"""Per-operator prediction error against the per-operator device times of ``profile_records.py``.

Counts each measured model on the meta device (as ``tops-advisor analyze`` does), predicts every operator in
graph mode, lines the counted operators up with the measured calls (by operator name, in order), and reports
the error of the predicted kernel time (without the gap between kernels) by operator kind, shape class and
batch. Runs on the CPU:

    python benchmarks/reports/op_accuracy.py benchmarks/results/h200_records.json.gz --out docs/reports/op-accuracy.md

Runs whose summed kernel time is far from the CUDA-graph latency (the profiled forward took another kernel
path than the replayed one) are reported and left out.
"""

from __future__ import annotations

import argparse
import difflib
import gzip
import json
import statistics
import sys
import warnings
from collections import defaultdict
from pathlib import Path

import numpy as np

from tops_advisor.calibration import load_calibration
from tops_advisor.catalog import load_catalog
from tops_advisor.counting import count
from tops_advisor.counting.handles import ZERO_COST
from tops_advisor.roofline.defaults import DEFAULTS
from tops_advisor.roofline.device import device_perf
from tops_advisor.roofline.predict import predict

ROOT = Path(__file__).resolve().parents[2]
CONSISTENT = (0.5, 1.15)    # kernel sum / graph latency for a run to be used


def op_class(op) -> str:
    """A finer label than the kind: what mechanism the predictor uses for it."""
    if op.kind == "conv" and op.gemm is not None:
        if op.gemm.n <= DEFAULTS.depthwise_max_channels_per_group.value and op.gemm.batch > 1:
            return "conv depthwise"
        if op.gemm.batch > 1:
            return "conv grouped"
        return "conv"
    if op.strided:
        return f"{op.kind} strided"
    return op.kind


# Operators the GPU dispatches under another name than the meta-device count records.
GPU_NAMES = {"aten.cudnn_batch_norm": "aten.native_batch_norm"}


def aligned(run: dict, workload) -> list[tuple[int, float, int]]:
    """(counted op index, measured us, measured kernels) for every call matched by name, in order."""
    measured = [o for o in run["ops"] if o[0] not in ZERO_COST]
    counted = [o.name for o in workload.ops]
    sm = difflib.SequenceMatcher(a=[GPU_NAMES.get(o[0], o[0]) for o in measured], b=counted, autojunk=False)
    out = []
    for block in sm.get_matching_blocks():
        for j in range(block.size):
            m = measured[block.a + j]
            out.append((block.b + j, m[1], m[2]))
    return out


def collect(records: dict, hw, cal) -> tuple[list[dict], list[str]]:
    perf = device_perf(hw, cal, "shipped calibration")
    rows, skipped = [], []
    for run in records["runs"]:
        if "error" in run:
            continue
        name = Path(run["model"]).stem
        ratio = run["kernels_us"] * 1e-6 / run["graph_s"]
        if not CONSISTENT[0] <= ratio <= CONSISTENT[1]:
            skipped.append(f"{name} {run['dtype']} b{run['batch']} (kernels {ratio:.2f}x the graph latency)")
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            spec = run["model"] if ":" in run["model"] else ROOT / run["model"]  # a library spec or a file
        w = count(spec, run["batch"], run["dtype"])
        pred = predict(w, hw, mode="graph", perf=perf)
        a = pred._arrays
        # kernel time: the predicted device time less the gaps between kernels
        work = a["device"] - np.array([o.kernels for o in w.ops]) * perf.kernel_gap_s
        for i, us, kernels in aligned(run, w):
            op = w.ops[i]
            if us <= 0 and op.kernels == 0:
                continue
            rows.append({"model": name, "dtype": run["dtype"], "batch": run["batch"], "op": op.name,
                         "class": op_class(op), "kind": op.kind, "measured_us": us, "kernels": kernels,
                         "predicted_us": float(work[i]) * 1e6, "predicted_kernels": op.kernels,
                         "bound": ("compute", "memory", "overhead")[int(a["bound"][i])],
                         "flops": op.flops, "bytes": op.bytes,
                         "gemm": [op.gemm.m, op.gemm.n, op.gemm.k, op.gemm.batch] if op.gemm else None})
    return rows, skipped


def table(rows: list[dict], key) -> list[str]:
    groups = defaultdict(list)
    for r in rows:
        groups[key(r)].append(r)
    out = ["| group | ops | measured ms | predicted ms | sum error | median op error | middle 80% of op errors |",
           "|---|---:|---:|---:|---:|---:|---|"]
    for g, rs in sorted(groups.items(), key=lambda kv: -sum(r["measured_us"] for r in kv[1])):
        meas = sum(r["measured_us"] for r in rs)
        pred = sum(r["predicted_us"] for r in rs)
        errs = [r["predicted_us"] / r["measured_us"] - 1 for r in rs if r["measured_us"] > 0]
        lo, hi = (np.percentile(errs, [10, 90]) if errs else (0, 0))
        out.append(f"| {g} | {len(rs)} | {meas / 1e3:.2f} | {pred / 1e3:.2f} | {pred / meas - 1:+.0%} | "
                   f"{statistics.median(errs):+.0%} | {lo:+.0%} .. {hi:+.0%} |")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("records", nargs="+")
    ap.add_argument("--hardware", default="h200-sxm")
    ap.add_argument("--calibration", default=str(ROOT / "hardware_db/calibrations/h200-sxm.json"))
    ap.add_argument("--rows", help="also write the per-operator rows (JSON) here")
    ap.add_argument("--out", help="markdown report (default: stdout)")
    args = ap.parse_args()
    hw = load_catalog().get(args.hardware)
    cal = load_calibration(args.calibration)
    rows, skipped = [], []
    env = None
    for path in args.records:
        records = json.load(gzip.open(path, "rt"))
        env = records["environment"]
        r, s = collect(records, hw, cal)
        rows += r
        skipped += s
    if args.rows:
        Path(args.rows).write_text(json.dumps(rows))
    lines = ["# Per-operator accuracy", "",
             "Generated by `benchmarks/reports/op_accuracy.py` from per-operator device times measured by "
             "`benchmarks/harness/profile_records.py`; do not edit by hand.", "",
             f"- Measured on {env.get('gpu')}, torch {env.get('torch')}, cuDNN {env.get('cudnn')}: "
             f"`{env.get('command')}`",
             f"- Predicted for `{args.hardware}` with the shipped calibration, graph mode. Times are kernel "
             "time per operator call (the gap between kernels is reported separately); error = predicted / "
             "measured - 1.",
             f"- Left out (profiled forward inconsistent with the graph replay): {'; '.join(skipped) or 'none'}",
             "", "## By operator class", "", *table(rows, lambda r: r["class"]),
             "", "## By class and dtype", "", *table(rows, lambda r: f"{r['class']} {r['dtype']}"),
             "", "## By class and batch", "", *table(rows, lambda r: f"{r['class']} b{r['batch']}"),
             "", "## By model", "", *table(rows, lambda r: r["model"]), ""]
    text = "\n".join(lines)
    if args.out:
        Path(args.out).write_text(text)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
