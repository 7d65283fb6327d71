"""Put predictions beside measurements and write the H200 accuracy report (and the shipped error bands).

Measurements come from ``benchmarks/harness/measure_models.py`` or ``tops-advisor validate --json`` run on a GPU
(recorded JSON, committed under benchmarks/results/); this script needs no GPU, so CI and anyone can
regenerate the report. The command of record, with every input, is the ``accuracy`` entry of
``benchmarks/reports/manifest.toml``:

    python benchmarks/reports/regenerate.py accuracy

It writes docs/reports/accuracy-h200.md, docs/reports/accuracy_parity.png and tops_advisor/data/accuracy_h200.json.
Each measured (model, dtype, batch) is counted on this machine and predicted for the catalog device that
matches the measured GPU, in eager and graph mode, from datasheet defaults and with the shipped calibration.
Error = (predicted - measured) / measured.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

from tops_advisor.accuracy import describe, model_family, report_band, summarise_rows
from tops_advisor.api import ModelCosts, calibration_for, load_catalog
from tops_advisor.probe.runner import match_catalog
from tops_advisor.roofline import device_perf, predict
from tops_advisor.validate.compare import compare_latency
from tops_advisor.validate.measure import Measurement

SETS = (("tuned", "tuned-on models"), ("held-out", "held-out models (seen while tuning)"),
        ("new", "never seen (blind)"))


def gpu_to_catalog(name: str):
    catalog = load_catalog()
    hw_id = match_catalog(name, catalog)
    if hw_id is None:
        raise SystemExit(f"error: GPU {name!r} is not in the catalog")
    return catalog.get(hw_id)


def rows_for(results: dict, held_out: set[str], held_out_new: set[str],
             costs: dict[str, ModelCosts]) -> tuple[list[dict], object, str]:
    hw = gpu_to_catalog(results["environment"]["gpu"])
    cal, source = calibration_for(hw)
    perf_default = device_perf(hw)
    perf_cal = device_perf(hw, cal, source) if cal else None
    rows = []
    for rec in results["runs"]:
        m = Measurement.from_record(rec)
        name = Path(m.model).stem
        kind = "new" if name in held_out_new else "held-out" if name in held_out else "tuned"
        # ("name" gains the input variant below, after the set is decided by the file's stem)
        if m.error:
            rows.append({"model": name, "set": kind, "dtype": m.dtype, "batch": m.batch, "error_text": m.error})
            continue
        # a run may record the model's input variant (yolov7: YOLOV7_INPUT=640|1080p|640-letterbox)
        variant = rec.get("input")
        key = f"{m.model}@{variant}" if variant else m.model
        if variant:
            os.environ["YOLOV7_INPUT"] = variant
            name = f"{name} {variant}"
        if key not in costs:
            costs[key] = ModelCosts(m.model)
        w = costs[key].at(m.batch, m.dtype)
        os.environ.pop("YOLOV7_INPUT", None)
        preds = {mode: (predict(w, hw, mode=mode, perf=perf_default),
                        predict(w, hw, mode=mode, perf=perf_cal) if perf_cal else None)
                 for mode in ("eager", "graph")}
        for r in compare_latency(m, preds):
            d = r.model_dump()
            d.update(model=name, set=kind, family=model_family(w), held_out=kind != "tuned")
            rows.append(d)
    return rows, hw, source


def summary(rows: list[dict], key: str) -> str:
    vals = [abs(r[key]) for r in rows if r.get(key) is not None]
    if not vals:
        return "-"
    return f"median {statistics.median(vals):.0%}, worst {max(vals):.0%} (n={len(vals)})"


def _env_line(env: dict) -> str:
    return (f"{env.get('gpu')} ({env.get('sm_count')} SMs), driver {env.get('driver', '?')}, "
            f"CUDA {env.get('cuda')}, torch {env.get('torch')}, cuDNN {env.get('cudnn')}; "
            f"power limit {env.get('power_limit_w', '?')} W, max SM clock {env.get('sm_clock_max_mhz', '?')} MHz")


def _measurement_table(rows: list[dict]) -> list[str]:
    lines = ["| model | dtype | batch | mode | measured ms | predicted ms (defaults) | error | "
             "predicted ms (calibrated) | error | bound |", "|---|---|---:|---|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        if "error_text" in r:
            lines.append(f"| {r['model']} | {r['dtype']} | {r['batch']} | | {r['error_text']} | | | | | |")
            continue
        cal = f"{r['calibrated_s'] * 1e3:.3f} | {r['err_calibrated']:+.0%}" if r["calibrated_s"] else "- | -"
        lines.append(f"| {r['model']} | {r['dtype']} | {r['batch']} | {r['mode']} | {r['measured_s'] * 1e3:.3f} | "
                     f"{r['default_s'] * 1e3:.3f} | {r['err_default']:+.0%} | {cal} | {r['bound']} |")
    return lines


def _summary_table(ok: list[dict], group_key: str, groups) -> list[str]:
    lines = ["| set | mode | datasheet defaults | calibrated |", "|---|---|---|---|"]
    for key, label in groups:
        subset = [r for r in ok if r[group_key] == key]
        for mode in ("graph", "eager"):
            rs = [r for r in subset if r["mode"] == mode]
            if rs:
                lines.append(f"| {label} | {mode} | {summary(rs, 'err_default')} | {summary(rs, 'err_calibrated')} |")
    return lines


def _introduction(rows, hw, source, files: list[tuple[Path, dict]], command: str, args) -> list[str]:
    """Where the measurements come from, how errors are measured and how held-out each set is."""
    new_models = sorted({r["model"] for r in rows if r["set"] == "new"})
    held = sorted({r["model"] for r in rows if r["set"] == "held-out"})
    lines = ["# Prediction accuracy", "",
             "Generated by `benchmarks/reports/accuracy.py` from measurements recorded on a real GPU; do not edit by hand.",
             ""]
    for path, res in files:
        env = res["environment"]
        lines += [f"- `{path}`: {_env_line(env)}; measured {env.get('date')} with `{env.get('command')}`"]
    lines += [
        f"- Predicted for catalog device `{hw.id}`; calibration: {source or 'none'}",
        f"- Regenerate: `{command}`",
        "- Error = (predicted - measured) / measured. Latency is per batch (one forward pass).",
        "- Measured: CUDA events, median of repeats after warm-up; eager = plain PyTorch forward, "
        "graph = the same forward captured once and replayed as a CUDA graph.", "",
        "## How held-out the held-out models are", "",
        f"- **Held out, but seen** ({', '.join(held) or 'none'}): these models were excluded from the "
        "whole-model fits of the first versions, but their errors were visible in this report while the "
        "predictor was being tuned, and since commit `5782aec` the per-operator constants (floors, bandwidth "
        "factors, depthwise rates) are medians over per-operator profiles of all of them together with the "
        "tuned-on models (docs/reports/op-accuracy.md). They are not a test of unseen models: the blind rounds are.",
    ]
    if new_models:
        lines.append(f"- **Never seen** ({', '.join(new_models)}): written after the predictor was "
                     f"tuned and measured with the predictor frozen (its files as in commit `{args.frozen_at}`); "
                     "nothing in `tops_advisor/roofline/` was changed for them afterwards. Their "
                     "numbers below are the most honest estimate of the error on a model we did not tune on.")
    return lines


def _bands_section(args, bands: dict) -> list[str]:
    """The error bands ``analyze`` quotes, by model family."""
    lines = ["", "## Error bands by model family", "",
             "What `tops-advisor analyze` quotes as the expected error (shipped in "
             f"`{args.summary or 'tops_advisor/data/accuracy_h200.json'}`): all model-file measurements above, "
             "tuned-on and held-out together; a model with attention operators counts as a transformer, any "
             "other as a CNN. The LLM decoder below is not included. These bands come from models that were "
             "seen while tuning; `analyze` adds the blind rounds' results (models never seen) to what it quotes.",
             "",
             "| family | mode | prediction | median | worst | n |", "|---|---|---|---:|---:|---:|"]
    for b in bands.get("bands", []):
        lines.append(f"| {b['family']} | {b['mode']} | {'calibrated' if b['calibrated'] else 'datasheet defaults'}"
                     f" | {b['median_abs_error']:.0%} | {b['worst_abs_error']:.0%} | {b['n']} |")
    return lines


def _never_seen_section(rows) -> list[str]:
    new_models = sorted({r["model"] for r in rows if r["set"] == "new"})
    if not new_models:
        return []
    new_rows = [r for r in rows if r["set"] == "new"]
    lines = ["", f"## Never seen: {', '.join(new_models)}", "",
             "Measured on the card after the predictor was frozen; predictions recomputed here by the "
             "current predictor.", ""]
    lines += _summary_table([r for r in new_rows if "error_text" not in r], "set", SETS[2:])
    return lines + [""] + _measurement_table(new_rows)


def _per_op_section(per_op: list[tuple[Path, dict]]) -> list[str]:
    """Per operator kind: the profiled kernel time of one eager forward beside the predicted device time."""
    lines = []
    for path, res in per_op:
        for entry in res.get("per_op", []):
            lines += ["", f"Per operator kind at batch {entry['batch']} ({res['dtype']}; `{path}`, recorded "
                      "by `tops-advisor validate --per-op`): kernel time of one eager forward under "
                      "torch.profiler vs the predicted device time (graph mode, calibrated) at "
                      "measurement time.", "",
                      "| kind | measured us | share | predicted us | share | error | predicted bound |",
                      "|---|---:|---:|---:|---:|---:|---|"]
            for k in entry["kinds"]:
                err = f"{k['error']:+.0%}" if k.get("error") is not None else "-"
                lines.append(f"| {k['kind']} | {k['measured_s'] * 1e6:.1f} | {k['measured_share']:.0%} | "
                             f"{k['predicted_s'] * 1e6:.1f} | {k['predicted_share']:.0%} | {err} | "
                             f"{k['bound']} |")
    return lines


def render(rows, hw, source, files: list[tuple[Path, dict]], command: str, args, llm: dict | None,
           per_op: list[tuple[Path, dict]], bands: dict) -> str:
    ok = [r for r in rows if "error_text" not in r]
    lines = _introduction(rows, hw, source, files, command, args)
    if args.history:
        lines += ["", args.history.read_text().strip()]
    lines += ["", "## Summary", ""] + _summary_table(ok, "set", SETS)
    lines += _bands_section(args, bands)
    lines += _never_seen_section(rows)
    for note in args.notes:
        lines += ["", note.read_text().strip()]
    lines += _per_op_section(per_op)
    if llm:
        lines += _llm_section(llm, args.llm)
    lines += ["", "## Every measurement of the tuned-on and held-out models", ""]
    lines += _measurement_table([r for r in rows if r["set"] != "new"])
    return "\n".join(lines) + "\n"


def _predict_llm_now(llm: dict) -> list[float | None]:
    """The current predictor's latency (ms) for each recorded LLM row (same config, device, calibration)."""
    from tops_advisor.llm import build_workload, config_from_dict

    hw = load_catalog().get(llm["prediction_hardware"])
    cal, source = calibration_for(hw)
    perf = device_perf(hw, cal, source)
    cfg = config_from_dict(llm["config"], name="recorded")
    out = []
    for r in llm["results"]:
        w = build_workload(cfg, phase=r["phase"], batch=r["batch"], context=r["context"])
        out.append(predict(w, hw, mode=r["mode"], perf=perf).latency_s * 1e3)
    return out


def _llm_section(llm: dict, path) -> list[str]:
    env = llm.get("environment", {})
    res = llm["results"]
    now = _predict_llm_now(llm)
    errs = [abs(p / r["median_ms"] - 1) * 100 for p, r in zip(now, res, strict=True)]
    lines = ["", "## LLM decoder (LLaMA-3-8B shape, bf16)", "",
             f"Recorded by `benchmarks/harness/llm_measure.py` (`{path}`, {llm.get('created')}, `{llm.get('command')}`) "
             f"on {env.get('gpu')}, torch {env.get('torch')}, CUDA {env.get('cuda')}. Each row carries the "
             f"measurement, the `tops-advisor llm` prediction made at measurement time for "
             f"`{llm.get('prediction_hardware')}` (as recorded), and the current predictor's (recomputed by "
             "this script, shipped calibration). The errors below are the current predictor's. The eager rows "
             "are not an independent test: the host cost per operator of functional (LLM) workloads, 20.5 us, "
             "was taken from these eager decode steps.", ""]
    by_mode: dict[str, list[float]] = {}
    for e, r in zip(errs, res, strict=True):
        by_mode.setdefault(r["mode"], []).append(e)
    lines.append(f"Median absolute error {statistics.median(errs):.1f}%, worst {max(errs):.1f}% (n={len(errs)}); "
                 + "; ".join(f"{m}: median {statistics.median(v):.1f}%, worst {max(v):.1f}%"
                             for m, v in by_mode.items()) + ".")
    lines += ["", "| phase | mode | batch | context | measured ms | predicted then (error) | predicted now | error |",
              "|---|---|---:|---:|---:|---:|---:|---:|"]
    for p, r in zip(now, res, strict=True):
        lines.append(f"| {r['phase']} | {r['mode']} | {r['batch']} | {r['context']} | {r['median_ms']:.3f} | "
                     f"{r['predicted_ms']:.3f} ({r['error_pct']:+.0f}%) | {p:.3f} | "
                     f"{(p / r['median_ms'] - 1) * 100:+.0f}% |")
    return lines


def print_summary(ok: list[dict], bands: dict) -> None:
    """The median errors per set and mode, then the bands, on stdout."""
    for key, label in SETS:
        for mode in ("graph", "eager"):
            rs = [r for r in ok if r["set"] == key and r["mode"] == mode]
            if rs:
                print(f"{label}, {mode}: defaults {summary(rs, 'err_default')}; "
                      f"calibrated {summary(rs, 'err_calibrated')}")
    for b in bands["bands"]:
        print(describe(report_band(b, bands["card_class"])))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", type=Path, nargs="+", help="measurement files (measure_models.py or validate --json)")
    ap.add_argument("--out", type=Path, default=Path("docs/reports/accuracy-h200.md"))
    ap.add_argument("--plot", type=Path, default=None)
    ap.add_argument("--held-out", default="vit_b16,mobilenet_v2,unet",
                    help="models excluded from fitting but seen while tuning")
    ap.add_argument("--held-out-new", default="", help="models never seen while tuning (reported separately)")
    ap.add_argument("--frozen-at", default="?", help="the commit the predictor was frozen at for --held-out-new")
    ap.add_argument("--notes", type=Path, nargs="*", default=[], help="markdown files to add after the summaries")
    ap.add_argument("--history", type=Path, default=None,
                    help="markdown: earlier never-seen sets and what became of them")
    ap.add_argument("--per-op", type=Path, nargs="*", default=[], help="validate --per-op --json files to show")
    ap.add_argument("--llm", type=Path, default=None, help="llm_measure.py results to show")
    ap.add_argument("--summary", type=Path, default=None, help="write the error bands (JSON) here")
    ap.add_argument("--blind-rounds", default="",
                    help="results of earlier blind rounds at their freeze, 'median:worst' percent, comma-separated "
                         "(graph mode, calibrated); shipped with the bands")
    ap.add_argument("--regenerate-command", default="",
                    help="the command the report cites to regenerate it (default: this one's argv)")
    ap.add_argument("--csv", type=Path, default=None, help="also write the rows as JSON here")
    args = ap.parse_args()
    held_out = {s for s in args.held_out.split(",") if s}
    held_out_new = {s for s in args.held_out_new.split(",") if s}
    files = [(p, json.loads(p.read_text())) for p in args.results]
    costs: dict[str, ModelCosts] = {}
    rows, hw, source = [], None, ""
    for _, res in files:
        r, hw, source = rows_for(res, held_out, held_out_new, costs)
        rows += r
    ok = [r for r in rows if "error_text" not in r]
    bands = summarise_rows(ok, "H200" if hw.id.startswith("h200") else hw.name,
                           f"{args.out} (benchmarks/reports/accuracy.py)")
    bands["hardware"] = hw.id
    bands["measurements"] = [str(p) for p, _ in files]
    if args.blind_rounds:
        bands["blind_rounds"] = [
            {"median_abs_error": float(m) / 100, "worst_abs_error": float(w) / 100}
            for m, w in (pair.split(":") for pair in args.blind_rounds.split(","))]
    per_op = [(p, json.loads(p.read_text())) for p in args.per_op]
    llm = json.loads(args.llm.read_text()) if args.llm else None
    command = args.regenerate_command or "python " + " ".join(sys.argv)
    args.out.write_text(render(rows, hw, source, files, command, args, llm, per_op, bands))
    if args.summary:
        args.summary.parent.mkdir(parents=True, exist_ok=True)
        args.summary.write_text(json.dumps(bands, indent=1) + "\n")
    if args.plot:
        from tops_advisor.validate.plot import parity_plot

        parity_plot(ok, args.plot, title=f"{hw.id}: predicted vs measured", highlight=held_out_new)
    if args.csv:
        args.csv.write_text(json.dumps(rows, indent=1))
    print_summary(ok, bands)
    return 0


if __name__ == "__main__":
    sys.exit(main())
