"""The end-to-end answer for an LLM on a device: TTFT, time per output token, tokens/s, memory, fit, devices,
the bound, the batch where decoding turns compute-bound, and for an impossible request why and what would
make it possible.

Two ways to ask:

* one phase (``phase`` and ``context``): a prefill of ``context`` tokens, or one decode step with
  ``context`` tokens already cached;
* a request (``prompt`` and/or ``generate``): TTFT is the prefill of the prompt; the time per output token is
  a decode step at the middle of the generation (a step's cost grows linearly with the context, so the middle
  step is the mean); the request takes TTFT + (generate - 1) steps (the prefill yields the first token).

Latencies come from the roofline (``tops_advisor.roofline.predict``) on one tensor-parallel rank's workload,
plus the rank's all-reduces (``parallel.py``). Memory is this module's own (``memory.py``): the roofline
does not know about the KV cache.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, PlainSerializer, computed_field

from ..catalog import Hardware
from ..errors import InputError, LLMConfigError, UnsupportedPrecisionError
from .builder import KERNEL_LAYOUTS, PHASES, build_workload, check_sizes
from .config import LLMConfig
from .memory import (
    MLA_NOTE,
    MemoryBreakdown,
    devices_needed,
    max_batch,
    max_context,
    memory_breakdown,
    window_caps,
)
from .parallel import MAX_TP, NVLINK_NODE_GPUS, Link, link_for, rank_shape, tp_comm_time_s, valid_tp_degrees
from .precision import Precision, make_precision

# Explicit defaults for a question that names no lengths: a 1024-token context (a common benchmark prompt
# length), and 128 generated tokens.
DEFAULT_CONTEXT = 1024
DEFAULT_GENERATE = 128
# Explicit default: the largest decode batch searched for the compute-bound crossover (powers of two, then
# bisection), well above serving engines' decode batches (vLLM's --max-num-seqs: 256 by default in its v0.5
# and v0.6 engine-argument docs). A step still memory-bound at 4096 sequences is reported as None.
CROSSOVER_SEARCH_MAX_BATCH = 4096
BOUNDS = ("compute", "memory", "overhead", "communication")

Predictor = Callable[..., object]  # (workload, hardware, calibration, mode) -> object with latency_s, bound


# A tuple in the model (frozen, hashable), a list in its dump (JSON's shape).
Lines = Annotated[tuple[str, ...], PlainSerializer(list, return_type=list)]
_FROZEN = ConfigDict(frozen=True)


class PhaseResult(BaseModel):
    """One forward pass (a prefill, or one decode step) on each of ``tp`` devices."""

    model_config = _FROZEN

    phase: str
    batch: int
    context: int
    latency_s: float          # roofline time of one rank + all-reduces
    compute_s: float          # the roofline's part
    communication_s: float    # tensor-parallel all-reduces
    bound: str                # compute | memory | overhead | communication
    tokens_per_s: float       # tokens this pass produces or consumes per second (all sequences)
    flops: float              # per rank
    bytes: float              # per rank
    kernels: int              # per rank

    @computed_field
    @property
    def latency_ms(self) -> float:
        return self.latency_s * 1e3


class LLMAnalysis(BaseModel):
    """The answer in base units; the dump adds the human ones (ms, GB) and flattens the precision."""

    model_config = _FROZEN

    model: str
    hardware: str
    mode: str
    layout: str = Field(exclude=True)    # dumped as kernel_layout
    precision: Precision = Field(exclude=True)  # dumped as weight_dtype, act_dtype, kv_dtype, precision_note
    tp: int
    batch: int
    phase: str
    context: int
    prompt: int | None
    generate: int | None
    requested: PhaseResult = Field(exclude=True)  # prefill or decode, whichever ``phase`` asked for
    prefill: PhaseResult
    decode: PhaseResult
    memory: MemoryBreakdown = Field(exclude=True)  # per device; dumped as memory_* in GB
    link: str | None                     # what tensor parallelism talks over
    request_latency_s: float | None = Field(exclude=True)
    max_batch: int                       # at this context (0: not even one sequence fits)
    max_context: int                     # at this batch (tokens per sequence; 0: none fits)
    devices_needed: int | None           # fewest devices that hold it (None: not within MAX_TP)
    decode_compute_bound_batch: int | None  # smallest batch where a decode step is compute-bound
    gemm_ridge_batch: float | None       # decode batch where the weight GEMMs reach the datasheet ridge
    reasons: Lines = ()                  # why it cannot run as asked
    suggestions: Lines = ()              # what would make it possible
    notes: Lines = ()
    warnings: Lines = ()                 # config keys that may change cost but are not modelled

    # headline numbers (base units)
    @property
    def latency_s(self) -> float:
        return self.requested.latency_s

    @computed_field
    @property
    def tokens_per_s(self) -> float:
        return self.requested.tokens_per_s

    @property
    def ttft_s(self) -> float:
        return self.prefill.latency_s

    @property
    def tpot_s(self) -> float:
        return self.decode.latency_s

    @computed_field
    @property
    def fits_memory(self) -> bool:
        return self.memory.fits

    @property
    def memory_required_bytes(self) -> float:
        return self.memory.total_bytes

    @computed_field
    @property
    def bound(self) -> str:
        return self.requested.bound

    @computed_field
    @property
    def possible(self) -> bool:
        return not self.reasons

    # what the JSON adds: names, the precision flattened, human units
    @computed_field
    @property
    def kernel_layout(self) -> str:
        return self.layout

    @computed_field
    @property
    def weight_dtype(self) -> str:
        return self.precision.weight

    @computed_field
    @property
    def act_dtype(self) -> str:
        return self.precision.act

    @computed_field
    @property
    def kv_dtype(self) -> str:
        return self.precision.kv

    @computed_field
    @property
    def precision_note(self) -> str:
        return self.precision.describe()

    @computed_field
    @property
    def devices(self) -> int:
        return self.tp

    @computed_field
    @property
    def latency_ms(self) -> float:
        return self.latency_s * 1e3

    @computed_field
    @property
    def ttft_ms(self) -> float:
        return self.ttft_s * 1e3

    @computed_field
    @property
    def time_per_output_token_ms(self) -> float:
        return self.tpot_s * 1e3

    @computed_field
    @property
    def decode_tokens_per_s_per_request(self) -> float:
        return 1.0 / self.tpot_s

    @computed_field
    @property
    def decode_tokens_per_s(self) -> float:
        return self.batch / self.tpot_s

    @computed_field
    @property
    def request_latency_ms(self) -> float | None:
        return None if self.request_latency_s is None else self.request_latency_s * 1e3

    @computed_field
    @property
    def memory_required_gb(self) -> float:
        return self.memory_required_bytes / 1e9

    @computed_field
    @property
    def memory_capacity_gb(self) -> float:
        return self.memory.capacity_bytes / 1e9

    @computed_field
    @property
    def memory_per_device_gb(self) -> dict[str, float]:
        return {k.removesuffix("_bytes"): v / 1e9 for k, v in self.memory.model_dump().items()
                if k.endswith("_bytes")}

    @computed_field
    @property
    def kv_cache_bytes_per_token(self) -> float:
        return self.memory.kv_bytes_per_token


def roofline_predictor(hardware: Hardware, calibration=None, calibration_source: str = "") -> Predictor:
    """The roofline's ``predict`` with the device's attainable rates resolved once."""
    from ..roofline import device_perf, predict

    perf = device_perf(hardware, calibration, calibration_source)

    def _predict(workload, hw, cal, mode):
        return predict(workload, hw, cal, mode, perf=perf if hw is hardware else None)

    return _predict


@lru_cache(maxsize=64)
def _cached_workload(cfg: LLMConfig, phase: str, batch: int, context: int, p: Precision, tp: int, layout: str):
    """Workloads are hardware-independent: build once, predict on every device (recommend --llm)."""
    return build_workload(cfg, phase=phase, batch=batch, context=context, precision=p, tp=tp, layout=layout)


class _Runner:
    """Predicts phases of one model on one device at one precision and TP degree."""

    def __init__(self, cfg: LLMConfig, hw: Hardware, p: Precision, tp: int, mode: str, layout: str,
                 calibration, predictor: Predictor):
        self.cfg, self.hw, self.p, self.tp, self.mode, self.layout = cfg, hw, p, tp, mode, layout
        self.calibration, self.predictor = calibration, predictor
        self.link: Link | None = link_for(hw, calibration, mode) if tp > 1 else None

    def run(self, phase: str, batch: int, context: int) -> PhaseResult:
        w = _cached_workload(self.cfg, phase, batch, context, self.p, self.tp, self.layout)
        pred = self.predictor(w, self.hw, self.calibration, self.mode)
        tokens = batch * (context if phase == "prefill" else 1)
        comm = tp_comm_time_s(self.cfg, tokens, self.tp, self.link, self.p.stream_bytes) if self.link else 0.0
        latency = pred.latency_s + comm
        by_bound = dict(getattr(pred, "time_by_bound_s", None) or {pred.bound: pred.latency_s})
        by_bound["communication"] = comm
        bound = max(by_bound, key=by_bound.get)
        return PhaseResult(phase=phase, batch=batch, context=context, latency_s=latency,
                           compute_s=pred.latency_s, communication_s=comm, bound=bound,
                           tokens_per_s=tokens / latency, flops=w.flops, bytes=w.bytes, kernels=w.kernels)

    def crossover_batch(self, context: int) -> int | None:
        """Smallest decode batch whose step is compute-bound (None if not up to the search limit)."""
        def compute_bound(b: int) -> bool:
            return self.run("decode", b, context).bound == "compute"

        lo, hi = 0, 1
        while not compute_bound(hi):
            lo = hi
            hi *= 2
            if hi > CROSSOVER_SEARCH_MAX_BATCH:
                return None
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if compute_bound(mid):
                hi = mid
            else:
                lo = mid
        return hi


def precision_for(hardware: Hardware, weight: str | None = None, act: str | None = None,
                  kv: str | None = None) -> Precision:
    """``make_precision`` with the device's default 16-bit type: bf16, or fp16 where it has no bf16 (T4, V100).
    """
    half = "bf16" if "bf16" in hardware.dense_tops or "fp16" not in hardware.dense_tops else "fp16"
    if weight is None:
        weight = half
    if act is None and weight in ("int8", "int4", "fp8", "bf16", "fp16"):
        act = "fp16" if weight == "fp16" else half
    return make_precision(weight, act, kv)


def _positive(name: str, v) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise InputError(f"{name} must be a positive whole number, got {v!r}")
    return v


@dataclass(frozen=True)
class _Lengths:
    """The token counts one question implies (see the module docstring: a phase, or a request)."""

    context: int                 # the requested pass's context
    prompt: int | None
    generate: int | None
    prefill_len: int             # the prefill that is predicted (TTFT)
    decode_ctx: int              # the context of the decode step that is predicted (time per token)
    kv_tokens: int               # tokens the cache holds per sequence
    q_len: int                   # new tokens per sequence in the pass whose activations must fit

    @property
    def request(self) -> bool:
        return self.prompt is not None


def _lengths(cfg: LLMConfig, phase: str, batch: int, context: int | None, prompt: int | None,
             generate: int | None) -> _Lengths:
    limit = cfg.max_position_embeddings
    if prompt is not None or generate is not None:
        prompt_n = _positive("prompt", prompt if prompt is not None else (context or DEFAULT_CONTEXT))
        gen_n = _positive("generate", generate if generate is not None else DEFAULT_GENERATE)
        if limit and prompt_n + gen_n > limit:
            raise LLMConfigError(f"prompt {prompt_n} + generate {gen_n} = {prompt_n + gen_n} tokens exceeds "
                                 f"{cfg.name}'s maximum of {limit} positions (max_position_embeddings)")
        check_sizes(cfg, "prefill", batch, prompt_n)
        decode_ctx = prompt_n + gen_n // 2
        return _Lengths(context=prompt_n if phase == "prefill" else decode_ctx, prompt=prompt_n, generate=gen_n,
                        prefill_len=prompt_n, decode_ctx=decode_ctx, kv_tokens=prompt_n + gen_n, q_len=prompt_n)
    default = DEFAULT_CONTEXT if not limit else min(DEFAULT_CONTEXT, limit - 1)
    ctx = _positive("context", context if context is not None else default)
    check_sizes(cfg, phase, batch, ctx)
    return _Lengths(context=ctx, prompt=None, generate=None, prefill_len=ctx,
                    decode_ctx=ctx if not limit else min(ctx, limit - 1),
                    kv_tokens=ctx + (1 if phase == "decode" else 0), q_len=ctx if phase == "prefill" else 1)


def _check_options(batch: int, tp: int, phase: str, layout: str, mode: str) -> None:
    _positive("batch", batch)
    _positive("tp", tp)
    if phase not in PHASES:
        raise InputError(f"unknown phase {phase!r}; expected prefill or decode")
    if layout not in KERNEL_LAYOUTS:
        raise InputError(f"unknown kernel layout {layout!r}; expected torch or fused")
    if mode not in ("graph", "eager"):
        raise InputError(f"unknown mode {mode!r}; expected graph or eager")


def _run_phases(runner: _Runner, batch: int, n: _Lengths) -> tuple[PhaseResult, PhaseResult]:
    """The prefill and the decode step; an activation precision the device lacks says what to do instead."""
    try:
        return runner.run("prefill", batch, n.prefill_len), runner.run("decode", batch, n.decode_ctx)
    except UnsupportedPrecisionError as exc:
        raise UnsupportedPrecisionError(
            f"{exc} (activations {runner.p.act})",
            hint="use weight-only quantization (--act-dtype bf16) or a device with that peak") from None


def _notes(p: Precision, tp: int, hardware: Hardware, runner: _Runner, dec: PhaseResult, n: _Lengths) -> list[str]:
    notes = []
    if p.weight_only:
        notes.append(f"weight-only {p.weight}: weights move at {p.weight_bytes_per_param:g} bytes/parameter, "
                     f"but matrix products compute at the {p.act} peak")
    if tp > 1:
        notes.append(f"tensor parallel over {tp} x {hardware.id} via {runner.link.name}: 2 ring all-reduces per "
                     f"layer ({dec.communication_s * 1e3:.3g} ms per decode step)")
        if tp > NVLINK_NODE_GPUS:
            notes.append(f"{tp} devices exceed one {NVLINK_NODE_GPUS}-GPU server: the peer link would not span "
                         f"them all")
    if n.request:
        notes.append(f"time per output token is the decode step at context {n.decode_ctx} "
                     f"(the middle of the generation)")
    window = window_caps(runner.cfg, n.kv_tokens)
    if window:
        notes.append(window)
    if runner.cfg.is_mla:
        notes.append(MLA_NOTE)
    return notes


def _memory_reason(mem: MemoryBreakdown, hardware: Hardware) -> str:
    g = 1e9
    return (f"needs {mem.total_bytes / g:.1f} GB per device ({mem.weights_bytes / g:.1f} weights + "
            f"{mem.kv_cache_bytes / g:.1f} KV cache + {mem.activation_bytes / g:.1f} activations + "
            f"{mem.reserve_bytes / g:.0f} runtime) but {hardware.id} has {mem.capacity_bytes / g:.0f} GB")


def analyze_llm(cfg: LLMConfig, hardware: Hardware, *, batch: int = 1, phase: str = "decode",
                context: int | None = None, prompt: int | None = None, generate: int | None = None,
                precision: Precision | None = None, tp: int = 1, mode: str = "graph", layout: str = "torch",
                calibration=None, predictor: Predictor | None = None, find_crossover: bool = True,
                suggest: bool = True) -> LLMAnalysis:
    """Analyse an LLM run on ``tp`` devices of one kind. See the module docstring for the two ways to ask."""
    _check_options(batch, tp, phase, layout, mode)
    p = precision or precision_for(hardware)
    rank_shape(cfg, tp)  # validates the split
    n = _lengths(cfg, phase, batch, context, prompt, generate)
    runner = _Runner(cfg, hardware, p, tp, mode, layout, calibration,
                     predictor or roofline_predictor(hardware, calibration))
    pre, dec = _run_phases(runner, batch, n)
    request_latency = pre.latency_s + (n.generate - 1) * dec.latency_s if n.request else None

    q_len = n.q_len
    mem = memory_breakdown(cfg, p, hardware, batch=batch, kv_tokens=n.kv_tokens, q_len=q_len, tp=tp)
    mb = max_batch(cfg, p, hardware, kv_tokens=n.kv_tokens, prefill_len=q_len, tp=tp)
    mc = max_context(cfg, p, hardware, batch=batch, prefill=n.request or phase == "prefill", tp=tp)
    need = devices_needed(cfg, p, hardware, batch=batch, kv_tokens=n.kv_tokens, q_len=q_len)
    crossover = runner.crossover_batch(n.decode_ctx) if find_crossover else None
    peak = hardware.peak_ops_per_s(p.act)
    ridge = (peak / hardware.memory_bandwidth_bytes_per_s * p.weight_bytes_per_param / 2) if peak else None

    reasons, suggestions = [], []
    if not mem.fits:
        reasons.append(_memory_reason(mem, hardware))
        if suggest:
            suggestions += _suggest(cfg, runner, batch, n, need, mb, mc, phase)

    return LLMAnalysis(
        model=cfg.name, hardware=hardware.id, mode=mode, layout=layout, precision=p, tp=tp, batch=batch,
        phase=phase, context=n.context, prompt=n.prompt, generate=n.generate,
        requested=pre if phase == "prefill" else dec, prefill=pre, decode=dec,
        memory=mem, link=runner.link.name if runner.link else None, request_latency_s=request_latency,
        max_batch=mb, max_context=mc, devices_needed=need, decode_compute_bound_batch=crossover,
        gemm_ridge_batch=ridge, reasons=tuple(reasons), suggestions=tuple(suggestions),
        notes=tuple(_notes(p, tp, hardware, runner, dec, n)), warnings=cfg.warnings)


def _suggest(cfg: LLMConfig, runner: _Runner, batch: int, n: _Lengths, need: int | None, mb: int, mc: int,
             phase: str) -> list[str]:
    """What would make a run that does not fit possible: more devices, fewer weight or KV bytes, less work."""
    hw, p, tp, kv_tokens, q_len = runner.hw, runner.p, runner.tp, n.kv_tokens, n.q_len
    out = []
    if need is not None and need > tp and link_for_or_none(hw) is None:
        out.append(f"{need} devices would hold it, but {hw.id} has no peer link or PCIe data to combine them")
    elif need is not None and need > tp:
        try:
            other = _Runner(cfg, hw, p, need, runner.mode, runner.layout, runner.calibration, runner.predictor)
            res = other.run(phase, batch, n.context if phase == "decode" else n.prefill_len)
            out.append(f"tensor parallel over {need} x {hw.id} (--tp {need}): "
                       f"{res.latency_s * 1e3:.3g} ms per {'prefill' if phase == 'prefill' else 'decode step'}, "
                       f"{res.tokens_per_s:.3g} tokens/s")
        except Exception as exc:  # noqa: BLE001 - a suggestion must never hide the main answer
            out.append(f"tensor parallel over {need} x {hw.id} (--tp {need}) ({exc})")
    elif need is None:
        out.append(f"no tensor-parallel split up to {MAX_TP} x {hw.id} holds it at {p.weight} weights")
    for w in ("int8", "int4"):
        if Precision(weight=w).weight_bytes_per_param < p.weight_bytes_per_param:
            q = Precision(weight=w, act=p.act if p.act not in ("fp8", "int8") else "bf16", kv=p.kv)
            if memory_breakdown(cfg, q, hw, batch=batch, kv_tokens=kv_tokens, q_len=q_len, tp=tp).fits:
                out.append(f"weights in {w} (--weight-dtype {w}) fit on {tp} device{'s' if tp > 1 else ''}")
                break
    if p.kv_bytes > 1 and memory_breakdown(cfg, Precision(p.weight, p.act, "fp8"), hw, batch=batch,
                                           kv_tokens=kv_tokens, q_len=q_len, tp=tp).fits:
        out.append("an fp8 KV cache (--kv-dtype fp8) fits")
    if 0 < mb < batch:
        out.append(f"batch {mb} or less fits at this context")
    if 0 < mc < kv_tokens:
        out.append(f"{mc} tokens per sequence or fewer fit at batch {batch}")
    return out


class LLMPlan(BaseModel):
    """The fewest devices of one kind that hold a model and meet the targets (for ``recommend --llm``)."""

    model_config = _FROZEN

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


def link_for_or_none(hw: Hardware) -> Link | None:
    try:
        return link_for(hw)
    except InputError:
        return None
