"""Fit the eager host cost per operator, per nn.Module call and per Python call from ``host_cost.py`` results.

No GPU needed: each measured model is counted here (operators that launch, module calls and the model's own
Python calls, ``counting/pycalls.py``; use the library versions the measurement used), then host seconds
are fitted by least squares on relative error. Prints the coefficients, the error by source, and the fit
without Python calls for comparison:

    python benchmarks/studies/host-cost-fit/host_cost_fit.py benchmarks/results/h200_host_cost_b1.json \
        --skip hf:benchmarks/configs/whisper-tiny.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import warnings

import numpy as np

from tops_advisor.counting import count, load_model


def rows_of(results: dict, skip: set[str]) -> list[dict]:
    rows = []
    for r in results["runs"]:
        if "error" in r or r["model"] in skip:
            continue
        w = count(load_model(r["model"]), batch=r["batch"], dtype=r["dtype"])
        rows.append({"model": r["model"], "host_s": r["host_s"], "ops": r["kernel_ops"],
                     "module_calls": w.module_calls, "python_calls": w.python_calls,
                     "empty_module_calls": w.empty_module_calls,
                     "working_module_calls": w.module_calls - w.empty_module_calls})
    return rows


def fit(rows: list[dict], columns: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    x = np.array([[r[c] for c in columns] for r in rows], dtype=float)
    y = np.array([r["host_s"] for r in rows])
    coef, *_ = np.linalg.lstsq(x / y[:, None], np.ones_like(y), rcond=None)
    return coef, x @ coef / y - 1


def report(rows: list[dict], columns: tuple[str, ...]) -> None:
    coef, err = fit(rows, columns)
    terms = ", ".join(f"{c} {v * 1e6:.2f} us" for c, v in zip(columns, coef, strict=True))
    print(f"{terms}: median {np.median(abs(err)):.1%}, p90 {np.percentile(abs(err), 90):.1%}, "
          f"worst {abs(err).max():.1%}")
    for source in ("examples/", "timm:", "torchvision:", "hf:"):
        errs = [abs(e) for r, e in zip(rows, err, strict=True) if r["model"].startswith(source)]
        if errs:
            print(f"  {source:13s} n={len(errs):2d} median {statistics.median(errs):.1%}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results")
    ap.add_argument("--skip", default="", help="comma-separated models to leave out")
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    with open(args.results) as f:
        rows = rows_of(json.load(f), set(filter(None, args.skip.split(","))))
    report(rows, ("ops", "module_calls", "python_calls"))
    report(rows, ("ops", "working_module_calls", "empty_module_calls", "python_calls"))
    report(rows, ("ops", "module_calls"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
