"""Where the predicted time of published model records goes: per-operator shares, grouped by kind and bound.

For each model record of the given source files (benchmarks/published/*.json) whose error is beyond
``--min-error``, the prediction is made exactly as ``published_score.py`` makes it (same workload counting,
card, mode, host scale) and its operators are summed into a few groups:

- ``conv compute``: convolutions priced at a matrix rate (dense 3x3 / 1x1 convolutions at batch; in TensorRT
  mode the convolutions the engine lowering turned into implicit GEMMs count here too, by their name),
- ``conv memory``: convolutions priced by their bytes (depthwise and other grouped or tiny convolutions),
- ``matmul``: linear layers, attention and other GEMMs (any bound),
- ``elementwise/norm``: memory-bound elementwise, normalisation, reduction and data-movement operators,
- ``launch``: the per-kernel overhead term of the device time,

each as a share of the predicted device time; the host's launch time (eager) is given beside it. This reads the
tool's own breakdown only: it says which part of a prediction a miss can come from, not which part is wrong.

    python benchmarks/reports/op_shares.py --files hudenjear_rtx3090.json --min-error 0.25 --markdown
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GROUPS = ("conv compute", "conv memory", "matmul", "elementwise/norm", "launch")


def _scorer():
    spec = importlib.util.spec_from_file_location("published_score", Path(__file__).with_name("published_score.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def group_of(name: str, kind: str, bound: str) -> str:
    """The group an operator's predicted time is summed into (module docstring)."""
    if bound == "overhead":
        return "launch"
    if kind == "conv" or "convolution" in name:
        return "conv compute" if bound == "compute" else "conv memory"
    if kind in ("matmul", "attention", "bmm", "linear"):
        return "matmul"
    return "elementwise/norm"


def prediction(ps, predictor, rec: dict):
    """The scorer's prediction of a model record, as a full ``Prediction`` (with its operators)."""
    from tops_advisor.api import predict
    from tops_advisor.roofline.hosts import with_host_scale
    w, hw, cal, perf = predictor.model_case(rec)
    fit = predictor.host_fit(rec)
    if fit is not None:
        perf = with_host_scale(perf, fit.scale)
    mode, _ = ps.mode_and_flag(rec["run"])
    return predict(w, hw, cal, mode, tf32_matmul=rec["precision"] == "tf32", perf=perf)


def shares(pred) -> dict[str, float]:
    """Each group's share of the predicted device time."""
    total: dict[str, float] = defaultdict(float)
    for op in pred.ops:
        total[group_of(op.name, op.kind, op.bound)] += op.latency_s
    device = sum(total.values()) or 1.0
    return {g: total[g] / device for g in GROUPS}


def rows(files: list[str], min_error: float) -> list[list[str]]:
    ps = _scorer()
    sources = [doc for doc in ps.load_sources() if doc["file"] in files]
    predictor = ps.Predictor()
    predictor.set_environments(sources)
    out = []
    for doc in sources:
        for rec in doc["records"]:
            if ps.record_kind(rec["workload"]) != "model":
                continue
            pred = prediction(ps, predictor, rec)
            error = predictor.latency_s(rec) / ps.measured_latency_s(rec) - 1   # the scorer's own error
            if abs(error) <= min_error:
                continue
            s = shares(pred)
            out.append([rec["card"], rec["workload"].rsplit("/", 1)[-1], str(rec["batch"]), rec["precision"], rec["run"],
                        f"{error:+.0%}", f"{pred.device_time_s * 1e3:.2f}", f"{pred.host_time_s * 1e3:.2f}",
                        *(f"{s[g]:.0%}" for g in GROUPS)])
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", nargs="+", required=True, metavar="NAME", help="source files of benchmarks/published")
    ap.add_argument("--min-error", type=float, default=0.25, help="only records with |error| above this (0.25)")
    ap.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = ap.parse_args(argv)
    ps = _scorer()
    head = ["card", "workload", "batch", "precision", "run", "error", "device ms", "host ms", *GROUPS]
    render = ps.markdown if args.markdown else ps.plain
    print(render([head, *rows(args.files, args.min_error)]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
