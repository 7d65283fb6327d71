"""A blind round in two steps: predict (before any measurement, committed), then score against measurements.

    python benchmarks/harness/blind_round.py predict --models-file benchmarks/rounds/round-10/models.txt \
        --batches 1,8,32,128 --dtype fp16 --out benchmarks/rounds/round-10/predictions.json
    # on the GPU: benchmarks/harness/measure_models.py (graph and eager) and the probe's eager launch time
    python benchmarks/harness/blind_round.py score benchmarks/rounds/round-10/predictions.json measured.json \
        --kernel-eager-us 9.1 --markdown

Predictions are for the H200 SXM: datasheet defaults and the shipped calibration, CUDA graph and eager. Eager
time depends on the host's speed, which a probe of the same machine measures (the time of a trivial operator
launched eagerly, ``probe.overhead.eager_kernel_s``; from round 24 also the host time per module call of a
stack of tiny layers, ``probe.overhead.module_call_s``): the predict step writes eager predictions for a grid
of such probe values, and the score step takes the grid point nearest the probe measured in the same run
(or right before each point), so nothing is predicted after the measurement. Error = (predicted - measured) /
measured.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

HARDWARE = "h200-sxm"
MODES = ("graph", "eager", "compiled")
KEYS = tuple(f"{mode}_{label}" for mode in MODES for label in ("datasheet", "calibrated"))
LAUNCH_GRID_US = [round(4.0 + 0.25 * i, 2) for i in range(53)]  # 4 .. 17 us
MODULE_GRID_US = [round(8.0 + 0.5 * i, 1) for i in range(65)]   # 8 .. 40 us per module call


def _perfs(hw):
    from tops_advisor.api import calibration_for, device_perf

    cal, source = calibration_for(hw)
    grid = {us: device_perf(hw, cal.model_copy(update={"kernel_eager_us": us}), source) for us in LAUNCH_GRID_US}
    modules = {us: device_perf(hw, cal.model_copy(update={"module_call_us": us}), source) for us in MODULE_GRID_US}
    return device_perf(hw), device_perf(hw, cal, source), grid, modules


def predict_cases(models: list[str], batches: list[int], dtype: str, compiled: bool = False,
                  channels_last: bool = False) -> dict:
    from tops_advisor.api import ModelCosts, load_catalog, predict

    hw = load_catalog().get(HARDWARE)
    plain, calibrated, grid, modules = _perfs(hw)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    rows = []
    for spec in models:
        costs = ModelCosts(spec, base_dtype=dtype, channels_last=channels_last)
        for batch in batches:
            # each mode's own count: a forward can take another path under CUDA-graph capture (HF attention
            # asks whether it is being captured); rounds 13-22 predicted eager from the captured count
            counted = {mode: costs.at(batch, dtype, mode=mode) for mode in ("graph", "eager")}
            row = {"model": spec, "batch": batch, "dtype": dtype}
            for label, perf in (("datasheet", plain), ("calibrated", calibrated)):
                for mode, w in counted.items():
                    row[f"{mode}_{label}_s"] = predict(w, hw, mode=mode, perf=perf).latency_s
            row["eager_by_launch_us"] = {str(us): predict(counted["eager"], hw, mode="eager", perf=p).latency_s
                                         for us, p in grid.items()}
            row["eager_by_module_us"] = {str(us): predict(counted["eager"], hw, mode="eager", perf=p).latency_s
                                         for us, p in modules.items()}
            if compiled:
                wc = costs.at(batch, dtype, mode="compiled")
                for label, perf in (("datasheet", plain), ("calibrated", calibrated)):
                    row[f"compiled_{label}_s"] = predict(wc, hw, mode="compiled", perf=perf).latency_s
            rows.append(row)
    return {"hardware": HARDWARE, "frozen_at": commit, "channels_last": channels_last, "rows": rows}


def merged(paths: list[str], eager_best: bool = False) -> dict:
    """Runs of several measurement files, one per (model, batch, dtype): each mode's time from the first file
    that has it, failures only where no file has a time. With ``eager_best``, the eager time is the fastest of
    the files' eager passes (see ``--eager-best``)."""
    runs: dict[tuple, dict] = {}
    for path in paths:
        for r in json.loads(Path(path).read_text())["runs"]:
            key = (r["model"], r["batch"], r["dtype"])
            have = runs.setdefault(key, dict(r))
            for field, value in r.items():
                if have.get(field) is None and value is not None:
                    have[field] = value
            if eager_best and r.get("eager_s") and have.get("eager_s"):
                have["eager_s"] = min(have["eager_s"], r["eager_s"])
            if any(r.get(f"{m}_s") for m in MODES):
                have["error"] = None if any(have.get(f"{m}_s") for m in MODES) else have.get("error")
    return {"runs": list(runs.values())}


def launch_us(paths: list[str]) -> float:
    """The host's undisturbed launch time: the fastest of several ``launch_time.py`` probes (each a median of 5)
    taken during the measuring calls."""
    return min(json.loads(Path(p).read_text())["kernel_eager_us"] for p in paths)


def _nearest(grid: dict[str, float], launch_us: float) -> float:
    key = min(grid, key=lambda k: abs(float(k) - launch_us))
    return grid[key]


def point_launches(paths: list[str], key: str = "kernel_eager_us") -> dict[tuple, float]:
    """A probe taken right before each point (``measure_models.py --launch-out``), by (model, batch, dtype):
    the host's speed when that point's eager time was measured. ``key``: the launch time or, from round 24,
    the module-stack time (``module_call_us``)."""
    out = {}
    for path in paths:
        for p in json.loads(Path(path).read_text())["probes"]:
            if p.get(key) is not None:
                out[(p["model"], p["batch"], p["dtype"])] = p[key]
    return out


def score(pred: dict, measured: dict, launch_us: float | None, per_point: dict | None = None,
          per_point_modules: dict | None = None) -> list[dict]:
    runs = {(r["model"], r["batch"], r["dtype"]): r for r in measured["runs"]}
    out = []
    for p in pred["rows"]:
        m = runs.get((p["model"], p["batch"], p["dtype"]))
        if m is None or m.get("error") or not m.get("graph_s"):
            out.append({**{k: p[k] for k in ("model", "batch", "dtype")}, "error_text": (m or {}).get("error")})
            continue
        row = {k: p[k] for k in ("model", "batch", "dtype")} | {f"{mode}_s": m.get(f"{mode}_s") for mode in MODES}
        for key in KEYS:
            mode = key.split("_")[0]
            if m.get(f"{mode}_s") and f"{key}_s" in p:
                row[key] = (p[f"{key}_s"] - m[f"{mode}_s"]) / m[f"{mode}_s"]
        if launch_us is not None and m.get("eager_s"):
            row["eager_host_probed"] = (_nearest(p["eager_by_launch_us"], launch_us) - m["eager_s"]) / m["eager_s"]
        point = (per_point or {}).get((p["model"], p["batch"], p["dtype"]))
        if point is not None and m.get("eager_s"):
            row["eager_point_probed"] = (_nearest(p["eager_by_launch_us"], point) - m["eager_s"]) / m["eager_s"]
        stack = (per_point_modules or {}).get((p["model"], p["batch"], p["dtype"]))
        if stack is not None and m.get("eager_s") and "eager_by_module_us" in p:
            row["eager_stack_probed"] = (_nearest(p["eager_by_module_us"], stack) - m["eager_s"]) / m["eager_s"]
        out.append(row)
    return out


def summary(rows: list[dict]) -> dict:
    keys = [k for k in (*KEYS, "eager_host_probed", "eager_point_probed", "eager_stack_probed")
            if any(k in r for r in rows)]
    res = {}
    for k in keys:
        errs = [abs(r[k]) for r in rows if k in r]
        worst = max((r for r in rows if k in r), key=lambda r: abs(r[k]))
        res[k] = {"n": len(errs), "median": statistics.median(errs), "worst": abs(worst[k]),
                  "worst_case": f"{worst['model']} b={worst['batch']}", "over_40": sum(e > 0.4 for e in errs)}
    return res


def write_band(path: Path, rows: list[dict], round_name: str) -> None:
    """Add (or replace) this round's bands for compiled mode and for AMP in graph and eager mode, datasheet
    and calibrated, to the shipped blind-band file."""
    doc = json.loads(path.read_text()) if path.exists() else {"hardware": HARDWARE, "bands": []}
    doc["source"] = "docs/accuracy.md, blind rounds (benchmarks/harness/blind_round.py score --write-band)"
    for dtype in sorted({r["dtype"] for r in rows}):
        for mode in MODES:
            if dtype != "amp" and mode != "compiled":
                continue
            for label, calibrated in (("datasheet", False), ("calibrated", True)):
                errs = [abs(r[f"{mode}_{label}"]) for r in rows if r["dtype"] == dtype and f"{mode}_{label}" in r]
                if not errs:
                    continue
                band = {"mode": mode, "dtype": dtype, "calibrated": calibrated, "round": round_name,
                        "median_abs_error": round(statistics.median(errs), 4),
                        "worst_abs_error": round(max(errs), 4), "n": len(errs)}
                doc["bands"] = [b for b in doc["bands"] if (b["mode"], b["dtype"], b["calibrated"])
                                != (mode, dtype, calibrated)] + [band]
    path.write_text(json.dumps(doc, indent=1) + "\n")


def markdown(rows: list[dict], summ: dict) -> str:
    keys = list(summ)
    modes = [m for m in MODES if any(r.get(f"{m}_s") for r in rows)]
    lines = ["| model | batch | dtype | " + " | ".join(f"{m} ms" for m in modes) + " | " + " | ".join(keys) + " |",
             "|---|---|---|" + "---|" * (len(modes) + len(keys))]
    for r in rows:
        if "graph_s" not in r:
            lines.append(f"| {r['model']} | {r['batch']} | {r['dtype']} | failed: {r.get('error_text')} |")
            continue
        times = " | ".join(f"{r[f'{m}_s'] * 1e3:.3f}" if r.get(f"{m}_s") else "" for m in modes)
        cells = " | ".join(f"{r[k] * 100:+.0f}%" if k in r else "" for k in keys)
        lines.append(f"| {r['model']} | {r['batch']} | {r['dtype']} | {times} | {cells} |")
    lines += ["", "| set | n | median abs error | worst | worst case | over 40% |", "|---|---|---|---|---|---|"]
    lines += [f"| {k} | {v['n']} | {v['median'] * 100:.1f}% | {v['worst'] * 100:.0f}% | {v['worst_case']} | "
              f"{v['over_40']} |" for k, v in summ.items()]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="step", required=True)
    p = sub.add_parser("predict", help="predict every case of a round before any measurement")
    p.add_argument("--models-file", required=True)
    p.add_argument("--batches", default="1,8,32,128")
    p.add_argument("--dtype", default="fp16")
    p.add_argument("--compiled", action="store_true", help="also predict --mode compiled")
    p.add_argument("--channels-last", action="store_true", help="model and input channels-last (measure_models.py "
                                                                "--channels-last)")
    p.add_argument("--out", required=True)
    s = sub.add_parser("score", help="score committed predictions against measurements")
    s.add_argument("predictions")
    s.add_argument("measured", nargs="+", help="measure_models.py results; several are merged per (model, "
                                               "batch, dtype), the first file giving a mode's time wins")
    s.add_argument("--kernel-eager-us", type=float, help="the probe's eager launch time on the measuring host")
    s.add_argument("--launch-files", nargs="+", metavar="JSON", help="launch_time.py outputs of the measuring "
                                                                       "calls: the fastest is the launch time")
    s.add_argument("--eager-best", action="store_true",
                   help="score each eager point against the fastest of its passes (one per measured file) and "
                        "the fastest launch probe: the host's undisturbed speed, as the probe predicts it")
    s.add_argument("--point-launch-files", nargs="+", metavar="JSON",
                   help="measure_models.py --launch-out files: score eager also against the probe taken right "
                        "before each point (eager_point_probed) and, where the files carry the module-stack "
                        "time (round 24 on), against the stack probe (eager_stack_probed)")
    s.add_argument("--markdown", action="store_true")
    s.add_argument("--write-band", metavar="PATH", help="add this round's compiled and AMP bands to PATH (the "
                                                          "shipped tops_advisor/data/accuracy_h200_blind.json)")
    s.add_argument("--round", default="", help="the round's name, quoted with the band")
    args = ap.parse_args()
    if args.step == "predict":
        models = [ln.strip() for ln in Path(args.models_file).read_text().splitlines() if ln.strip()
                  and not ln.startswith("#")]
        result = predict_cases(models, [int(b) for b in args.batches.split(",")], args.dtype, args.compiled,
                               args.channels_last)
        Path(args.out).write_text(json.dumps(result, indent=1))
        return 0
    launch = launch_us(args.launch_files) if args.launch_files else args.kernel_eager_us
    per_point = point_launches(args.point_launch_files) if args.point_launch_files else None
    modules = point_launches(args.point_launch_files, "module_call_us") if args.point_launch_files else None
    rows = score(json.loads(Path(args.predictions).read_text()), merged(args.measured, args.eager_best), launch,
                 per_point, modules)
    summ = summary([r for r in rows if "graph_s" in r])
    if args.write_band:
        write_band(Path(args.write_band), rows, args.round)
    print(markdown(rows, summ) if args.markdown else json.dumps({"rows": rows, "summary": summ}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
