"""Rank devices for a model's workload under constraints. Pure: predictions in, ranked recommendations out.

For every candidate device the search finds the best operating point: with ``batch`` fixed, that batch;
otherwise the largest batch (powers of two up to ``max_batch``) that fits in memory and meets the latency
target, or without a latency target the smallest batch within 5% of the best throughput. With several
dtypes (``auto``: those the run mode's software runs, ``constraints.auto_dtypes``), each precision the device has
is tried and the best by the ranking is kept.

Ranking (``rank_by``): ``efficiency`` (default: throughput per watt of TDP at the operating point),
``latency`` (lowest), ``throughput`` (highest), ``price`` (throughput per dollar; devices without a price
rank last).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ..accuracy import ErrorBand, expected_error, model_family
from ..advice import advise
from ..calibration import Calibration
from ..catalog import Hardware
from ..errors import NothingFeasibleError, UnsupportedPrecisionError
from ..kinds import Mode
from ..roofline import Prediction, device_perf, predict
from ..units import format_seconds
from ..workload import NoteKind, Workload
from .constraints import Constraints, auto_dtype_note, filters_text
from .ranking import candidates, rank
from .results import Recommendation, RecommendResult, Rejection

# Explicit defaults: without a latency target, the operating point is the smallest batch within 5% of the best
# throughput (past it a bigger batch buys little and costs latency and memory); each row carries the first two
# advice sentences (the table has room for them; ``analyze`` shows all).
THROUGHPUT_PLATEAU = 0.95
ADVICE_PER_RECOMMENDATION = 2

# rank_by -> score of a recommendation (larger is better)
SCORES: dict[str, Callable[[Recommendation], float]] = {
    "efficiency": lambda r: r.throughput_per_watt,
    "latency": lambda r: -r.latency_s,
    "throughput": lambda r: r.throughput_per_s,
    "price": lambda r: r.throughput_per_kusd if r.throughput_per_kusd is not None else -1.0,
}


def _batches(c: Constraints) -> list[int]:
    if c.batch is not None:
        return [c.batch]
    out, b = [], 1
    while b <= c.max_batch:
        out.append(b)
        b *= 2
    return out


def _operating_point(preds: list[Prediction], c: Constraints) -> tuple[Prediction | None, str, float]:
    """Best prediction over batches for one device and dtype, or why none works and how close it came."""
    fitting = [p for p in preds if p.fits_memory]
    if not fitting:
        p = preds[0]
        need, have = p.memory_required_bytes / 1e9, p.memory_capacity_bytes / 1e9
        return None, f"needs {need:.1f} GB at batch {p.batch}, has {have:.0f} GB", have / need
    ok = fitting
    if c.latency_s is not None:
        ok = [p for p in fitting if p.latency_s <= c.latency_s]
        if not ok:
            p = fitting[0]
            return None, (f"{format_seconds(p.latency_s)} at batch {p.batch} > {format_seconds(c.latency_s)}"), \
                c.latency_s / p.latency_s
    if c.throughput_per_s is not None:
        ok2 = [p for p in ok if p.throughput_per_s >= c.throughput_per_s]
        if not ok2:
            best = max(ok, key=lambda p: p.throughput_per_s)
            return None, (f"{best.throughput_per_s:,.0f}/s at best (batch {best.batch}) < "
                          f"{c.throughput_per_s:,.0f}/s"), best.throughput_per_s / c.throughput_per_s
        ok = ok2
    if c.batch is not None or c.latency_s is not None:
        return max(ok, key=lambda p: p.batch), "", 1.0
    best_tp = max(p.throughput_per_s for p in ok)
    return min((p for p in ok if p.throughput_per_s >= THROUGHPUT_PLATEAU * best_tp), key=lambda p: p.batch), "", 1.0


def _best_on(hw: Hardware, workload_at, batches: list[int], family: str, c: Constraints,
             calibration_of) -> Recommendation | Rejection:
    """The best operating point on one device over the dtypes asked for, or why there is none."""
    cal, source = calibration_of(hw) if calibration_of else (None, "")
    perf = device_perf(hw, cal, source)
    best: Recommendation | None = None
    misses: list[tuple[float, str]] = []
    score = SCORES[c.rank_by]
    for dtype in c.dtypes:
        if dtype not in hw.dense_tops:
            misses.append((0.0, f"no {dtype}"))
            continue
        try:
            preds = _predict_batches(workload_at, batches, dtype, hw, perf, c)
        except UnsupportedPrecisionError as exc:
            misses.append((0.0, str(exc).split(";")[0]))
            continue
        point, reason, closeness = _operating_point(preds, c)
        if point is None:
            misses.append((closeness, f"{reason} ({dtype})" if len(c.dtypes) > 1 else reason))
            continue
        rec = _recommendation(point, hw, c, expected_error(family, c.mode, point.calibrated, hardware=hw,
                                                                dtype=dtype))
        if best is None or score(rec) > score(best):
            best = rec
    if best is not None:
        return best
    closeness, reason = max(misses, key=lambda m: m[0]) if misses else (0.0, "no usable precision")
    return Rejection(hardware=hw.id, reason=reason, closeness=closeness)


def _nothing(c: Constraints) -> Callable[[list[Rejection]], NothingFeasibleError]:
    def error(rejected: list[Rejection]) -> NothingFeasibleError:
        closest = max(rejected, key=lambda r: r.closeness)
        binding = ("latency" if c.latency_s else "throughput" if c.throughput_per_s else "memory")
        return NothingFeasibleError(
            f"no device meets the constraints ({filters_text(c)}); the {binding} target rules out every "
            f"candidate; closest miss: {closest.hardware}: {closest.reason}",
            hint=_relax_hint(c))

    return error


def _relax_hint(c: Constraints) -> str:
    """What else to try when nothing is feasible: only the options not already taken."""
    tries = ["relax the target"]
    if not c.dtype_auto:
        tries.append("allow another --dtype (or auto)")
    if c.mode == Mode.EAGER:
        tries.append("--mode graph")
    return ", ".join(tries[:-1]) + f", or {tries[-1]}" if len(tries) > 1 else tries[0]


def recommend(workload_at: Callable[[int, str], Workload], devices: Iterable[Hardware], c: Constraints,
              calibration_of: Callable[[Hardware], tuple[Calibration | None, str]] | None = None
              ) -> RecommendResult:
    """Rank ``devices`` for the workload ``workload_at(batch, dtype)`` under ``c``."""
    kept, rejected = candidates(devices, c)
    batches = _batches(c)
    first = workload_at(batches[0], c.dtypes[0])
    family = model_family(first)
    recs, rejected = rank(kept, rejected, c,
                          lambda hw: _best_on(hw, workload_at, batches, family, c, calibration_of),
                          SCORES, _nothing(c))
    notes = [f"ranked by {c.rank_by}" + {"efficiency": " (throughput per watt of TDP)",
                                          "price": " (throughput per 1000 USD of list price)"}.get(c.rank_by, ""),
             f"mode {c.mode}; latency is per batch"] + ([auto_dtype_note(c.mode)] if c.dtype_auto else [])
    if first.unsupported_ops:
        notes.append("unsupported operators counted as zero: "
                     + ", ".join(f"{k} x{v}" for k, v in first.unsupported_ops.items()))
    if c.mode != Mode.EAGER:  # a model CUDA graphs cannot capture (counting/notes.py)
        notes += [n.text for n in first.notes if n.kind == NoteKind.CAPTURE_FAILS]
    return RecommendResult(recommendations=recs, rejected=rejected, constraints=c, notes=tuple(notes))


def _predict_batches(workload_at, batches, dtype, hw, perf, c) -> list[Prediction]:
    preds = []
    for b in batches:
        p = predict(workload_at(b, dtype), hw, mode=c.mode, perf=perf)
        preds.append(p)
        if not p.fits_memory and c.batch is None:
            break  # larger batches need more memory still
        if c.latency_s is not None and p.latency_s > c.latency_s and c.batch is None and b > 1:
            break  # latency only grows with the batch
    return preds


def _recommendation(p: Prediction, hw: Hardware, c: Constraints, band: ErrorBand | None = None) -> Recommendation:
    tput = p.throughput_per_s
    price = hw.price_usd
    return Recommendation(
        hardware=hw.id, name=hw.name, dtype=p.dtype, batch=p.batch, mode=p.mode, latency_s=p.latency_s,
        throughput_per_s=tput, attainable_ops_per_s=p.attainable_ops_per_s, utilisation=p.utilisation,
        bound=p.bound, tdp_w=hw.tdp_w, tops_per_watt=p.attainable_ops_per_s / 1e12 / hw.tdp_w,
        throughput_per_watt=tput / hw.tdp_w, price_usd=price,
        throughput_per_kusd=tput / price * 1000 if price else None,
        headroom=c.latency_s / p.latency_s if c.latency_s else None, calibrated=p.calibrated,
        memory_required_bytes=p.memory_required_bytes, advice=tuple(advise(p, hw)[:ADVICE_PER_RECOMMENDATION]),
        expected_error=band, power_mode=hw.power_mode if hw.power_modes else None,
    )
