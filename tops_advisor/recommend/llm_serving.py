"""Serving plans for a language model: for each device kind, precision and tensor-parallel degree, the most
requests one replica serves at once with continuous batching and chunked prefill (``llm/serving.py``); each
kind's best plan, ranked; with a request rate, the replicas and the fleet's cost.

Money (``costs``): a replica's devices rented per GPU-hour, or bought (paid off over the years of use, plus the
electricity at the load they serve), as ``Constraints.price_kind`` says; ``usd_per_million`` is that over the
generated tokens served in an hour. With a request rate, ``costs.fleet_for`` gives the replicas and the cost is
the fleet's, each replica running its share of the rate."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from ..catalog import Hardware
from ..costs import Pricing, fleet_for
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
from .llm import LLMRun, plan_choice, rank_llm, ranking_note, rejection, token_costs
from .models import purchase_price
from .ranking import candidates, require_pricing
from .results import LLMServingRecommendation, RecommendResult

# rank_by -> score of a serving plan (larger is better); price and cost rank priced plans only (the others are
# listed under no_price). Cost: the cheapest million generated tokens (with a request rate, every fleet serves
# the same tokens, so that is also the cheapest fleet).
SCORES: dict[str, Callable[[LLMServingRecommendation], float]] = {
    "efficiency": lambda r: r.tokens_per_s_per_watt,
    "latency": lambda r: -r.step_s,
    "throughput": lambda r: r.tokens_per_s_per_gpu,
    "price": lambda r: r.tokens_per_s / r.price_usd,
    "cost": lambda r: -r.usd_per_million,
}
SCORE_TEXT = {"efficiency": "tokens/s per watt of TDP", "latency": "shortest step", "throughput": "tokens/s per GPU",
              "price": "tokens/s per 1000 USD of purchase price"}
# rank_by -> how one device's plans are compared: a device without a price gets the plan the throughput ranking
# gives it, never one of its own
CHOICE: dict[str, Callable[[LLMServingRecommendation], object]] = {
    **SCORES,
    "price": lambda r: (r.tokens_per_s / r.price_usd if r.price_usd else 0.0, r.tokens_per_s_per_gpu),
    "cost": lambda r: (-r.usd_per_million if r.usd_per_million is not None else 0.0, r.tokens_per_s_per_gpu),
}


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


def _recommendation(hw: Hardware, point: ServingPoint, k: KernelSetup, ask: ServingAsk, c: Constraints,
                    pricing: Pricing | None, calibrated: bool) -> LLMServingRecommendation:
    n, rate = point.tp, point.tokens_per_s
    fleet = fleet_for(point.requests_per_s, ask.requests_per_s)
    price = purchase_price(pricing)(hw)
    return LLMServingRecommendation(
        hardware=hw.id, devices=n, concurrent_requests=point.concurrent_requests, limited_by=point.limited_by,
        tokens_per_s_per_request=point.tokens_per_s_per_request, tokens_per_s=rate,
        tokens_per_s_per_gpu=point.tokens_per_s_per_gpu, requests_per_s=point.requests_per_s, ttft_s=point.ttft_s,
        step_s=point.step_s, decode_step_s=point.decode_step_s, prefill_s=point.prefill_s,
        token_budget=point.token_budget, prompt=point.prompt, generate=point.generate,
        kv_cache_bytes=point.memory.kv_cache_bytes, memory_required_bytes=point.memory.total_bytes,
        bound=point.bound, kernels=k.label, weight_dtype=k.precision.weight, act_dtype=k.precision.act,
        kv_dtype=k.precision.kv, total_tdp_w=n * hw.tdp_w, tokens_per_s_per_watt=rate / (n * hw.tdp_w),
        price_usd=n * price if price else None, requests_per_s_target=ask.requests_per_s,
        fleet_devices=fleet.replicas * n, calibrated=calibrated,
        why=f"{n} x {hw.id}: {point.concurrent_requests} requests at once (then {point.limited_by})",
        **token_costs(hw, c, pricing, devices=n, tokens_per_s=fleet.served_per_s * point.generate,
                      replicas=fleet.replicas, load=fleet.load))


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


def _serve_on(hw: Hardware, cfg, c: Constraints, run: LLMRun, ask: ServingAsk, calibration_of,
              pricing: Pricing | None, max_devices: int):
    """The best serving plan of kind ``hw`` over the precisions and tensor-parallel degrees tried (a
    ``LLMServingRecommendation``), or why none serves one request (a ``Rejection``)."""
    cal, source = calibration_of(hw) if calibration_of else (None, "")
    t = ask.targets(hw)
    best, reasons = None, []
    choice = plan_choice(c, CHOICE)
    for k in run.setups(hw, cal, source):
        points, why = _points(cfg, hw, k, t, c, cal, max_devices)
        if not points:
            reasons.append((k.precision, why))
        for point in points:
            rec = _recommendation(hw, point, k, ask, c, pricing, cal is not None)
            if best is None or choice(rec) > choice(best):
                best = rec
    return best or rejection(hw, reasons)


def recommend_serving(cfg, devices: Iterable[Hardware], c: Constraints, ask: ServingAsk, *,
                      max_devices: int = NVLINK_NODE_GPUS, calibration_of=None, run: LLMRun | None = None,
                      pricing: Pricing | None = None) -> RecommendResult:
    """Serving plans with continuous batching: for each device kind the precision (of those ``run`` tries) and
    tensor-parallel degree (up to ``max_devices``) whose replica ranks best by ``c.rank_by``, at the most
    concurrent requests that meet ``ask``. ``pricing`` (``costs.load_pricing(catalog)``) gives each plan its cost,
    rented or bought as ``c.price_kind`` says (with ``ask.requests_per_s``, the fleet's); price, cost and a
    budget need it."""
    require_pricing(c, pricing)
    run = run or LLMRun()
    c = replace(c, dtypes=(run.dtype_text,))  # what the LLM run tries, as the constraints say it
    check_lengths(cfg, ask.targets(None))
    kept, rejected = candidates(devices, c, purchase_price(pricing))
    recs, rejected, no_price = rank_llm(
        kept, rejected, c, lambda hw: _serve_on(hw, cfg, c, run, ask, calibration_of, pricing, max_devices),
        SCORES, run, pricing)
    budget = f"{ask.token_budget}" if ask.token_budget else "vLLM's default (8192 or 2048)"
    notes = [ranking_note(c, pricing, SCORE_TEXT),
             f"prompt {ask.prompt} + generate {ask.generate} tokens; {budget} tokens per step",
             f"mode {c.mode}; kernels {run.kernels}"]
    if ask.requests_per_s:
        notes.append(f"{ask.requests_per_s:g} requests/s in total: each device kind runs as many replicas as it "
                     "needs, and the costs are the whole fleet's")
    return RecommendResult(recommendations=recs, rejected=rejected, no_price=no_price, constraints=c,
                           notes=tuple(notes))
