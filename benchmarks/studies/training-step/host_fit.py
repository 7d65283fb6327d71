"""Fit the eager training step's host costs (tops_advisor/train/defaults.py) to the H200 training points.

Counts every eager and checkpointed point of h200_train_points.json (compile points left out: their host work
is inductor's), predicts each with the roofline's device times, and fits the four host costs of
``TrainingDefaults`` by coordinate descent on the median and mean |log error| of the step time. Prints the fit,
the per-point errors with it and with the defaults in the package, and the memory errors.

    python benchmarks/studies/training-step/host_fit.py [--cache /tmp/train_steps.pkl]
"""

from __future__ import annotations

import argparse
import json
import pickle
import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np

from tops_advisor.api import calibration_for
from tops_advisor.catalog import load_catalog
from tops_advisor.roofline import device_perf
from tops_advisor.roofline.defaults.base import Default
from tops_advisor.train import TrainSetup
from tops_advisor.train.defaults import TRAINING_DEFAULTS
from tops_advisor.train.predict import predict_training

HERE = Path(__file__).parent
FIELDS = ("forward_grad_op_s", "backward_node_s", "optimizer_tensor_s", "optimizer_launch_s")


def points() -> list[dict]:
    pts = json.loads((HERE / "h200_train_points.json").read_text())["points"]
    return [p for p in pts if p["mode"] in ("eager", "ckpt") and not p.get("error")]


def count_all(pts: list[dict], cache: Path | None) -> list:
    from tops_advisor.counting.training import count_training

    if cache and cache.exists():
        return pickle.loads(cache.read_bytes())
    steps = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for p in pts:
            setup = TrainSetup(p["precision"], p["optimizer"], checkpointing=p["mode"] == "ckpt")
            steps.append(count_training(p["model"], p["batch"], setup))
    if cache:
        cache.write_bytes(pickle.dumps(steps))
    return steps


def errors(steps, pts, hw, td) -> np.ndarray:
    """log(predicted / measured) step time of every point, with host costs ``td`` (reference-host seconds)."""
    perf = device_perf(hw, *calibration_for(hw))    # the shipped H200 calibration: the machine's host scale
    return np.array([np.log(predict_training(tw, hw, perf=perf, training_defaults=td).step_s / p["step_s"])
                     for tw, p in zip(steps, pts, strict=True)])


def with_values(values: dict[str, float]):
    return replace(TRAINING_DEFAULTS, **{k: Default(v, "fit") for k, v in values.items()})


def loss(e: np.ndarray) -> float:
    return float(np.median(np.abs(e)) + np.mean(np.abs(e)))


def fit(steps, pts, hw) -> dict[str, float]:
    values = {k: getattr(TRAINING_DEFAULTS, k).value for k in FIELDS}
    best = loss(errors(steps, pts, hw, with_values(values)))
    for _round in range(3):
        for k in FIELDS:
            for factor in (0.25, 0.5, 0.7, 0.85, 1.2, 1.4, 2.0, 4.0):
                trial = dict(values, **{k: values[k] * factor})
                score = loss(errors(steps, pts, hw, with_values(trial)))
                if score < best:
                    best, values = score, trial
    return values


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", type=Path, help="pickle of the counted steps (made if missing)")
    ap.add_argument("--no-fit", action="store_true", help="only score the package's defaults")
    args = ap.parse_args()
    pts = points()
    steps = count_all(pts, args.cache)
    hw = load_catalog().get("h200-sxm")
    base = errors(steps, pts, hw, TRAINING_DEFAULTS)
    print(f"package defaults: median |error| {np.median(np.abs(np.expm1(base))):.1%}, "
          f"worst {np.max(np.abs(np.expm1(base))):.1%}")
    if not args.no_fit:
        values = fit(steps, pts, hw)
        e = errors(steps, pts, hw, with_values(values))
        print("fit (reference host: the H200 calibration's host scale is applied in predict_training):")
        for k, v in values.items():
            print(f"  {k}: {v * 1e6:.2f} us")
        print(f"fit: median |error| {np.median(np.abs(np.expm1(e))):.1%}, worst {np.max(np.abs(np.expm1(e))):.1%}")
    for tw, p, err in zip(steps, pts, base, strict=True):
        mem = tw.memory.peak_bytes / p["peak_bytes"] - 1
        print(f"{p['model'][:26]:26s} b{p['batch']:<5}{p['precision']:9s}{p['optimizer']:12s}{p['mode']:6s}"
              f"step {np.expm1(err):+6.1%}  peak memory {mem:+6.1%}")


if __name__ == "__main__":
    main()
