"""Devices, and how many of each, for a language model: ``plan_llm`` finds the fewest tensor-parallel devices
of one kind that hold the model and meet the targets, with TTFT the prefill of ``batch`` prompts in one pass
(a burst); ``recommend_llm`` ranks the kinds, each at its best precision of those ``LLMRun`` tries, with the
kernels it names. Serving plans with continuous batching are ``llm_serving.py``'s."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from pydantic import BaseModel, ConfigDict

from ..catalog import Hardware
from ..costs import TOKENS, PriceKind, Pricing
from ..errors import InputError, NothingFeasibleError, UnsupportedPrecisionError
from ..llm.analysis import (
    DEFAULT_CONTEXT,
    DEFAULT_GENERATE,
    LLMAnalysis,
    Predictor,
    analyze_llm,
    link_for_or_none,
    precision_for,
    roofline_predictor,
)
from ..llm.config import LLMConfig
from ..llm.engines import KernelSetup, kernel_setup, parse_kernels
from ..llm.parallel import NVLINK_NODE_GPUS, valid_tp_degrees
from ..llm.precision import WEIGHT_DTYPES, Precision, make_precision
from ..units import parse_precision
from .constraints import Constraints, filters_text
from .models import purchase_price
from .ranking import budget_screen, candidates, cost_note, money_error, rank, require_pricing, unpriced_screen
from .results import CostFields, LLMRecommendation, RecommendResult, Rejection

# rank_by -> score of an LLM recommendation (larger is better); price and cost rank priced recommendations only
# (the others are listed under no_price)
SCORES: dict[str, Callable[[LLMRecommendation], float]] = {
    "efficiency": lambda r: r.tokens_per_s_per_watt,
    "latency": lambda r: -r.tpot_s,
    "throughput": lambda r: r.tokens_per_s,
    "price": lambda r: r.tokens_per_s / r.price_usd,
    "cost": lambda r: -r.usd_per_million,
}
SCORE_TEXT = {"efficiency": "tokens/s per watt of all devices' TDP",
              "price": "tokens/s per 1000 USD of all devices' purchase price"}
# rank_by -> how one device's precisions are compared: a device's precisions are all priced or none is, and one
# without a price gets the precision the throughput ranking gives it, never one of its own.
CHOICE: dict[str, Callable[[LLMRecommendation], object]] = {
    **SCORES,
    "price": lambda r: (r.tokens_per_s / r.price_usd if r.price_usd else 0.0, r.tokens_per_s),
    "cost": lambda r: (-r.usd_per_million if r.usd_per_million is not None else 0.0, r.tokens_per_s),
}

AUTO = ("auto",)
W8A8 = ("fp8", "int8")  # --dtype fp8 / int8: weights and matrix products in it


def auto_dtypes(hw: Hardware) -> list[str]:
    """``--dtype auto`` for an LLM on ``hw``: its 16-bit type (bf16, or fp16 without bf16), then fp8 and int8
    weights and matrix products (W8A8) where it has those peaks."""
    return [precision_for(hw).weight] + [d for d in W8A8 if hw.peak_ops_per_s(d)]


@dataclass(frozen=True)
class LLMRun:
    """How the LLM runs on every device: the precisions tried and the kernels. Either ``weight``/``act``/``kv``
    (as ``tops-advisor llm`` takes them; None: the device's default) or ``dtypes`` (``--dtype``: each a precision
    of the weights and the matrix products; ``("auto",)``: ``auto_dtypes``), with ``kv`` for all."""

    weight: str | None = None
    act: str | None = None
    kv: str | None = None
    dtypes: tuple[str, ...] = ()
    kernels: str = "torch"

    def __post_init__(self):
        parse_kernels(self.kernels)  # an unknown name: one line, before any device is tried
        if self.dtypes and (self.weight or self.act):
            raise InputError("give --dtype or --weight-dtype/--act-dtype, not both",
                             hint="--dtype fp8 means --weight-dtype fp8 --act-dtype fp8")
        for d in () if self.dtypes == AUTO else self.dtypes:
            parse_precision(d, WEIGHT_DTYPES)
        make_precision(self.weight or "bf16", self.act, self.kv)

    def precisions(self, hw: Hardware) -> list[Precision]:
        if not self.dtypes:
            return [precision_for(hw, self.weight, self.act, self.kv)]
        names = auto_dtypes(hw) if self.dtypes == AUTO else [parse_precision(d, WEIGHT_DTYPES) for d in self.dtypes]
        return [precision_for(hw, d, d if d in W8A8 else None, self.kv) for d in names]

    def setups(self, hw: Hardware, calibration=None, source: str = "") -> list[KernelSetup]:
        """One per precision tried on ``hw``: the kernels' layout, precision and predictor."""
        return [kernel_setup(self.kernels, hw, p, calibration, source) for p in self.precisions(hw)]

    @property
    def dtype_text(self) -> str:
        return "/".join(self.dtypes) or self.weight or "bf16 (fp16 without bf16)"


class LLMPlan(BaseModel):
    """The fewest devices of one kind that hold a model and meet the targets (for ``recommend --llm``)."""

    model_config = ConfigDict(frozen=True)

    hardware: str
    devices: int | None          # None: no tensor-parallel degree up to max_devices works
    meets_targets: bool
    why: str                     # one line: what was met, or what failed
    analysis: LLMAnalysis | None  # at ``devices`` (or at the largest degree tried when nothing meets)


def plan_llm(cfg: LLMConfig, hardware: Hardware, *, tokens_per_s: float | None = None,
             ttft_s: float | None = None, batch: int = 1, prompt: int = DEFAULT_CONTEXT,
             generate: int = DEFAULT_GENERATE, precision: Precision | None = None, mode: str = "graph",
             layout: str = "torch", max_devices: int = NVLINK_NODE_GPUS, calibration=None,
             predictor: Predictor | None = None) -> LLMPlan:
    """Try tensor-parallel degrees 1, 2, 4, ... (those that divide the model) up to ``max_devices`` and
    return the first whose ranks fit and that meets ``tokens_per_s`` (decode tokens/s per request) and
    ``ttft_s`` (prefill of ``prompt`` tokens at ``batch``: a burst of ``batch`` prompts in one pass)."""
    p = precision or precision_for(hardware)
    predictor = predictor or roofline_predictor(hardware, calibration)
    last: LLMAnalysis | None = None
    why = f"no valid tensor-parallel degree up to {max_devices}"
    for n in valid_tp_degrees(cfg, max_devices):
        if n > 1 and link_for_or_none(hardware) is None:
            why = f"{why}; {hardware.id} has no peer link or PCIe data for tensor parallelism"
            break
        try:
            a = analyze_llm(cfg, hardware, batch=batch, prompt=prompt, generate=generate, precision=p, tp=n,
                            mode=mode, layout=layout, calibration=calibration, predictor=predictor,
                            find_crossover=False, suggest=False)
        except UnsupportedPrecisionError as exc:
            return LLMPlan(hardware=hardware.id, devices=None, meets_targets=False, why=str(exc), analysis=None)
        last = a
        if not a.fits_memory:
            why = a.reasons[0] if a.reasons else "does not fit"
            continue
        slow = []
        if tokens_per_s is not None and 1.0 / a.tpot_s < tokens_per_s:
            slow.append(f"{1.0 / a.tpot_s:.3g} tokens/s per request < {tokens_per_s:g}")
        if ttft_s is not None and a.ttft_s > ttft_s:
            slow.append(f"TTFT {a.ttft_s * 1e3:.3g} ms > {ttft_s * 1e3:.3g} ms")
        if not slow:
            return LLMPlan(hardware=hardware.id, devices=n, meets_targets=True, analysis=a,
                           why=f"{n} device{'s' if n > 1 else ''}: {1.0 / a.tpot_s:.3g} tokens/s per request, "
                               f"TTFT {a.ttft_s * 1e3:.3g} ms")
        why = f"at {n} device{'s' if n > 1 else ''}: " + "; ".join(slow)
    return LLMPlan(hardware=hardware.id, devices=None, meets_targets=False, why=why, analysis=last)


def token_costs(hw: Hardware, c: Constraints, pricing: Pricing | None, *, devices: int, tokens_per_s: float,
                replicas: int = 1, load: float = 1.0) -> dict:
    """``CostFields`` of ``replicas`` replicas of ``devices`` cards of kind ``hw`` generating ``tokens_per_s``
    tokens together, at the price kind ``c`` asks for (why not, without one). Each card is busy the share
    ``load`` of its time: a server runs its steps back to back, so a replica at full load draws its busy power
    (an upper bound where launch overheads leave a card waiting)."""
    if pricing is None:
        return {"replicas": replicas}
    kind = PriceKind(c.price_kind)
    cost = pricing.cost(hw, kind, units_per_s=tokens_per_s, devices=replicas * devices, busy=load, unit=TOKENS)
    if cost is None:
        return {"replicas": replicas, "no_price_reason": pricing.missing(hw, kind)}
    return {"replicas": replicas, **CostFields.of(cost)}


def served_tokens_per_s(a: LLMAnalysis) -> float:
    """Generated tokens/s of ``a.batch`` requests served together, start to end: each request's tokens over its
    latency (prefill, then the rest decoded); the decode rate where no request length was priced."""
    if a.request_latency_s and a.generate:
        return a.batch * a.generate / a.request_latency_s
    return a.batch / a.tpot_s


def _recommendation(hw: Hardware, plan: LLMPlan, k: KernelSetup, calibrated: bool, c: Constraints,
                    pricing: Pricing | None) -> LLMRecommendation:
    a, n = plan.analysis, plan.devices
    rate, served = 1.0 / a.tpot_s, served_tokens_per_s(a)
    price = purchase_price(pricing)(hw)
    return LLMRecommendation(
        hardware=hw.id, devices=n, tokens_per_s=rate, ttft_s=a.ttft_s, tpot_s=a.tpot_s,
        memory_required_bytes=a.memory_required_bytes, bound=a.bound, total_tdp_w=n * hw.tdp_w,
        tokens_per_s_per_watt=rate / (n * hw.tdp_w), price_usd=n * price if price else None,
        calibrated=calibrated, why=plan.why, kernels=k.label, weight_dtype=a.precision.weight,
        act_dtype=a.precision.act, kv_dtype=a.precision.kv, burst_prompts=a.batch, tokens_per_s_served=served,
        power_mode=hw.power_mode if hw.power_modes else None,
        **token_costs(hw, c, pricing, devices=n, tokens_per_s=served))


def rejection(hw: Hardware, reasons: list[tuple[Precision, str]]) -> Rejection:
    """Why no precision tried on ``hw`` works: the one reason, or that of the precision with the fewest weight
    bytes (the one that came closest to fitting) naming the others tried."""
    if len(reasons) == 1:
        return Rejection(hardware=hw.id, reason=reasons[0][1])
    p, why = min(reasons, key=lambda pr: pr[0].weight_bytes_per_param)
    others = ", ".join(f"{q.weight}/{q.act}" for q, _ in reasons if q is not p)
    return Rejection(hardware=hw.id, reason=f"{p.weight}/{p.act}: {why} (also tried {others})")


def _plan_on(hw: Hardware, cfg, c: Constraints, run: LLMRun, calibration_of, pricing: Pricing | None,
             **plan_args) -> LLMRecommendation | Rejection:
    """The fewest devices of kind ``hw`` that meet the targets, at the best precision tried, or why none does."""
    cal, source = calibration_of(hw) if calibration_of else (None, "")
    best, reasons = None, []
    choice = plan_choice(c, CHOICE)
    for k in run.setups(hw, cal, source):
        plan = plan_llm(cfg, hw, precision=k.precision, layout=k.layout, mode=c.mode, calibration=cal,
                        predictor=k.predictor, **plan_args)
        if not plan.meets_targets or plan.analysis is None or plan.devices is None:
            reasons.append((k.precision, plan.why))
            continue
        rec = _recommendation(hw, plan, k, cal is not None, c, pricing)
        if best is None or choice(rec) > choice(best):
            best = rec
    return best or rejection(hw, reasons)


def fleet_devices(r) -> int:
    """Every card an LLM record's cost pays for: its replicas times the devices of one."""
    return r.replicas * r.devices


def plan_choice(c: Constraints, choice: dict[str, Callable]) -> Callable:
    """How one device kind's plans (precisions, tensor-parallel degrees) are compared: by ``choice[c.rank_by]``,
    and with --budget a plan within it before any over it (a kind is not rejected for its best plan's price when
    a cheaper one of its plans fits)."""
    score, refuse = choice[c.rank_by], budget_screen(c, fleet_devices)
    return score if refuse is None else lambda r: (refuse(r) is None, score(r))


def nothing_error(c: Constraints, run: LLMRun,
                  no_price: list[Rejection] = ()) -> Callable[[list[Rejection]], NothingFeasibleError]:
    def error(rejected: list[Rejection]) -> NothingFeasibleError:
        money = money_error(c, rejected, list(no_price))
        if money is not None:
            return money
        where = f"{filters_text(c)}, kernels {run.kernels}"
        return NothingFeasibleError(
            f"no device meets the targets ({where}); e.g. {rejected[0].hardware}: {rejected[0].reason}"
            if rejected else "no device meets the targets",
            hint="relax --tokens-per-s or --ttft, allow more devices (--max-devices), or try --kernels fused "
                 "or --dtype auto")

    return error


def rank_llm(kept: list[Hardware], rejected: list[Rejection], c: Constraints, evaluate, scores, run: LLMRun,
             pricing: Pricing | None) -> tuple[list, list[Rejection], list[Rejection]]:
    """``ranking.rank`` for LLM records: unpriced ones set aside under price or cost (or a budget), those over
    the budget rejected (a replica's devices times the replicas); returns (ranked, rejected, no price)."""
    no_price: list[Rejection] = []
    by_id = {hw.id: hw for hw in kept}
    recs, rejected = rank(kept, rejected, c, evaluate, scores, nothing_error(c, run, no_price),
                          unpriced=unpriced_screen(c, pricing, by_id), no_price=no_price,
                          refuse=budget_screen(c, fleet_devices))
    return recs, rejected, no_price


def ranking_note(c: Constraints, pricing: Pricing | None, texts: dict[str, str]) -> str:
    """'ranked by efficiency (tokens/s per watt of ...)', or for cost how each price is read."""
    if c.rank_by == "cost":
        return cost_note(c, pricing, "generated tokens")
    return f"ranked by {c.rank_by}" + (f" ({texts[c.rank_by]})" if c.rank_by in texts else "")


def recommend_llm(cfg, devices: Iterable[Hardware], c: Constraints, *, tokens_per_s: float | None,
                  ttft_s: float | None, batch: int = 1, prompt: int | None = None, generate: int | None = None,
                  max_devices: int = NVLINK_NODE_GPUS, calibration_of=None, run: LLMRun | None = None,
                  pricing: Pricing | None = None) -> RecommendResult:
    """Rank devices (and how many of each) for an LLM: the fewest devices of a kind that fit the model and meet
    ``tokens_per_s`` (per request) and ``ttft_s`` (``batch`` prompts prefilled at once), at the best of the
    precisions ``run`` tries, with its kernels. Ranking as for models: efficiency = tokens/s per watt of all
    devices' TDP, price = tokens/s per 1000 USD of all devices' purchase price, cost = the cheapest million
    generated tokens (``batch`` requests served together, rented or bought as ``c.price_kind`` says). ``pricing``
    (``costs.load_pricing(catalog)``) gives every recommendation its cost; price, cost and a budget need it."""
    require_pricing(c, pricing)
    run = run or LLMRun()
    c = replace(c, dtypes=(run.dtype_text,))  # what the LLM run tries, as the constraints say it
    kept, rejected = candidates(devices, c, purchase_price(pricing))
    lengths = {k: v for k, v in (("prompt", prompt), ("generate", generate)) if v is not None}
    recs, rejected, no_price = rank_llm(
        kept, rejected, c, lambda hw: _plan_on(hw, cfg, c, run, calibration_of, pricing, tokens_per_s=tokens_per_s,
                                               ttft_s=ttft_s, batch=batch, max_devices=max_devices, **lengths),
        SCORES, run, pricing)
    burst = "TTFT: one prompt's prefill" if batch == 1 else f"burst TTFT: {batch} prompts prefilled at once"
    notes = [ranking_note(c, pricing, SCORE_TEXT), f"mode {c.mode}; tokens/s per request at batch {batch}; {burst}",
             f"kernels {run.kernels}"]
    return RecommendResult(recommendations=recs, rejected=rejected, no_price=no_price, constraints=c,
                           notes=tuple(notes))
