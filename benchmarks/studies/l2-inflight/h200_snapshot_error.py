"""H200 calibrated predictions of two prediction snapshots (benchmarks/prediction_snapshot.py write) against every
measured model-file run whose (model, dtype, batch) the snapshot has: median |error| before and after, graph and
eager, and the runs that moved most.

    python benchmarks/studies/l2-inflight/h200_snapshot_error.py BEFORE.json AFTER.json
"""

from __future__ import annotations

import glob
import json
import statistics
import sys

MEASURED = ["benchmarks/results/h200_models.json", "benchmarks/results/h200_heldout_fp16.json",
            "benchmarks/results/h200_heldout_fp32.json", *sorted(glob.glob("benchmarks/rounds/round-0*/measured/*.json"))]


def measured_runs() -> dict[tuple, float]:
    """(model stem, dtype, batch, mode) -> measured seconds, from every file holding a list of runs."""
    rows = {}
    for path in MEASURED:
        try:
            runs = json.load(open(path)).get("runs")
        except (OSError, ValueError, AttributeError):
            continue
        for r in runs if isinstance(runs, list) else []:
            if not isinstance(r, dict) or "model" not in r:
                continue
            stem = r["model"].split("/")[-1].removesuffix(".py")
            for mode in ("graph", "eager"):
                if r.get(f"{mode}_s"):
                    rows[(stem, r["dtype"], r["batch"], mode)] = r[f"{mode}_s"]
    return rows


def main(before_path: str, after_path: str) -> None:
    before, after = json.load(open(before_path)), json.load(open(after_path))
    errors = {"graph": ([], []), "eager": ([], [])}
    moved = []
    for (stem, dtype, batch, mode), seconds in measured_runs().items():
        key = f"{stem}|{dtype}|{batch}|h200-sxm|calibrated|{mode}"
        if key not in before:
            continue
        e0, e1 = before[key]["latency_s"] / seconds - 1, after[key]["latency_s"] / seconds - 1
        errors[mode][0].append(abs(e0))
        errors[mode][1].append(abs(e1))
        if abs(e1 - e0) > 0.005:
            moved.append((abs(e1) - abs(e0), key, e0, e1))
    for mode, (e0, e1) in errors.items():
        print(f"{mode} {len(e0)} runs: median |err| {statistics.median(e0):.2%} -> {statistics.median(e1):.2%}")
    moved.sort()
    print(f"moved by > 0.5 points: {len(moved)}, closer: {sum(1 for m in moved if m[0] < 0)}")
    for _, key, e0, e1 in moved[:8] + moved[-8:]:
        print(f"  {key:60s} {e0:+.1%} -> {e1:+.1%}")


if __name__ == "__main__":
    main(*sys.argv[1:3])
