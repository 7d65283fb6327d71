"""Fit the eager training step's host costs (tops_advisor/train/defaults.py) to the H200 training points.

Counts every eager and checkpointed point of h200_train_points.json (compile points left out: their host work
is inductor's), predicts each with the roofline's device times, and fits the four host costs of
``TrainingDefaults`` by coordinate descent on the median and mean |log error| of the step time. Prints the fit,
the per-point errors with it and with the defaults in the package, and the memory errors.

    python benchmarks/studies/training-step/host_fit.py [--cache /tmp/train_steps.pkl] [--points FILE ...]

``--points`` adds measured points of other runs (a train_measure.py ``train_points.json``, e.g. the scored blind
rounds' ``benchmarks/rounds/train-0N/measured/train_points.json``) to the study's.
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
from tops_advisor.train.defaults import TRAINING_DEFAULTS, workspace_bytes
from tops_advisor.train.predict import predict_training

HERE = Path(__file__).parent
FIELDS = ("forward_grad_op_s", "backward_node_s", "optimizer_tensor_s", "optimizer_launch_s")


def points(extra: tuple[Path, ...] = ()) -> list[dict]:
    pts = []
    for path in (HERE / "h200_train_points.json", *extra):
        pts += json.loads(path.read_text())["points"]
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


PARTS = ("step_s", "forward_s", "backward_s", "optimizer_s")


def part_errors(steps, pts, hw, td) -> np.ndarray:
    """log(predicted / measured) of the step and each part (points x 4), with host costs ``td``."""
    perf = device_perf(hw, *calibration_for(hw))    # the shipped H200 calibration: the machine's host scale
    rows = []
    for tw, p in zip(steps, pts, strict=True):
        pred = predict_training(tw, hw, perf=perf, training_defaults=td)
        rows.append([np.log(max(getattr(pred, k), 1e-9) / p[k]) for k in PARTS])
    return np.array(rows)


def errors(steps, pts, hw, td) -> np.ndarray:
    """log(predicted / measured) step time of every point."""
    return part_errors(steps, pts, hw, td)[:, 0]


def with_values(values: dict[str, float]):
    return replace(TRAINING_DEFAULTS, **{k: Default(v, "fit") for k, v in values.items()})


def loss(e: np.ndarray) -> float:
    """Median plus mean |log error| of the step, and of each part at half weight."""
    a = np.abs(e)
    return float(np.median(a[:, 0]) + a[:, 0].mean() + 0.5 * (np.median(a[:, 1:], 0) + a[:, 1:].mean(0)).sum())


def fit(steps, pts, hw) -> dict[str, float]:
    values = {k: getattr(TRAINING_DEFAULTS, k).value for k in FIELDS}
    best = loss(part_errors(steps, pts, hw, with_values(values)))
    for _round in range(4):
        for k in FIELDS:
            for factor in (0.1, 0.3, 0.5, 0.7, 0.85, 0.93, 1.07, 1.2, 1.4, 2.0, 3.0, 10.0):
                trial = dict(values, **{k: max(values[k], 1e-7) * factor})
                score = loss(part_errors(steps, pts, hw, with_values(trial)))
                if score < best:
                    best, values = score, trial
    return values


def fit_checkpoint_hook(steps, pts, hw) -> float:
    """``checkpoint_hook_s`` alone, over the checkpointed points: the value with the least mean |log error| of
    the step on a grid (the other host costs as in the package)."""
    ckpt = [i for i, p in enumerate(pts) if p["mode"] == "ckpt"]
    sub_steps, sub_pts = [steps[i] for i in ckpt], [pts[i] for i in ckpt]
    grid = [v * 1e-6 for v in (0, 5, 10, 20, 30, 40, 50, 60, 70, 80, 100, 120)]
    scores = {v: float(np.abs(errors(sub_steps, sub_pts, hw, with_values({"checkpoint_hook_s": v}))).mean())
              for v in grid}
    for v, score in scores.items():
        print(f"  checkpoint_hook_s {v * 1e6:5.1f} us: mean |log error| {score:.3f} over {len(ckpt)} points")
    return min(scores, key=scores.get)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", type=Path, help="pickle of the counted steps (made if missing)")
    ap.add_argument("--no-fit", action="store_true", help="only score the package's defaults")
    ap.add_argument("--points", type=Path, nargs="*", default=(), help="more train_points.json files to fit on")
    ap.add_argument("--checkpoint-hook", action="store_true",
                    help="fit only checkpoint_hook_s, on the checkpointed points, and exit")
    args = ap.parse_args()
    pts = points(tuple(args.points))
    steps = count_all(pts, args.cache)
    hw = load_catalog().get("h200-sxm")
    if args.checkpoint_hook:
        print(f"checkpoint_hook_s: {fit_checkpoint_hook(steps, pts, hw) * 1e6:.1f} us")
        return
    base = errors(steps, pts, hw, TRAINING_DEFAULTS)
    print(f"package defaults: median |error| {np.median(np.abs(np.expm1(base))):.1%}, "
          f"worst {np.max(np.abs(np.expm1(base))):.1%}")
    values = {k: getattr(TRAINING_DEFAULTS, k).value for k in FIELDS}
    if not args.no_fit:
        values = fit(steps, pts, hw)
        e = errors(steps, pts, hw, with_values(values))
        base = e
        print("fit (reference host: the H200 calibration's host scale is applied in predict_training):")
        for k, v in values.items():
            print(f"  {k}: {v * 1e6:.2f} us")
        print(f"fit: median |error| {np.median(np.abs(np.expm1(e))):.1%}, worst {np.max(np.abs(np.expm1(e))):.1%}")
    td = with_values(values) if not args.no_fit else TRAINING_DEFAULTS
    rows = np.expm1(part_errors(steps, pts, hw, td))
    for tw, p, r in zip(steps, pts, rows, strict=True):
        mem = (tw.memory.peak_bytes + workspace_bytes(hw.architecture)) / p["peak_bytes"] - 1
        print(f"{p['model'][:26]:26s} b{p['batch']:<5}{p['precision']:9s}{p['optimizer']:12s}{p['mode']:6s}"
              f"step {r[0]:+6.1%} fwd {r[1]:+6.1%} bwd {r[2]:+6.1%} opt {r[3]:+6.1%}  peak memory {mem:+6.1%}")


if __name__ == "__main__":
    main()
