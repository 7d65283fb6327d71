"""Predicted vs measured time of single operators (from benchmarks/harness/measure_primitives.py) on one device.

    python benchmarks/reports/primitives_report.py benchmarks/results/h200_primitives.json [--no-calibration]

Counts each primitive module with the counter and predicts it in graph mode; prints one line per primitive.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "harness"))  # measure_primitives
from measure_primitives import primitives  # noqa: E402

from tops_advisor.api import calibration_for, load_catalog  # noqa: E402
from tops_advisor.counting import count_module  # noqa: E402
from tops_advisor.roofline import device_perf, predict  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("results", type=Path)
    ap.add_argument("--hardware", default=None)
    ap.add_argument("--no-calibration", action="store_true")
    args = ap.parse_args()
    res = json.loads(args.results.read_text())
    hw = load_catalog().get(args.hardware or res["gpu"])
    cal, source = calibration_for(hw, use=not args.no_calibration)
    perf = device_perf(hw, cal, source)
    factories = {name: (f, shapes) for name, f, shapes in primitives()}
    dt = {"fp16": torch.float16, "fp32": torch.float32, "bf16": torch.bfloat16}
    errs = []
    print(f"{hw.id}, calibration: {source or 'none'}")
    print(f"{'primitive':40s} {'dtype':5s} {'measured':>10s} {'predicted':>10s} {'error':>7s}  bound")
    for run in res["runs"]:
        if "seconds" not in run:
            continue
        factory, shapes = factories[run["name"]]
        mod = factory().to(dt[run["dtype"]])
        inputs = tuple(torch.empty(s, dtype=dt[run["dtype"]]) for s in shapes)
        w = count_module(mod, inputs, run["dtype"], name=run["name"])
        p = predict(w, hw, perf=perf)
        err = (p.latency_s - run["seconds"]) / run["seconds"]
        errs.append(abs(err))
        print(f"{run['name']:40s} {run['dtype']:5s} {run['seconds'] * 1e6:9.2f}u {p.latency_s * 1e6:9.2f}u "
              f"{err:+7.0%}  {p.bound}")
    print(f"median |error| {statistics.median(errs):.0%}, worst {max(errs):.0%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
