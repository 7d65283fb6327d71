"""Snapshot every prediction the accuracy sets rest on, to prove a refactor changes nothing (or say what).

    python benchmarks/prediction_snapshot.py write /tmp/before.json     # before the change
    python benchmarks/prediction_snapshot.py write /tmp/after.json      # after it
    python benchmarks/prediction_snapshot.py diff /tmp/before.json /tmp/after.json [--rtol 1e-9]

Covers every model file in examples/ (the tuned, held-out and blind sets of docs/accuracy.md) at batches 1 and
32 in fp16 and fp32, and LLM presets in prefill and decode, each predicted on every catalog device in graph
and eager mode, from datasheet defaults and with the shipped calibration. Needs no GPU.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

from tops_advisor.api import ModelCosts, calibration_for, device_perf, load_catalog, predict

ROOT = Path(__file__).resolve().parent.parent
BATCHES = (1, 32)
DTYPES = ("fp16", "fp32")
LLM_CASES = (("llama3-8b", "decode", 16, 4096), ("llama3-8b", "prefill", 1, 2048),
             ("mixtral-8x7b", "decode", 8, 2048), ("gpt3-175b", "decode", 1, 512), ("llama2-70b", "prefill", 4, 1024))


def _perfs():
    out = []
    for hw in load_catalog():
        out.append((hw, "default", device_perf(hw)))
        cal, source = calibration_for(hw)
        if cal is not None:
            out.append((hw, "calibrated", device_perf(hw, cal, source)))
    return out


def _record(p) -> dict:
    return {"latency_s": p.latency_s, "device_time_s": p.device_time_s, "host_time_s": p.host_time_s,
            "flops": p.flops, "bytes": p.bytes, "kernels": p.kernels, "bound": p.bound,
            "time_by_bound_s": p.time_by_bound_s, "precision": p.precision}


def model_rows(perfs, models: list[Path]) -> dict:
    rows = {}
    for path in models:
        print(f"counting {path.name}", file=sys.stderr)
        try:
            costs = ModelCosts(path)
        except Exception as exc:  # a model that does not count is recorded, not fatal
            rows[path.stem] = {"error": str(exc)[:200]}
            continue
        for dtype in DTYPES:
            for batch in BATCHES:
                w = costs.at(batch=batch, dtype=dtype)
                for hw, cal, perf in perfs:
                    for mode in ("graph", "eager"):
                        try:
                            p = predict(w, hw, mode=mode, perf=perf)
                        except Exception as exc:
                            rows[f"{path.stem}|{dtype}|{batch}|{hw.id}|{cal}|{mode}"] = {"error": str(exc)[:200]}
                            continue
                        rows[f"{path.stem}|{dtype}|{batch}|{hw.id}|{cal}|{mode}"] = _record(p)
    return rows


def llm_rows(perfs) -> dict:
    from tops_advisor.llm.analysis import analyze_llm, roofline_predictor
    from tops_advisor.llm.presets import preset_config
    from tops_advisor.render.json_units import to_json

    rows = {}
    for name, phase, batch, context in LLM_CASES:
        cfg = preset_config(name)
        for hw, cal, _perf in perfs:
            if cal == "calibrated":
                continue
            for mode in ("graph", "eager"):
                key = f"llm:{name}|{phase}|{batch}|{context}|{hw.id}|{mode}"
                try:
                    a = analyze_llm(cfg, hw, batch=batch, phase=phase, context=context, mode=mode,
                                    predictor=roofline_predictor(hw), suggest=False, find_crossover=False)
                    rows[key] = {"latency_s": a.latency_s,
                                 "dump": json.loads(json.dumps(to_json(a), default=str))}
                except Exception as exc:
                    rows[key] = {"error": str(exc)[:200]}
    return rows


def write(out: Path, only: str | None) -> None:
    warnings.simplefilter("ignore")
    perfs = _perfs()
    models = sorted(p for p in (ROOT / "examples").glob("*.py") if not p.name.startswith("_"))  # _blocks.py
    if only:
        models = [m for m in models if m.stem in only.split(",")]
    rows = {**model_rows(perfs, models), **llm_rows(perfs)}
    out.write_text(json.dumps(rows, indent=0, sort_keys=True))
    print(f"{len(rows)} predictions -> {out}", file=sys.stderr)


def _numbers(x, prefix=""):
    if isinstance(x, dict):
        for k, v in x.items():
            yield from _numbers(v, f"{prefix}.{k}")
    elif isinstance(x, list):
        for i, v in enumerate(x):
            yield from _numbers(v, f"{prefix}[{i}]")
    else:
        yield prefix, x


def diff(before: Path, after: Path, rtol: float, common: bool = False) -> int:
    a, b = json.loads(before.read_text()), json.loads(after.read_text())
    if common:  # compare only what both snapshots hold (a partial snapshot written with --only)
        a, b = ({k: v for k, v in x.items() if k in a and k in b} for x in (a, b))
    changed = []
    for key in sorted(set(a) | set(b)):
        if key not in a or key not in b:
            changed.append((key, "missing in " + ("before" if key not in a else "after")))
            continue
        va, vb = dict(_numbers(a[key])), dict(_numbers(b[key]))
        for field in sorted(set(va) | set(vb)):
            x, y = va.get(field), vb.get(field)
            same = (x == y or (isinstance(x, (int, float)) and isinstance(y, (int, float))
                               and abs(x - y) <= rtol * max(abs(x), abs(y))))
            if not same:
                changed.append((key, f"{field}: {x} -> {y}"))
    for key, what in changed[:200]:
        print(f"{key}  {what}")
    print(f"{len(a)} before, {len(b)} after, {len({k for k, _ in changed})} keys differ (rtol {rtol:g})")
    return 1 if changed else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("write", help="write every prediction to a snapshot file")
    w.add_argument("out", type=Path)
    w.add_argument("--only", help="comma-separated example stems")
    d = sub.add_parser("diff", help="list what changed between two snapshots")
    d.add_argument("before", type=Path)
    d.add_argument("after", type=Path)
    d.add_argument("--rtol", type=float, default=1e-9)
    d.add_argument("--common", action="store_true", help="compare only the keys both snapshots hold")
    args = ap.parse_args()
    if args.cmd == "write":
        write(args.out, args.only)
        return 0
    return diff(args.before, args.after, args.rtol, args.common)


if __name__ == "__main__":
    sys.exit(main())
