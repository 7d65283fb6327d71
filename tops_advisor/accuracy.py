"""How wrong our predictions are, from the published accuracy report (pure: no torch).

``benchmarks/accuracy.py`` measures nothing itself: it puts predictions beside recorded GPU measurements,
writes docs/accuracy.md and the small summary shipped here (``data/accuracy_h200.json``): the median and
worst absolute relative error per model family (cnn / transformer), mode (graph / eager) and whether the
prediction was calibrated. ``expected_error`` looks a prediction's band up, so that ``analyze`` can say how
far off it has been on real measurements of that kind of model.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

FAMILIES = ("cnn", "transformer")
SUMMARY_PATH = Path(__file__).parent / "data" / "accuracy_h200.json"


def model_family(op_kinds) -> str:
    """'transformer' when the workload has attention operators, else 'cnn'. ``op_kinds``: the ``kind`` of
    every operator (or a Workload / Prediction, whose operators are used). Masked attention counted as the
    math path has kind 'matmul' but keeps its operator name, so names count too."""
    ops = getattr(op_kinds, "ops", None)
    kinds = {op.kind for op in ops} | {getattr(op, "name", "") for op in ops} if ops is not None else set(op_kinds)
    return "transformer" if kinds & {"attention", "aten.scaled_dot_product_attention"} else "cnn"


@lru_cache(maxsize=4)
def load_summary(path: str | None = None) -> dict | None:
    """The shipped accuracy summary, or None when it is missing or unreadable (never an error)."""
    p = Path(path) if path else SUMMARY_PATH
    try:
        return json.loads(p.read_text())
    except (OSError, ValueError):
        return None


def expected_error(family: str, mode: str, calibrated: bool, summary: dict | None = None) -> dict | None:
    """The band for one (family, mode, calibrated): a dict with median_abs_error, worst_abs_error (fractions),
    n, card, family, mode, calibrated and a one-line ``text``; None when the report has no such band."""
    summary = summary if summary is not None else load_summary()
    if not summary:
        return None
    for band in summary.get("bands", []):
        if (band["family"], band["mode"], bool(band["calibrated"])) == (family, mode, bool(calibrated)):
            out = dict(band)
            out["card"] = summary.get("card_class", summary.get("card", "?"))
            out["text"] = describe(out)
            blind = summary.get("blind_rounds")
            if blind:
                out["blind_rounds"] = blind
                out["text"] += "; " + describe_blind(blind)
            return out
    return None


def describe(band: dict) -> str:
    """'expected error on H200-class measurements: median 9%, worst 27% (transformers, graph mode, calibrated)'."""
    family = {"cnn": "CNNs", "transformer": "transformers"}.get(band["family"], band["family"])
    cal = "calibrated" if band["calibrated"] else "datasheet defaults"
    return (f"expected error on {band['card']}-class measurements: median {band['median_abs_error']:.0%}, "
            f"worst {band['worst_abs_error']:.0%} ({family}, {band['mode']} mode, {cal}; n={band['n']})")


def describe_blind(rounds: list[dict]) -> str:
    """'on models never seen before: median 15-23%, worst up to 203% (4 blind rounds, graph, calibrated)'."""
    meds = [r["median_abs_error"] for r in rounds]
    worst = max(r["worst_abs_error"] for r in rounds)
    return (f"on models never seen before: median {min(meds):.0%}-{max(meds):.0%}, worst up to {worst:.0%} "
            f"({len(rounds)} blind rounds, graph mode, calibrated)")


def summarise_rows(rows: list[dict], card_class: str, source: str) -> dict:
    """The shipped summary from accuracy rows (dicts with family, mode, err_default, err_calibrated)."""
    from statistics import median

    bands = []
    for family in FAMILIES:
        for mode in ("graph", "eager"):
            for calibrated, key in ((False, "err_default"), (True, "err_calibrated")):
                vals = [abs(r[key]) for r in rows
                        if r.get("family") == family and r.get("mode") == mode and r.get(key) is not None]
                if vals:
                    bands.append({"family": family, "mode": mode, "calibrated": calibrated,
                                  "median_abs_error": round(median(vals), 4),
                                  "worst_abs_error": round(max(vals), 4), "n": len(vals)})
    return {"card_class": card_class, "source": source, "bands": bands}
