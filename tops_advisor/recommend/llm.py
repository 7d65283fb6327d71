"""Devices, and how many of each, for a language model: ``plan_llm`` finds the fewest tensor-parallel devices
of one kind that hold the model and meet the targets; ``recommend_llm`` ranks the kinds."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from pydantic import BaseModel, ConfigDict

from ..catalog import Hardware
from ..errors import NothingFeasibleError, UnsupportedPrecisionError
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
from ..llm.parallel import NVLINK_NODE_GPUS, valid_tp_degrees
from ..llm.precision import Precision
from .constraints import Constraints, filters_text
from .models import purchase_price
from .ranking import candidates, rank
from .results import LLMRecommendation, RecommendResult, Rejection

# rank_by -> score of an LLM recommendation (larger is better)
SCORES: dict[str, Callable[[LLMRecommendation], float]] = {
    "efficiency": lambda r: r.tokens_per_s_per_watt,
    "latency": lambda r: -r.tpot_s,
    "throughput": lambda r: r.tokens_per_s,
    "price": lambda r: r.tokens_per_s / r.price_usd if r.price_usd else -1.0,
}


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
    ``ttft_s`` (prefill of ``prompt`` tokens at ``batch``)."""
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


def _plan_on(hw: Hardware, cfg, c: Constraints, calibration_of, purchase_usd=lambda hw: hw.price_usd,
             **plan_args) -> LLMRecommendation | Rejection:
    """The fewest devices of kind ``hw`` that meet the targets, as a recommendation, or why there are none."""
    cal, source = calibration_of(hw) if calibration_of else (None, "")
    plan = plan_llm(cfg, hw, mode=c.mode, calibration=cal, predictor=roofline_predictor(hw, cal, source),
                    **plan_args)
    if not plan.meets_targets or plan.analysis is None or plan.devices is None:
        return Rejection(hardware=hw.id, reason=plan.why)
    a, n = plan.analysis, plan.devices
    rate = 1.0 / a.tpot_s
    return LLMRecommendation(
        hardware=hw.id, devices=n, tokens_per_s=rate, ttft_s=a.ttft_s, tpot_s=a.tpot_s,
        memory_required_bytes=a.memory_required_bytes, bound=a.bound, total_tdp_w=n * hw.tdp_w,
        tokens_per_s_per_watt=rate / (n * hw.tdp_w), price_usd=n * price if (price := purchase_usd(hw)) else None,
        calibrated=cal is not None, why=plan.why,
        power_mode=hw.power_mode if hw.power_modes else None)


def _nothing(c: Constraints) -> Callable[[list[Rejection]], NothingFeasibleError]:
    def error(rejected: list[Rejection]) -> NothingFeasibleError:
        return NothingFeasibleError(
            f"no device meets the targets ({filters_text(c)}); e.g. {rejected[0].hardware}: {rejected[0].reason}"
            if rejected else "no device meets the targets",
            hint="relax --tokens-per-s or --ttft, or allow more devices (--max-devices)")

    return error


def recommend_llm(cfg, devices: Iterable[Hardware], c: Constraints, *, tokens_per_s: float | None,
                  ttft_s: float | None, batch: int = 1, prompt: int | None = None, generate: int | None = None,
                  max_devices: int = NVLINK_NODE_GPUS, calibration_of=None, pricing=None) -> RecommendResult:
    """Rank devices (and how many of each) for an LLM: the fewest devices of a kind that fit the model and meet
    ``tokens_per_s`` (per request) and ``ttft_s``. Ranking as for models: efficiency = tokens/s per watt of
    all devices' TDP, price = tokens/s per 1000 USD of all devices (purchase prices from ``pricing``)."""
    purchase_usd = purchase_price(pricing)
    kept, rejected = candidates(devices, c, purchase_usd)
    lengths = {k: v for k, v in (("prompt", prompt), ("generate", generate)) if v is not None}
    recs, rejected = rank(kept, rejected, c,
                          lambda hw: _plan_on(hw, cfg, c, calibration_of, purchase_usd, tokens_per_s=tokens_per_s,
                                              ttft_s=ttft_s,
                                              batch=batch, max_devices=max_devices, **lengths),
                          SCORES, _nothing(c))
    notes = [f"ranked by {c.rank_by}" + {"efficiency": " (tokens/s per watt of all devices' TDP)"}.get(c.rank_by, ""),
             f"mode {c.mode}; tokens/s per request at batch {batch}"]
    return RecommendResult(recommendations=recs, rejected=rejected, constraints=c, notes=tuple(notes))
