"""Capacity planning with the Python API: how many devices of each kind serve a total rate, and what does the
fleet cost?

    python examples/scripts/capacity_plan.py examples/resnet50.py --rate 50000 --latency 10ms
    python examples/scripts/capacity_plan.py examples/resnet50.py --rate 50000 --buy --prices my.toml

Counts the model once, then for every catalog device finds the best operating point under the latency target
and the replicas that reach the total rate, and ranks the fleets by cost (tops_advisor.recommend, ranked by
cost: the same answer as `tops-advisor recommend MODEL --throughput RATE --rank-by cost`). Prints a table;
--json for machines.
"""

from __future__ import annotations

import argparse
import json
import sys

from tops_advisor.api import ModelCosts, calibration_for, load_catalog, load_pricing
from tops_advisor.errors import TopsAdvisorError
from tops_advisor.recommend import AUTO_DTYPES, Constraints, RecommendResult, recommend
from tops_advisor.units import parse_latency_s


def plan(model: str, rate_per_s: float, latency_s: float | None = None, dtype: str = "auto", rent: bool = True,
         prices: str | None = None) -> RecommendResult:
    """The fleets that serve ``rate_per_s`` samples/s, cheapest first, rented or bought (``rent``)."""
    catalog = load_catalog()
    c = Constraints(latency_s=latency_s, throughput_per_s=rate_per_s, rank_by="cost",
                    dtypes=AUTO_DTYPES if dtype == "auto" else (dtype,), price_kind="rental" if rent else "purchase")
    return recommend(ModelCosts(model).at, list(catalog), c, calibration_of=calibration_for,
                     pricing=load_pricing(catalog, prices))


def rows(result: RecommendResult) -> list[dict]:
    return [{"hardware": r.hardware, "devices": r.replicas, "dtype": r.dtype, "batch": r.batch,
             "latency_ms": r.latency_s * 1e3, "per_device_per_s": r.throughput_per_s,
             "total_power_kw": r.replicas * r.tdp_w / 1e3, "usd_per_hour": r.usd_per_hour,
             "usd_per_million": r.usd_per_million, "price": r.price_source, "price_date": r.price_date}
            for r in result.recommendations]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("--rate", type=float, required=True, help="total samples/s to serve")
    ap.add_argument("--latency", help="per-batch latency target, e.g. 10ms")
    ap.add_argument("--dtype", default="auto")
    ap.add_argument("--buy", action="store_true", help="buy the cards (default: rent them)")
    ap.add_argument("--prices", help="your own prices (a TOML file of [device-id] tables)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    try:
        result = plan(args.model, args.rate, parse_latency_s(args.latency) if args.latency else None, args.dtype,
                      rent=not args.buy, prices=args.prices)
    except TopsAdvisorError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({"fleets": rows(result), "no_price": [r.model_dump() for r in result.no_price]}, indent=2))
        return 0
    print(f"{'device':16s} {'devices':>7s} {'dtype':>5s} {'batch':>5s} {'per device/s':>12s} {'kW':>6s} "
          f"{'USD/h':>8s} {'USD/M':>8s}")
    for r in rows(result):
        print(f"{r['hardware']:16s} {r['devices']:7d} {r['dtype']:>5s} {r['batch']:5d} {r['per_device_per_s']:12,.0f} "
              f"{r['total_power_kw']:6.1f} {r['usd_per_hour']:8.2f} {r['usd_per_million']:8.4f}")
    for r in result.no_price:
        print(f"{r.hardware}: {r.reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
