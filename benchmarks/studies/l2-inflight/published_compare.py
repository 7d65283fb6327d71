"""Two runs of the published scorer (benchmarks/reports/published_score.py --json) side by side: median |error| per
card, and every row that moved by more than half a point.

    python benchmarks/studies/l2-inflight/published_compare.py BEFORE.json AFTER.json
"""

from __future__ import annotations

import json
import statistics
import sys


def key(r: dict) -> tuple:
    return r["source"], r["card"], r["workload"], r["batch"], r["precision"], r["run"], r["detail"]


def main(before_path: str, after_path: str) -> None:
    before = {key(r): r for r in json.load(open(before_path))["records"] if r["error"] is not None}
    after = {key(r): r for r in json.load(open(after_path))["records"] if r["error"] is not None}
    print("per card: median |error| before -> after")
    for card in sorted({k[1] for k in before}):
        e0 = [abs(r["error"]) for k, r in before.items() if k[1] == card]
        e1 = [abs(r["error"]) for k, r in after.items() if k[1] == card]
        print(f"  {card:18s} n={len(e0):3d} {statistics.median(e0):6.1%} -> {statistics.median(e1):6.1%}")
    e0 = [abs(r["error"]) for r in before.values()]
    e1 = [abs(r["error"]) for r in after.values()]
    print(f"  all n={len(e0)} {statistics.median(e0):.1%} -> {statistics.median(e1):.1%}")
    moved = sorted(k for k in before if k in after and abs(after[k]["error"] - before[k]["error"]) > 0.005)
    print(f"rows that moved: {len(moved)}")
    for k in moved:
        print(f"  {k[1]:15s} {k[2]:28s} b{k[3]:<4} {k[4]:5s} {k[5]:8s} "
              f"{before[k]['error']:+7.1%} -> {after[k]['error']:+7.1%}")


if __name__ == "__main__":
    main(*sys.argv[1:3])
