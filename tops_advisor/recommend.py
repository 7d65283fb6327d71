"""Rank devices for a workload under constraints. Pure: predictions in, ranked recommendations out.

For every candidate device the search finds the best operating point: with ``batch`` fixed, that batch;
otherwise the largest batch (powers of two up to ``max_batch``) that fits in memory and meets the latency
target, or without a latency target the smallest batch within 5% of the best throughput. With several
dtypes (``auto``), each precision the device has is tried and the best by the ranking is kept.

Ranking (``rank_by``): ``efficiency`` (default: throughput per watt of TDP at the operating point),
``latency`` (lowest), ``throughput`` (highest), ``price`` (throughput per dollar; devices without a price
rank last).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, PlainSerializer, computed_field, field_serializer

from .accuracy import expected_error, model_family
from .advice import advise
from .calibration import Calibration
from .catalog import Hardware
from .errors import InputError, NothingFeasibleError, UnsupportedPrecisionError
from .llm.parallel import NVLINK_NODE_GPUS
from .roofline import Prediction, device_perf, predict
from .units import format_seconds
from .workload import NoteKind, Workload

RANK_BY = ("efficiency", "latency", "throughput", "price")
SEGMENTS = ("edge", "workstation", "datacenter")
AUTO_DTYPES = ("fp32", "fp16", "bf16", "fp8", "int8")

# Explicit defaults: without a latency target, the operating point is the smallest batch within 5% of the best
# throughput (past it a bigger batch buys little and costs latency and memory); each row carries the first two
# advice sentences (the table has room for them; ``analyze`` shows all).
THROUGHPUT_PLATEAU = 0.95
ADVICE_PER_RECOMMENDATION = 2

# A tuple in the model (frozen), a list in its dump (JSON's shape).
Lines = Annotated[tuple[str, ...], PlainSerializer(list, return_type=list)]


@dataclass(frozen=True)
class Constraints:
    latency_s: float | None = None          # per batch
    throughput_per_s: float | None = None   # samples/s
    batch: int | None = None                # fixed batch; None = search
    dtypes: tuple[str, ...] = ("fp16",)
    segment: str | None = None
    max_power_w: float | None = None
    max_price_usd: float | None = None
    hardware: tuple[str, ...] = ()          # limit to these ids (already resolved)
    mode: str = "graph"
    rank_by: str = "efficiency"
    max_batch: int = 1024
    top: int | None = None

    def __post_init__(self):
        if self.rank_by not in RANK_BY:
            raise InputError(f"unknown --rank-by {self.rank_by!r}; expected one of {', '.join(RANK_BY)}")
        if self.segment is not None and self.segment not in SEGMENTS:
            from .suggest import did_you_mean

            raise InputError(f"unknown segment {self.segment!r}; expected one of {', '.join(SEGMENTS)}",
                             hint=did_you_mean(self.segment, SEGMENTS))
        if self.batch is not None and self.batch <= 0:
            raise InputError(f"--batch must be a positive integer, got {self.batch}")
        for name in ("latency_s", "throughput_per_s", "max_power_w", "max_price_usd"):
            v = getattr(self, name)
            if v is not None and v <= 0:
                raise InputError(f"{name} must be greater than zero, got {v}")
        if self.top is not None and self.top < 1:
            raise InputError(f"--top must be at least 1, got {self.top}", hint="leave --top out to show every device")


class Recommendation(BaseModel):
    """One device at its best operating point. Base units; the dump adds ms, TOPS and GB."""

    model_config = ConfigDict(frozen=True)

    hardware: str
    name: str
    dtype: str
    batch: int
    mode: str
    latency_s: float
    throughput_per_s: float
    attainable_ops_per_s: float
    utilisation: float
    bound: str
    tdp_w: float
    tops_per_watt: float             # attainable TOPS per watt of TDP
    throughput_per_watt: float
    price_usd: float | None
    throughput_per_kusd: float | None  # samples/s per 1000 USD
    headroom: float | None           # latency target / predicted latency (>= 1 meets it)
    calibrated: bool
    memory_required_bytes: float
    advice: Lines = ()
    expected_error: dict | None = None  # accuracy.expected_error's band for this model family, mode, calibration

    @computed_field
    @property
    def latency_ms(self) -> float:
        return self.latency_s * 1e3

    @computed_field
    @property
    def attainable_tops(self) -> float:
        return self.attainable_ops_per_s / 1e12

    @computed_field
    @property
    def memory_required_gb(self) -> float:
        return self.memory_required_bytes / 1e9


class Rejection(BaseModel):
    model_config = ConfigDict(frozen=True)

    hardware: str
    reason: str
    closeness: float = Field(0.0, exclude=True)  # how close it came (1 = met); used to name the closest miss


class RecommendResult(BaseModel):
    """Ranked devices (``Recommendation``, or ``LLMRecommendation`` for ``recommend --llm``) and the rest with
    why. ``notes``: how they were ranked, and what the counts left out (operators counted as zero)."""

    model_config = ConfigDict(frozen=True)

    recommendations: list[Recommendation] | list[LLMRecommendation]
    rejected: list[Rejection]
    constraints: Constraints
    notes: Lines = ()

    @computed_field
    @property
    def rank_by(self) -> str:
        return self.constraints.rank_by

    @field_serializer("constraints")
    def _constraints(self, c: Constraints) -> dict:
        return {**asdict(c), "dtypes": list(c.dtypes)}


def _score(r: Recommendation, rank_by: str) -> float:
    """Larger is better."""
    if rank_by == "latency":
        return -r.latency_s
    if rank_by == "throughput":
        return r.throughput_per_s
    if rank_by == "price":
        return r.throughput_per_kusd if r.throughput_per_kusd is not None else -1.0
    return r.throughput_per_watt


def _batches(c: Constraints) -> list[int]:
    if c.batch is not None:
        return [c.batch]
    out, b = [], 1
    while b <= c.max_batch:
        out.append(b)
        b *= 2
    return out


def _prefilter(hw: Hardware, c: Constraints) -> str | None:
    if c.hardware and hw.id not in c.hardware:
        return "not in --hardware"
    if c.segment and hw.segment != c.segment:
        return f"segment {hw.segment}, not {c.segment}"
    if c.max_power_w and hw.tdp_w > c.max_power_w:
        lowest = min(hw.power_modes_w) if hw.power_modes_w else None
        if lowest is None or lowest > c.max_power_w:
            return f"TDP {hw.tdp_w:g} W > {c.max_power_w:g} W"
    if c.max_price_usd:
        if hw.price_usd is None:
            return "no known price"
        if hw.price_usd > c.max_price_usd:
            return f"price ${hw.price_usd:,.0f} > ${c.max_price_usd:,.0f}"
    return None


def _candidates(devices: Iterable[Hardware], c: Constraints) -> tuple[list[Hardware], list[Rejection]]:
    """Devices that pass the filters, and the others with why (devices outside --hardware are dropped)."""
    candidates, rejected = [], []
    for hw in devices:
        why = _prefilter(hw, c)
        if why is None:
            candidates.append(hw)
        elif why != "not in --hardware":
            rejected.append(Rejection(hardware=hw.id, reason=why))
    if not candidates:
        raise NothingFeasibleError("no device left after filtering: " + _filters_text(c),
                                   hint="relax --segment, --max-power, --max-price or --hardware")
    return candidates, rejected


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


def recommend(workload_at: Callable[[int, str], Workload], devices: Iterable[Hardware], c: Constraints,
              calibration_of: Callable[[Hardware], tuple[Calibration | None, str]] | None = None
              ) -> RecommendResult:
    """Rank ``devices`` for the workload ``workload_at(batch, dtype)`` under ``c``."""
    recs: list[Recommendation] = []
    candidates, rejected = _candidates(devices, c)
    batches = _batches(c)
    first = workload_at(batches[0], c.dtypes[0])
    family = model_family(first)
    for hw in candidates:
        cal, source = calibration_of(hw) if calibration_of else (None, "")
        perf = device_perf(hw, cal, source)
        best: Recommendation | None = None
        misses: list[tuple[float, str]] = []
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
            if best is None or _score(rec, c.rank_by) > _score(best, c.rank_by):
                best = rec
        if best is not None:
            recs.append(best)
        else:
            closeness, reason = max(misses, key=lambda m: m[0]) if misses else (0.0, "no usable precision")
            rejected.append(Rejection(hardware=hw.id, reason=reason, closeness=closeness))
    recs.sort(key=lambda r: _score(r, c.rank_by), reverse=True)
    if c.top:
        recs = recs[: c.top]
    if not recs:
        closest = max(rejected, key=lambda r: r.closeness)
        binding = ("latency" if c.latency_s else "throughput" if c.throughput_per_s else "memory")
        raise NothingFeasibleError(
            f"no device meets the constraints ({_filters_text(c)}); the {binding} target rules out every "
            f"candidate; closest miss: {closest.hardware}: {closest.reason}",
            hint="relax the target, allow another --dtype (or auto), or --mode graph")
    notes = [f"ranked by {c.rank_by}" + {"efficiency": " (throughput per watt of TDP)",
                                          "price": " (throughput per 1000 USD of list price)"}.get(c.rank_by, ""),
             f"mode {c.mode}; latency is per batch"]
    if first.unsupported_ops:
        notes.append("unsupported operators counted as zero: "
                     + ", ".join(f"{k} x{v}" for k, v in first.unsupported_ops.items()))
    if c.mode != "eager":  # a model CUDA graphs cannot capture (counting/notes.py)
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


def _recommendation(p: Prediction, hw: Hardware, c: Constraints, band: dict | None = None) -> Recommendation:
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
        expected_error=band,
    )


def _filters_text(c: Constraints) -> str:
    parts = []
    if c.latency_s:
        parts.append(f"latency <= {format_seconds(c.latency_s)}")
    if c.throughput_per_s:
        parts.append(f"throughput >= {c.throughput_per_s:g}/s")
    if c.segment:
        parts.append(f"segment {c.segment}")
    if c.max_power_w:
        parts.append(f"power <= {c.max_power_w:g} W")
    if c.max_price_usd:
        parts.append(f"price <= ${c.max_price_usd:,.0f}")
    if c.hardware:
        parts.append(f"hardware {', '.join(c.hardware)}")
    parts.append(f"dtype {'/'.join(c.dtypes)}")
    return ", ".join(parts)


# --- LLM form: devices and device counts for a language model ------------------------------------------

class LLMRecommendation(BaseModel):
    """The fewest devices of one kind for an LLM. Base units; the dump adds ms and GB, and the keys the model
    form's table reads (latency_ms as the time per output token, dtype and batch as None)."""

    model_config = ConfigDict(frozen=True)

    hardware: str
    devices: int                 # tensor-parallel degree needed
    tokens_per_s: float          # decode tokens/s per request
    ttft_s: float
    tpot_s: float
    memory_required_bytes: float  # per device
    bound: str
    total_tdp_w: float
    tokens_per_s_per_watt: float  # per request, over all devices' TDP
    price_usd: float | None      # all devices
    calibrated: bool
    why: str

    @computed_field
    @property
    def latency_ms(self) -> float:
        return self.tpot_s * 1e3

    @computed_field
    @property
    def ttft_ms(self) -> float:
        return self.ttft_s * 1e3

    @computed_field
    @property
    def memory_required_gb(self) -> float:
        return self.memory_required_bytes / 1e9

    @computed_field
    @property
    def dtype(self) -> None:
        return None

    @computed_field
    @property
    def batch(self) -> None:
        return None

    @computed_field
    @property
    def throughput_per_s(self) -> float:
        return self.tokens_per_s


def recommend_llm(cfg, devices: Iterable[Hardware], c: Constraints, *, tokens_per_s: float | None,
                  ttft_s: float | None, batch: int = 1, prompt: int | None = None, generate: int | None = None,
                  max_devices: int = NVLINK_NODE_GPUS, calibration_of=None) -> RecommendResult:
    """Rank devices (and how many of each) for an LLM: the fewest devices of a kind that fit the model and meet
    ``tokens_per_s`` (per request) and ``ttft_s``. Ranking as for models: efficiency = tokens/s per watt of
    all devices' TDP, price = tokens/s per 1000 USD of all devices."""
    from .llm import plan_llm
    from .llm.analysis import roofline_predictor

    recs: list[LLMRecommendation] = []
    candidates, rejected = _candidates(devices, c)
    kwargs = {k: v for k, v in (("prompt", prompt), ("generate", generate)) if v is not None}
    for hw in candidates:
        cal, source = calibration_of(hw) if calibration_of else (None, "")
        plan = plan_llm(cfg, hw, tokens_per_s=tokens_per_s, ttft_s=ttft_s, batch=batch, mode=c.mode,
                        max_devices=max_devices, calibration=cal,
                        predictor=roofline_predictor(hw, cal, source), **kwargs)
        if not plan.meets_targets or plan.analysis is None or plan.devices is None:
            rejected.append(Rejection(hardware=hw.id, reason=plan.why))
            continue
        a, n = plan.analysis, plan.devices
        rate = 1.0 / a.tpot_s
        recs.append(LLMRecommendation(
            hardware=hw.id, devices=n, tokens_per_s=rate, ttft_s=a.ttft_s, tpot_s=a.tpot_s,
            memory_required_bytes=a.memory_required_bytes, bound=a.bound, total_tdp_w=n * hw.tdp_w,
            tokens_per_s_per_watt=rate / (n * hw.tdp_w), price_usd=n * hw.price_usd if hw.price_usd else None,
            calibrated=cal is not None, why=plan.why))
    key = {
        "efficiency": lambda r: r.tokens_per_s_per_watt,
        "latency": lambda r: -r.tpot_s,
        "throughput": lambda r: r.tokens_per_s,
        "price": lambda r: r.tokens_per_s / r.price_usd if r.price_usd else -1.0,
    }[c.rank_by]
    recs.sort(key=key, reverse=True)
    if c.top:
        recs = recs[: c.top]
    if not recs:
        raise NothingFeasibleError(
            f"no device meets the targets ({_filters_text(c)}); e.g. {rejected[0].hardware}: {rejected[0].reason}"
            if rejected else "no device meets the targets",
            hint="relax --tokens-per-s or --ttft, or allow more devices (--max-devices)")
    notes = [f"ranked by {c.rank_by}" + {"efficiency": " (tokens/s per watt of all devices' TDP)"}.get(c.rank_by, ""),
             f"mode {c.mode}; tokens/s per request at batch {batch}"]
    return RecommendResult(recommendations=recs, rejected=rejected, constraints=c, notes=tuple(notes))
