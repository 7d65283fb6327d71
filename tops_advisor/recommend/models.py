"""Rank devices for a model's workload under constraints. Pure: predictions in, ranked recommendations out.

For every candidate device the search finds the best operating point: with ``batch`` fixed, that batch;
otherwise the largest batch (powers of two up to ``max_batch``) that fits in memory and meets the latency
target, or without a latency target the smallest batch within 5% of the best throughput. With several
dtypes (``auto``: those the run mode's software runs, ``constraints.auto_dtypes``), each precision the device has
is tried and the best by the ranking is kept (under price and cost, the fastest: a card's price is the same at
every precision).

Ranking (``rank_by``): ``efficiency`` (default: throughput per watt of TDP at the operating point),
``latency`` (lowest), ``throughput`` (highest), ``price`` (throughput per 1000 USD of purchase price), ``cost``
(lowest USD per million samples, rented or bought as ``price_kind`` says; a throughput target is then the
fleet's total, and each device gets the replicas it needs). Every recommendation carries its cost where the
device has a price (``Pricing``); under price and cost, a device without one is listed under ``no_price``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ..accuracy import ErrorBand, expected_error, model_family
from ..advice import advise
from ..calibration import Calibration
from ..catalog import Hardware
from ..costs import PriceKind, Pricing, busy_fraction, fleet_for
from ..errors import NothingFeasibleError, UnsupportedPrecisionError
from ..kinds import Mode
from ..roofline import Prediction, device_perf, predict
from ..units import format_seconds
from ..workload import NoteKind, Workload
from .constraints import Constraints, auto_dtype_note, filters_text
from .ranking import budget_screen, candidates, cost_note, money_error, rank, require_pricing, unpriced_screen
from .results import CostFields, Recommendation, RecommendResult, Rejection

# Explicit defaults: without a latency target, the operating point is the smallest batch within 5% of the best
# throughput (past it a bigger batch buys little and costs latency and memory); each row carries the first two
# advice sentences (the table has room for them; ``analyze`` shows all).
THROUGHPUT_PLATEAU = 0.95
ADVICE_PER_RECOMMENDATION = 2

# rank_by -> score of a recommendation (larger is better); price and cost rank priced recommendations only
SCORES: dict[str, Callable[[Recommendation], float]] = {
    "efficiency": lambda r: r.throughput_per_watt,
    "latency": lambda r: -r.latency_s,
    "throughput": lambda r: r.throughput_per_s,
    "price": lambda r: r.throughput_per_kusd,
    "cost": lambda r: -r.usd_per_million,
}
# rank_by -> how one device's precisions are compared (larger is better). A card costs the same at every
# precision, so throughput per dollar follows throughput, and so does cost (but for the electricity a lighter load
# saves); a device without a price gets the point the throughput ranking gives it, never one of its own.
CHOICE: dict[str, Callable[[Recommendation], object]] = {
    **SCORES, "price": lambda r: r.throughput_per_s,
    "cost": lambda r: (-r.usd_per_million if r.usd_per_million is not None else 0.0, r.throughput_per_s),
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
    if c.throughput_per_s is not None and c.fleet_target_per_s is None:   # a fleet's total: replicas reach it
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
             calibration_of, pricing: Pricing | None) -> Recommendation | Rejection:
    """The best operating point on one device over the dtypes asked for, or why there is none."""
    cal, source = calibration_of(hw) if calibration_of else (None, "")
    perf = device_perf(hw, cal, source)
    best: Recommendation | None = None
    misses: list[tuple[float, str]] = []
    score = CHOICE[c.rank_by]
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
                                                                dtype=dtype), pricing)
        if best is None or score(rec) > score(best):
            best = rec
    if best is not None:
        return best
    closeness, reason = max(misses, key=lambda m: m[0]) if misses else (0.0, "no usable precision")
    return Rejection(hardware=hw.id, reason=reason, closeness=closeness)


def _nothing(c: Constraints, no_price: list[Rejection]) -> Callable[[list[Rejection]], NothingFeasibleError]:
    def error(rejected: list[Rejection]) -> NothingFeasibleError:
        money = money_error(c, rejected, no_price)
        if money is not None:
            return money
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
              calibration_of: Callable[[Hardware], tuple[Calibration | None, str]] | None = None,
              pricing: Pricing | None = None) -> RecommendResult:
    """Rank ``devices`` for the workload ``workload_at(batch, dtype)`` under ``c``. ``pricing``
    (``costs.load_pricing(catalog)``) gives every recommendation its cost; ranking by price or cost, or a
    budget, needs it."""
    require_pricing(c, pricing)
    kept, rejected = candidates(devices, c, purchase_price(pricing))
    batches = _batches(c)
    first = workload_at(batches[0], c.dtypes[0])
    family = model_family(first)
    no_price: list[Rejection] = []
    by_id = {hw.id: hw for hw in kept}
    recs, rejected = rank(kept, rejected, c,
                          lambda hw: _best_on(hw, workload_at, batches, family, c, calibration_of, pricing),
                          SCORES, _nothing(c, no_price), unpriced=unpriced_screen(c, pricing, by_id),
                          no_price=no_price, refuse=budget_screen(c))
    notes = [_ranking_note(c, pricing), f"mode {c.mode}; latency is per batch"]
    if c.dtype_auto:
        notes.append(auto_dtype_note(c.mode))
    if c.fleet_target_per_s:
        notes.append(f"throughput {c.fleet_target_per_s:,.0f}/s is the fleet's total: each device runs as many "
                     "replicas as it needs")
    if first.unsupported_ops:
        notes.append("unsupported operators counted as zero: "
                     + ", ".join(f"{k} x{v}" for k, v in first.unsupported_ops.items()))
    if c.mode != Mode.EAGER:  # a model CUDA graphs cannot capture (counting/notes.py)
        notes += [n.text for n in first.notes if n.kind == NoteKind.CAPTURE_FAILS]
    return RecommendResult(recommendations=recs, rejected=rejected, no_price=no_price, constraints=c,
                           notes=tuple(notes))


def _ranking_note(c: Constraints, pricing: Pricing | None) -> str:
    """How the ranking reads: 'ranked by cost (USD per million samples, rented: ...)'."""
    if c.rank_by == "efficiency":
        return "ranked by efficiency (throughput per watt of TDP)"
    if c.rank_by == "price":
        return "ranked by price (throughput per 1000 USD of purchase price)"
    if c.rank_by != "cost":
        return f"ranked by {c.rank_by}"
    return cost_note(c, pricing, "samples")


def _purchase_usd(hw: Hardware, pricing: Pricing | None) -> float | None:
    """A card's purchase price: the price files' cheapest current one (a device file's own without pricing)."""
    if pricing is None:
        return hw.price_usd
    price = pricing.price(hw, PriceKind.PURCHASE)
    return price.usd if price is not None else None


def purchase_price(pricing: Pricing | None) -> Callable[[Hardware], float | None]:
    """``hw -> its purchase price`` (``_purchase_usd``), for --max-price and ranking by price."""
    return lambda hw: _purchase_usd(hw, pricing)


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


def _recommendation(p: Prediction, hw: Hardware, c: Constraints, band: ErrorBand | None = None,
                    pricing: Pricing | None = None) -> Recommendation:
    tput = p.throughput_per_s
    price = _purchase_usd(hw, pricing)
    return Recommendation(
        hardware=hw.id, name=hw.name, dtype=p.dtype, batch=p.batch, mode=p.mode, latency_s=p.latency_s,
        throughput_per_s=tput, attainable_ops_per_s=p.attainable_ops_per_s, utilisation=p.utilisation,
        bound=p.bound, tdp_w=hw.tdp_w, tops_per_watt=p.attainable_ops_per_s / 1e12 / hw.tdp_w,
        throughput_per_watt=tput / hw.tdp_w, price_usd=price,
        throughput_per_kusd=tput / price * 1000 if price else None,
        headroom=c.latency_s / p.latency_s if c.latency_s else None, calibrated=p.calibrated,
        memory_required_bytes=p.memory_required_bytes, advice=tuple(advise(p, hw)[:ADVICE_PER_RECOMMENDATION]),
        expected_error=band, power_mode=hw.power_mode if hw.power_modes else None,
        **_cost_fields(p, hw, c, pricing),
    )


def _cost_fields(p: Prediction, hw: Hardware, c: Constraints, pricing: Pricing | None) -> dict:
    """One operating point's replicas (for the total a ranking by cost asks for) and what they cost at the price
    kind asked for; why not, where the device has no such price. Each replica runs its share of the load, busy
    the share of its time the roofline puts in compute- and memory-bound operators."""
    fleet = fleet_for(p.throughput_per_s, c.fleet_target_per_s)
    if pricing is None:
        return {"replicas": fleet.replicas}
    kind = PriceKind(c.price_kind)
    cost = pricing.cost(hw, kind, units_per_s=fleet.served_per_s, devices=fleet.replicas,
                        busy=busy_fraction(p.time_by_bound_s, p.latency_s) * fleet.load)
    if cost is None:
        return {"replicas": fleet.replicas, "no_price_reason": pricing.missing(hw, kind)}
    return {"replicas": fleet.replicas, **CostFields.of(cost)}
