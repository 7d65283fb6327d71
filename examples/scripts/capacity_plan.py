"""Capacity planning with the Python API: how many devices of each kind serve a target load?

    python examples/scripts/capacity_plan.py examples/resnet50.py --rate 20000 --latency 10ms

Counts the model once, then for every catalog device finds the best batch under the latency target
(tops_advisor.recommend), and turns throughput per device into a device count and total power for the
requested aggregate rate. Prints a table; --json for machines.
"""

from __future__ import annotations

import argparse
import json
import math
import sys

from tops_advisor.api import ModelCosts, calibration_for, load_catalog
from tops_advisor.errors import TopsAdvisorError
from tops_advisor.recommend import Constraints, recommend
from tops_advisor.units import parse_latency_s


def plan(model: str, rate_per_s: float, latency_s: float, dtype: str = "fp16") -> list[dict]:
    costs = ModelCosts(model)
    result = recommend(costs.at, list(load_catalog()), Constraints(latency_s=latency_s, dtypes=(dtype,)),
                       calibration_of=calibration_for)
    rows = []
    for r in result.recommendations:
        n = math.ceil(rate_per_s / r.throughput_per_s)
        rows.append({"hardware": r.hardware, "batch": r.batch, "latency_ms": r.latency_s * 1e3,
                     "per_device_per_s": r.throughput_per_s, "devices": n, "total_power_kw": n * r.tdp_w / 1e3,
                     "calibrated": r.calibrated})
    return sorted(rows, key=lambda row: row["total_power_kw"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("--rate", type=float, required=True, help="aggregate samples/s to serve")
    ap.add_argument("--latency", default="10ms", help="per-batch latency target, e.g. 10ms")
    ap.add_argument("--dtype", default="fp16")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    try:
        rows = plan(args.model, args.rate, parse_latency_s(args.latency), args.dtype)
    except TopsAdvisorError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(f"{'device':22s} {'batch':>5s} {'latency':>9s} {'per device/s':>13s} {'devices':>8s} {'power kW':>9s}")
    for r in rows:
        print(f"{r['hardware']:22s} {r['batch']:5d} {r['latency_ms']:7.2f}ms {r['per_device_per_s']:13,.0f} "
              f"{r['devices']:8d} {r['total_power_kw']:9.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
