"""Compiled (torch.compile + CUDA graph) and autocast predictions beside measurements from
``benchmarks/harness/compiled_measure.py`` (no GPU needed here): per (model, batch, dtype) the measured and predicted
latency of ``graph`` and ``compiled`` mode, the kernels counted and launched, and the errors.

    python benchmarks/reports/compiled_accuracy.py benchmarks/results/h200_compiled.json [--json out.json]

Error = (predicted - measured) / measured; calibrated with the shipped H200 calibration.
"""

from __future__ import annotations

import argparse
import json
import statistics
import warnings

from tops_advisor.api import calibration_for, load_catalog
from tops_advisor.counting import count, load_model
from tops_advisor.counting.capture import captured_for
from tops_advisor.counting.lowering import lowering_for
from tops_advisor.roofline import device_perf, predict


def row(rec: dict, hw, perf) -> dict:
    source = load_model(rec["model"])
    out = {k: rec[k] for k in ("model", "batch", "dtype")}
    for mode in ("graph", "compiled"):
        w = count(source, batch=rec["batch"], dtype=rec["dtype"], lowering=lowering_for(mode), captured=captured_for(mode))
        p = predict(w, hw, mode=mode, perf=perf)
        measured = rec[f"{mode}_s"]
        out[f"{mode}_measured_ms"] = measured * 1e3
        out[f"{mode}_predicted_ms"] = p.latency_s * 1e3
        out[f"{mode}_error"] = p.latency_s / measured - 1
        out[f"{mode}_kernels_predicted"] = w.kernels
    out["compiled_kernels_measured"] = rec.get("compiled_kernels")
    out["eager_kernels_measured"] = rec.get("eager_kernels")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("--json")
    ap.add_argument("--only", help="comma-separated model specs")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    doc = json.load(open(args.results))
    hw = load_catalog().get("h200-sxm")
    perf = device_perf(hw, *calibration_for(hw))
    rows = []
    for rec in doc["runs"]:
        if "error" in rec or (args.only and rec["model"] not in args.only.split(",")):
            continue
        r = row(rec, hw, perf)
        rows.append(r)
        print(f"{r['model']:32s} b{r['batch']:<3d} {r['dtype']:4s} graph {r['graph_measured_ms']:7.3f} "
              f"pred {r['graph_predicted_ms']:7.3f} ({r['graph_error']:+.0%})  compiled "
              f"{r['compiled_measured_ms']:7.3f} pred {r['compiled_predicted_ms']:7.3f} ({r['compiled_error']:+.0%})"
              f"  kernels {r['compiled_kernels_measured']}/{r['compiled_kernels_predicted']}", flush=True)
    for mode in ("graph", "compiled"):
        errs = [abs(r[f"{mode}_error"]) for r in rows]
        if errs:
            print(f"{mode}: median |error| {statistics.median(errs):.1%}, worst {max(errs):.1%} over {len(errs)}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"results": args.results, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
