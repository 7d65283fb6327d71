"""How wrong our predictions are, from the published accuracy report (pure: no torch).

``benchmarks/reports/accuracy.py`` measures nothing itself: it puts predictions beside recorded GPU measurements,
writes docs/reports/accuracy-h200.md and the small summary shipped here (``data/accuracy_h200.json``): the median and
worst absolute relative error per model family (cnn / transformer), mode (graph / eager) and whether the
prediction was calibrated. ``expected_error`` looks a prediction's band up, so that ``analyze`` can say how
far off it has been on real measurements of that kind of model.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from .kinds import Mode

FAMILIES = ("cnn", "transformer")
SUMMARY_PATH = Path(__file__).parent / "data" / "accuracy_h200.json"
# Per-card bands from published measurements on other cards (docs/published.md); regenerate with
# ``python benchmarks/reports/published_score.py --write-bands``.
CARDS_PATH = Path(__file__).parent / "data" / "accuracy_cards.json"
# Bands from blind rounds for what the model-file report does not cover: compiled mode and autocast (AMP);
# written by ``benchmarks/harness/blind_round.py score ... --write-band``.
BLIND_PATH = Path(__file__).parent / "data" / "accuracy_h200_blind.json"


BandSource = Literal["report", "blind", "published"]


class RoundBand(BaseModel):
    """One blind round's |error| band (fractions)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    median_abs_error: float
    worst_abs_error: float


class ErrorBand(BaseModel):
    """How far off predictions of one kind have been: median and worst absolute relative error (fractions)
    over ``n`` measured points, and a one-line ``text``.

    ``source`` says which measurements: ``report`` (the H200 accuracy report, per family, mode and
    calibration), ``blind`` (a blind round: compiled mode and AMP) or ``published`` (published measurements
    of this card, or of the cards named by ``basis`` when it has too few points of its own). Fields a source
    does not have are None (or empty)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    source: BandSource
    median_abs_error: float
    worst_abs_error: float
    n: int
    card: str                          # the card (or card class) the measurements were taken on
    text: str
    family: str | None = None          # cnn | transformer
    mode: str | None = None
    calibrated: bool | None = None
    dtype: str | None = None           # blind: the precision the round measured
    round: str | None = None           # blind: which round
    basis: str | None = None           # published: whose measurements (the card, its class or all cards)
    blind_rounds: tuple[RoundBand, ...] = ()  # report: each blind round's band, for the text's second part
    borrowed_from: str | None = None   # whose measurements, when not the card's own: its class, every card, the H200
    unmeasured: bool | None = None     # True: the card has no published point of its own (None otherwise)
    median_error: float | None = None  # published: the median signed error (negative: predicted faster than measured)

    @property
    def borrowed(self) -> bool:
        """Whether the band comes from measurements of other cards than the one predicted."""
        return self.borrowed_from is not None


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


def expected_error(family: str, mode: str, calibrated: bool, summary: dict | None = None, hardware=None,
                   cards: dict | None = None, dtype: str | None = None) -> ErrorBand | None:
    """The band for one (family, mode, calibrated) from the report; None when the report has no such band.

    ``hardware`` (a catalog Hardware): for a datasheet-only prediction on a card other than the one the H200
    summary was measured on, the band from published measurements of that card (``card_band``) instead.
    Compiled mode and ``dtype`` "amp" take the band of the blind round that measured them (``blind_band``)."""
    if mode == Mode.TENSORRT:   # published engines (MLPerf, TensorRT's demos): their own bands
        return tensorrt_expected_error(hardware, calibrated, cards, family)
    summary = summary if summary is not None else load_summary()
    other_card = hardware is not None and hardware.id != (summary or {}).get("hardware")
    if other_card and not calibrated:
        band = card_band(hardware, "model", cards)
        if band is not None:
            return band.model_copy(update={"family": family, "mode": mode, "calibrated": False})
    band = _h200_band(family, mode, calibrated, summary, dtype)
    return borrowed_h200_band(band, hardware) if band is not None and other_card else band


def borrowed_h200_band(band: ErrorBand, hardware) -> ErrorBand:
    """An H200 band quoted for another card (a calibrated prediction, or no published band of it): marked borrowed."""
    return band.model_copy(update={
        "borrowed_from": f"{band.card} measurements",
        "text": band.text + f"; borrowed: measured on the {band.card}, not on {hardware.id}"})


def _h200_band(family: str, mode: str, calibrated: bool, summary: dict | None, dtype: str | None
               ) -> ErrorBand | None:
    """The H200 report's band (or a blind round's, for compiled mode and AMP) of one kind of prediction."""
    if mode == Mode.COMPILED or dtype == "amp":
        return blind_band(mode, "amp" if dtype == "amp" else "fp16", calibrated)
    if not summary:
        return None
    for band in summary.get("bands", []):
        if (band["family"], band["mode"], bool(band["calibrated"])) == (family, mode, bool(calibrated)):
            out = report_band(band, summary.get("card_class", summary.get("card", "?")))
            blind = summary.get("blind_rounds")
            text = describe(out) + ("; " + describe_blind(blind) if blind else "")
            return out.model_copy(update={"text": text, "blind_rounds": tuple(RoundBand(**r) for r in blind or ())})
    return None


def report_band(row: dict, card: str) -> ErrorBand:
    """One band row of the H200 accuracy summary (family, mode, calibrated, errors, n) as an ErrorBand measured
    on ``card``, without its text."""
    return ErrorBand(source="report", family=row["family"], mode=row["mode"], calibrated=row["calibrated"],
                     median_abs_error=row["median_abs_error"], worst_abs_error=row["worst_abs_error"], n=row["n"],
                     card=card, text="")


def blind_band(mode: str, dtype: str, calibrated: bool, doc: dict | None = None) -> ErrorBand | None:
    """The |error| band a blind round measured for ``mode`` and ``dtype`` on the H200 (compiled mode and AMP,
    which the model-file report does not cover), with a one-line ``text``; None without one."""
    doc = doc if doc is not None else load_summary(str(BLIND_PATH))
    for band in (doc or {}).get("bands", []):
        if (band["mode"], band["dtype"], bool(band["calibrated"])) == (mode, dtype, bool(calibrated)):
            cal = "calibrated" if calibrated else "datasheet defaults"
            text = (f"expected error on H200-class measurements of models never seen before ({band['round']}): "
                    f"median {band['median_abs_error']:.0%}, worst {band['worst_abs_error']:.0%} ({mode} mode, "
                    f"{dtype}, {cal}; n={band['n']})")
            return ErrorBand(source="blind", mode=band["mode"], dtype=band["dtype"], calibrated=bool(calibrated),
                             round=band["round"], median_abs_error=band["median_abs_error"],
                             worst_abs_error=band["worst_abs_error"], n=band["n"], card=doc.get("hardware", "?"),
                             text=text)
    return None


def describe(band: ErrorBand) -> str:
    """'expected error on H200-class measurements: median 9%, worst 27% (transformers, graph mode, calibrated)'."""
    family = {"cnn": "CNNs", "transformer": "transformers"}.get(band.family, band.family)
    cal = "calibrated" if band.calibrated else "datasheet defaults"
    return (f"expected error on {band.card}-class measurements: median {band.median_abs_error:.0%}, "
            f"worst {band.worst_abs_error:.0%} ({family}, {band.mode} mode, {cal}; n={band.n})")


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
        for mode in (Mode.GRAPH, Mode.EAGER):
            for calibrated, key in ((False, "err_default"), (True, "err_calibrated")):
                vals = [abs(r[key]) for r in rows
                        if r.get("family") == family and r.get("mode") == mode and r.get(key) is not None]
                if vals:
                    bands.append({"family": family, "mode": mode, "calibrated": calibrated,
                                  "median_abs_error": round(median(vals), 4),
                                  "worst_abs_error": round(max(vals), 4), "n": len(vals)})
    return {"card_class": card_class, "source": source, "bands": bands}


def card_class(hardware) -> str:
    """'Ampere workstation': the architecture and segment, the class a card without published points borrows
    its band from."""
    return f"{hardware.architecture} {hardware.segment}"


KIND_WORDS = {"model": "model files", "llm": "LLM runs", "gemm": "single GEMMs", "tensorrt": "TensorRT engines",
              "all": "all workloads"}
MIN_CARD_POINTS = 4  # fewer points than this say little about a card: its class's band is used instead


def card_band(hardware, kind: str = "model", cards: dict | None = None) -> ErrorBand | None:
    """The |error| band of datasheet predictions against published measurements (data/accuracy_cards.json)
    for this card and kind of workload ('model' files, 'llm' runs): the card's own points when it has at
    least ``MIN_CARD_POINTS`` of that kind, else its class's (architecture and segment), else every card's;
    only when no level has that kind, the same levels over all kinds (never for 'tensorrt': an engine is not
    priced like PyTorch). None when the file is missing. The band's ``card`` is this card; ``basis`` whose
    measurements it holds."""
    doc = cards if cards is not None else load_summary(str(CARDS_PATH))
    if not doc:
        return None
    cls = card_class(hardware)
    own = doc.get("cards", {}).get(hardware.id) or {}
    levels = ((own, hardware.id), (doc.get("classes", {}).get(cls), f"{cls} cards"),
              (doc.get("all_cards"), "all published cards"))
    for key in (kind,) if kind == "tensorrt" else (kind, "all"):
        for bands, basis in levels:
            band = (bands or {}).get(key)
            if band and band["n"] >= MIN_CARD_POINTS:
                text = (f"expected error from published measurements on {basis} (datasheet defaults, "
                        f"{KIND_WORDS.get(key, key)}; n={band['n']}): median "
                        f"{band['median_abs_error']:.0%}, worst {band['worst_abs_error']:.0%}")
                text += _bias_clause(band.get("median_error"), band["median_abs_error"])
                borrowed = basis != hardware.id
                unmeasured = borrowed and not any(b.get("n", 0) for b in own.values())
                if borrowed:
                    text += "; " + _borrowed_clause(hardware.id, own.get(key, {}).get("n", 0), key, unmeasured)
                return ErrorBand(source="published", median_abs_error=band["median_abs_error"],
                                 worst_abs_error=band["worst_abs_error"], n=band["n"], card=hardware.id,
                                 median_error=band.get("median_error"),
                                 basis=basis, text=text, borrowed_from=basis if borrowed else None,
                                 unmeasured=True if unmeasured else None)
    return None


BIAS_MIN = 0.10         # a median signed error this large ...
BIAS_SHARE = 2 / 3      # ... and this share of the median |error| is a lean in one direction, said in the text


def _bias_clause(median_error: float | None, median_abs_error: float) -> str:
    """'; predictions lean fast (shorter than measured): median -34%' where most of a band's error is in one
    direction, else ''."""
    if median_error is None or abs(median_error) < max(BIAS_MIN, BIAS_SHARE * median_abs_error):
        return ""
    lean = "fast (shorter than measured)" if median_error < 0 else "slow (longer than measured)"
    return f"; predictions lean {lean}: median {median_error:+.0%}"


def _borrowed_clause(card: str, own_points: int, key: str, unmeasured: bool) -> str:
    """Why a card's band is another's: it has no published point at all, or too few of this kind."""
    if unmeasured:
        return f"borrowed: {card} is an unmeasured card (no published point of its own)"
    return (f"borrowed: {card} has {own_points} published point{'s' if own_points != 1 else ''} of "
            f"{KIND_WORDS.get(key, key)}, fewer than {MIN_CARD_POINTS}")


def tensorrt_expected_error(hardware, calibrated: bool, cards: dict | None = None,
                            family: str | None = None) -> ErrorBand | None:
    """The band a TensorRT engine prediction quotes: published engines on this card (else its class, else every
    card; ``card_band`` with kind 'tensorrt'), all of them predicted from the datasheet; None without a card."""
    band = card_band(hardware, "tensorrt", cards) if hardware is not None else None
    if band is None:
        return None
    band = band.model_copy(update={"family": family, "mode": Mode.TENSORRT, "calibrated": False})
    if calibrated:
        band = band.model_copy(update={
            "text": band.text + " (a calibration replaces the device rates; this band is of datasheet predictions)"})
    return band


def llm_expected_error(hardware, calibrated: bool, cards: dict | None = None) -> ErrorBand | None:
    """The band ``llm`` quotes: published LLM measurements of this card (else its class, else every card),
    all of them predicted from the datasheet; a calibrated run says so, since no calibrated LLM run of another
    card has been scored."""
    band = card_band(hardware, "llm", cards)
    if band is not None and calibrated:
        return band.model_copy(update={
            "text": band.text + " (a calibration replaces the device rates; this band is of datasheet predictions)"})
    return band
