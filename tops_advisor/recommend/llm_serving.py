"""Serving plans for a language model: for each device kind, precision and tensor-parallel degree, the most
requests one replica serves at once with continuous batching and chunked prefill (``llm/serving.py``); each
kind's best plan, ranked; with a request rate, the replicas and the fleet's cost.

Money: a replica costs its devices' rental price per GPU-hour (the cheapest current one, ``catalog/prices.py``);
``usd_per_million`` is that over the generated tokens it produces in an hour (``_usd_per_million``)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from ..catalog import Hardware
from ..catalog.prices import DevicePrice, PriceKind, device_prices, load_prices
from ..errors import InputError, UnsupportedPrecisionError
from ..llm.analysis import DEFAULT_CONTEXT, DEFAULT_GENERATE, PhaseRunner, link_for_or_none
from ..llm.engines import KernelSetup
from ..llm.parallel import NVLINK_NODE_GPUS, valid_tp_degrees
from ..llm.serving import (
    BUDGET,
    MEMORY,
    RATE,
    TOKEN_BUDGET,
    TTFT,
    ServingPoint,
    ServingTargets,
    check_lengths,
    serve,
    token_budget_for,
)
from ..units import format_seconds
from .constraints import Constraints
from .llm import LLMRun, nothing_error, rejection
from .ranking import candidates, rank
from .results import LLMServingRecommendation, RecommendResult, Rejection

SECONDS_PER_HOUR = 3600.0

# rank_by -> score of a serving plan (larger is better); cost: the cheapest fleet (with a request rate) or the
# cheapest million tokens, unpriced plans last
SCORES: dict[str, Callable[[LLMServingRecommendation], float]] = {
    "efficiency": lambda r: r.tokens_per_s_per_watt,
    "latency": lambda r: -r.step_s,
    "throughput": lambda r: r.tokens_per_s_per_gpu,
    "price": lambda r: r.tokens_per_s / r.price_usd if r.price_usd else -1.0,
    "cost": lambda r: -(r.fleet_usd_per_hour if r.replicas is not None else r.usd_per_million)
    if r.usd_per_hour is not None else -math.inf,
}
SCORE_TEXT = {"efficiency": "tokens/s per watt of TDP", "latency": "shortest step", "throughput": "tokens/s per GPU",
              "price": "tokens/s per 1000 USD of list price", "cost": "USD per million tokens, rented"}


def _usd_per_million(usd_per_hour: float, tokens_per_s: float) -> float:
    """US dollars per million tokens of a machine costing ``usd_per_hour`` that makes ``tokens_per_s``."""
    return usd_per_hour / (tokens_per_s * SECONDS_PER_HOUR) * 1e6


def replicas_needed(requests_per_s: float, per_replica: float) -> int:
    """Replicas that together complete ``requests_per_s``, each completing ``per_replica`` requests/s."""
    return math.ceil(requests_per_s / per_replica - 1e-9)


@dataclass(frozen=True)
class ServingAsk:
    """What a serving plan must meet: request lengths, the per-user decode rate, TTFT, the request rate to
    serve (None: no fleet) and the step token budget (None: vLLM's default for each device)."""

    prompt: int = DEFAULT_CONTEXT
    generate: int = DEFAULT_GENERATE
    tokens_per_s: float | None = None
    ttft_s: float | None = None
    requests_per_s: float | None = None
    token_budget: int | None = None

    def __post_init__(self):
        for name, option in (("tokens_per_s", "--tokens-per-s"), ("ttft_s", "--ttft"),
                             ("requests_per_s", "--requests-per-s")):
            v = getattr(self, name)
            if v is not None and not v > 0:
                raise InputError(f"{option} must be greater than zero, got {v:g}")
        self.targets(None)  # lengths and budget checked once, before any device

    def targets(self, hw: Hardware | None) -> ServingTargets:
        budget = self.token_budget or (token_budget_for(hw) if hw is not None else TOKEN_BUDGET)
        return ServingTargets(prompt=self.prompt, generate=self.generate, token_budget=budget,
                              tokens_per_s=self.tokens_per_s, ttft_s=self.ttft_s)


def rental_prices(catalog) -> Callable[[Hardware], DevicePrice | None]:
    """The cheapest current rental price per GPU-hour of each device (the user's own prices first:
    ``TOPS_ADVISOR_PRICES``), or None."""
    shipped, user = load_prices(catalog)
    return lambda hw: device_prices(hw, shipped, user).cheapest(PriceKind.RENTAL)


def _why_none(point: ServingPoint, hw: Hardware, t: ServingTargets) -> str:
    """Why not even one request fits the targets on this replica."""
    n = point.tp
    at = f"at {n} device{'s' if n > 1 else ''}"
    if point.limited_by == MEMORY:
        return (f"{at}: one request needs {point.memory.total_bytes / 1e9:.1f} GB per device "
                f"({point.memory.weights_bytes / 1e9:.1f} weights) but {hw.id} has {hw.memory_bytes / 1e9:.0f} GB")
    if point.limited_by == BUDGET:
        return f"{at}: prompt {t.prompt} / generate {t.generate} needs more than {t.token_budget} tokens per step"
    if point.limited_by == RATE:
        return f"{at}: {1.0 / point.step_s:.3g} tokens/s per request with one request < {t.tokens_per_s:g}"
    if point.limited_by == TTFT:
        return f"{at}: TTFT {format_seconds(point.ttft_s)} with one request > {format_seconds(t.ttft_s)}"
    return f"{at}: {point.limited_by}"


def _recommendation(hw: Hardware, point: ServingPoint, k: KernelSetup, ask: ServingAsk,
                    price: DevicePrice | None, calibrated: bool) -> LLMServingRecommendation:
    n, rate = point.tp, point.tokens_per_s
    per_hour = price.usd * n if price else None
    replicas = replicas_needed(ask.requests_per_s, point.requests_per_s) if ask.requests_per_s else None
    source = None
    if price is not None:
        source = price.whose if price.source is None else \
            f"{price.provider + ': ' if price.provider else ''}{price.source.title}" + \
            (f" ({price.source.url})" if price.source.url else "")
    return LLMServingRecommendation(
        hardware=hw.id, devices=n, concurrent_requests=point.concurrent_requests, limited_by=point.limited_by,
        tokens_per_s_per_request=point.tokens_per_s_per_request, tokens_per_s=rate,
        tokens_per_s_per_gpu=point.tokens_per_s_per_gpu, requests_per_s=point.requests_per_s, ttft_s=point.ttft_s,
        step_s=point.step_s, decode_step_s=point.decode_step_s, prefill_s=point.prefill_s,
        token_budget=point.token_budget, prompt=point.prompt, generate=point.generate,
        kv_cache_bytes=point.memory.kv_cache_bytes, memory_required_bytes=point.memory.total_bytes,
        bound=point.bound, kernels=k.label, weight_dtype=k.precision.weight, act_dtype=k.precision.act,
        kv_dtype=k.precision.kv, total_tdp_w=n * hw.tdp_w, tokens_per_s_per_watt=rate / (n * hw.tdp_w),
        price_usd=n * hw.price_usd if hw.price_usd else None, usd_per_hour=per_hour,
        usd_per_million=_usd_per_million(per_hour, rate) if per_hour else None,
        price_kind=PriceKind.RENTAL.value if price else None, price_source=source,
        price_date=price.date.isoformat() if price and price.date else None, replicas=replicas,
        fleet_devices=replicas * n if replicas else None,
        fleet_usd_per_hour=replicas * per_hour if replicas and per_hour else None, calibrated=calibrated,
        why=f"{n} x {hw.id}: {point.concurrent_requests} requests at once (then {point.limited_by})")


def _points(cfg, hw: Hardware, k: KernelSetup, t: ServingTargets, c: Constraints, cal,
            max_devices: int) -> tuple[list[ServingPoint], str]:
    """The serving point at each tensor-parallel degree that serves at least one request, and the reason of the
    largest degree tried when none does."""
    found, why = [], f"no valid tensor-parallel degree up to {max_devices}"
    for n in valid_tp_degrees(cfg, max_devices):
        if n > 1 and link_for_or_none(hw) is None:
            why = f"{why}; {hw.id} has no peer link or PCIe data for tensor parallelism"
            break
        try:
            point = serve(PhaseRunner(cfg, hw, k.precision, n, c.mode, k.layout, cal, k.predictor), t)
        except UnsupportedPrecisionError as exc:
            return found, str(exc)
        if point.concurrent_requests:
            found.append(point)
        else:
            why = _why_none(point, hw, t)
    return found, why


def _serve_on(hw: Hardware, cfg, c: Constraints, run: LLMRun, ask: ServingAsk, calibration_of, price_of,
              max_devices: int) -> LLMServingRecommendation | Rejection:
    """The best serving plan of kind ``hw`` over the precisions and tensor-parallel degrees tried."""
    cal, source = calibration_of(hw) if calibration_of else (None, "")
    price = price_of(hw) if price_of else None
    t = ask.targets(hw)
    best, reasons = None, []
    for k in run.setups(hw, cal, source):
        points, why = _points(cfg, hw, k, t, c, cal, max_devices)
        if not points:
            reasons.append((k.precision, why))
        for point in points:
            rec = _recommendation(hw, point, k, ask, price, cal is not None)
            if best is None or SCORES[c.rank_by](rec) > SCORES[c.rank_by](best):
                best = rec
    return best or rejection(hw, reasons)


def recommend_serving(cfg, devices: Iterable[Hardware], c: Constraints, ask: ServingAsk, *,
                      max_devices: int = NVLINK_NODE_GPUS, calibration_of=None, run: LLMRun | None = None,
                      price_of: Callable[[Hardware], DevicePrice | None] | None = None) -> RecommendResult:
    """Serving plans with continuous batching: for each device kind the precision (of those ``run`` tries) and
    tensor-parallel degree (up to ``max_devices``) whose replica ranks best by ``c.rank_by``, at the most
    concurrent requests that meet ``ask``; ``price_of(hw)``: a rental price per GPU-hour, or None."""
    run = run or LLMRun()
    c = replace(c, dtypes=(run.dtype_text,))  # what the LLM run tries, as the constraints say it
    check_lengths(cfg, ask.targets(None))
    kept, rejected = candidates(devices, c)
    recs, rejected = rank(kept, rejected, c,
                          lambda hw: _serve_on(hw, cfg, c, run, ask, calibration_of, price_of, max_devices),
                          SCORES, nothing_error(c, run))
    budget = f"{ask.token_budget}" if ask.token_budget else "vLLM's default (8192 or 2048)"
    notes = [f"ranked by {c.rank_by} ({SCORE_TEXT[c.rank_by]})",
             f"prompt {ask.prompt} + generate {ask.generate} tokens; {budget} tokens per step",
             f"mode {c.mode}; kernels {run.kernels}"]
    if any(r.usd_per_million is not None for r in recs):
        notes.append("$ per M generated tokens, rented at the cheapest current GPU-hour price")
    return RecommendResult(recommendations=recs, rejected=rejected, constraints=c, notes=tuple(notes))
