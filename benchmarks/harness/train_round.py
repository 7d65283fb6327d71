"""A blind round for training steps: predict every point of a plan before it is measured, then score.

    python benchmarks/harness/train_round.py predict ROUND/plan.txt --out ROUND/predicted.json
    python benchmarks/harness/train_round.py score ROUND/predicted.json ROUND/measured/train_points.json

``predict`` counts each point (the plan format of ``train_measure.py``: MODEL BATCHES PRECISIONS OPTIMIZERS
MODES; a ``compile`` point is counted with the inductor lowering and predicted in mode compiled) and predicts it
on the H200 with the shipped calibration, beside two peers on the same counted
operators: **naive** 3 x forward operations at a fixed MFU of 0.5 (llm-analysis's default
``flops_efficiency``), and **RuntimeEstimator**, PyTorch's roofline (torch/utils/_runtime_estimation.py,
torch 2.14: per operator max(bytes / DRAM bandwidth, (FLOPs / 2) / (0.75 x peak)), the FLOPs of matmuls,
convolutions and attention only, no host, no launch cost). ``score`` prints the |error| of step time and peak
memory per point and their medians and worst, for the three.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from train_measure import points_of, read_plan  # noqa: E402

from tops_advisor.api import calibration_for  # noqa: E402
from tops_advisor.catalog import load_catalog  # noqa: E402
from tops_advisor.counting.lowering import lowering_for  # noqa: E402
from tops_advisor.kinds import Phase  # noqa: E402
from tops_advisor.roofline import device_perf  # noqa: E402
from tops_advisor.train import TrainSetup  # noqa: E402
from tops_advisor.train.predict import predict_training  # noqa: E402

NAIVE_MFU = 0.5
FLOP_KINDS = ("matmul", "conv", "attention")


def key(model: str, batch: int, prec: str, opt: str, mode: str) -> str:
    return f"{model} b{batch} {prec} {opt} {mode}"


def peers(tw, hw, precision: str) -> dict[str, float]:
    peak = hw.peak_ops_per_s(precision) or hw.peak_ops_per_s("fp32")
    naive = 3 * tw.phase_flops(Phase.FORWARD) / (NAIVE_MFU * peak)
    estimator = 0.0
    for op in tw.workload.ops:
        op_peak = hw.peak_ops_per_s(op.dtype if op.dtype in hw.dense_tops else "fp32") or peak
        compute = op.flops / 2 / (0.75 * op_peak) if op.kind in FLOP_KINDS else 0.0
        estimator += max(op.bytes / hw.memory_bandwidth_bytes_per_s, compute)
    return {"naive_step_s": naive, "runtime_estimator_step_s": estimator}


def predict(plan_path: Path, out: Path) -> None:
    from tops_advisor.counting.training import count_training

    hw = load_catalog().get("h200-sxm")
    perf = device_perf(hw, *calibration_for(hw))
    rows = {}
    for line in read_plan(plan_path.read_text().splitlines()):
        for batch, prec, opt, mode in points_of(line):
            setup = TrainSetup(prec, opt, checkpointing=mode == "ckpt", channels_last=mode == "cl")
            predict_mode = "compiled" if mode == "compile" else "eager"
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                tw = count_training(line.model, batch, setup, lowering=lowering_for(predict_mode))
            p = predict_training(tw, hw, perf=perf, mode=predict_mode)
            rows[key(line.model, batch, prec, opt, mode)] = {
                "step_s": p.step_s, "forward_s": p.forward_s, "backward_s": p.backward_s,
                "optimizer_s": p.optimizer_s, "peak_bytes": p.peak_memory_bytes, "bound": p.bound,
                "unsupported_ops": dict(tw.workload.unsupported_ops), **peers(tw, hw, p.precision)}
            print(f"{key(line.model, batch, prec, opt, mode)}: {p.step_s * 1e3:.1f} ms, "
                  f"{p.peak_memory_bytes / 1e9:.2f} GB", file=sys.stderr)
    out.write_text(json.dumps({"device": hw.id, "points": rows}, indent=1))


def score(pred_path: Path, measured_path: Path) -> None:
    pred = json.loads(pred_path.read_text())["points"]
    measured = json.loads(measured_path.read_text())["points"]
    errs: dict[str, list[float]] = {"step": [], "memory": [], "naive": [], "runtime_estimator": []}
    for m in measured:
        k = key(m["model"], m["batch"], m["precision"], m["optimizer"], m["mode"])
        if m.get("error") or k not in pred:
            print(f"{k}: not scored ({m.get('error') or 'no prediction'})")
            continue
        p = pred[k]
        e = {"step": p["step_s"] / m["step_s"] - 1, "memory": p["peak_bytes"] / m["peak_bytes"] - 1,
             "naive": p["naive_step_s"] / m["step_s"] - 1,
             "runtime_estimator": p["runtime_estimator_step_s"] / m["step_s"] - 1}
        for name, v in e.items():
            errs[name].append(abs(v))
        print(f"{k:58s} step {m['step_s'] * 1e3:7.1f} ms pred {p['step_s'] * 1e3:7.1f} ({e['step']:+.0%})  "
              f"peak {m['peak_bytes'] / 1e9:6.2f} GB pred {p['peak_bytes'] / 1e9:6.2f} ({e['memory']:+.0%})  "
              f"naive {e['naive']:+.0%}  RuntimeEstimator {e['runtime_estimator']:+.0%}")
    for name, v in errs.items():
        if v:
            print(f"{name}: median |error| {statistics.median(v):.1%}, worst {max(v):.1%}, {len(v)} points")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("predict")
    p.add_argument("plan", type=Path)
    p.add_argument("--out", type=Path, required=True)
    s = sub.add_parser("score")
    s.add_argument("predicted", type=Path)
    s.add_argument("measured", type=Path)
    args = ap.parse_args()
    predict(args.plan, args.out) if args.cmd == "predict" else score(args.predicted, args.measured)


if __name__ == "__main__":
    main()
