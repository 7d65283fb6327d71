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

from ..catalog import Hardware
from ..errors import InputError, LLMConfigError, UnsupportedPrecisionError
from ..kinds import Bound, Mode
from ..search import first_true
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
from .parallel import MAX_TP, NVLINK_NODE_GPUS, Link, link_for, rank_shape, tp_comm_time_s
from .precision import Precision, make_precision
from .results import LLMAnalysis, PhaseResult

# Explicit defaults for a question that names no lengths: a 1024-token context (a common benchmark prompt
# length), and 128 generated tokens.
DEFAULT_CONTEXT = 1024
DEFAULT_GENERATE = 128
# Explicit default: the largest decode batch searched for the compute-bound crossover (powers of two, then
# bisection), well above serving engines' decode batches (vLLM's --max-num-seqs: 256 by default in its v0.5
# and v0.6 engine-argument docs). A step still memory-bound at 4096 sequences is reported as None.
CROSSOVER_SEARCH_MAX_BATCH = 4096
BOUNDS = tuple(Bound)

Predictor = Callable[..., object]  # (workload, hardware, calibration, mode) -> object with latency_s, bound


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


class PhaseRunner:
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
        return first_true(compute_bound, lo, hi)


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
    if mode not in (Mode.GRAPH, Mode.EAGER):
        raise InputError(f"unknown mode {mode!r}; expected graph or eager")


def _run_phases(runner: PhaseRunner, batch: int, n: _Lengths) -> tuple[PhaseResult, PhaseResult]:
    """The prefill and the decode step; an activation precision the device lacks says what to do instead."""
    try:
        return runner.run("prefill", batch, n.prefill_len), runner.run("decode", batch, n.decode_ctx)
    except UnsupportedPrecisionError as exc:
        raise UnsupportedPrecisionError(
            f"{exc} (activations {runner.p.act})",
            hint="use weight-only quantization (--act-dtype bf16) or a device with that peak") from None


def _notes(p: Precision, tp: int, hardware: Hardware, runner: PhaseRunner, dec: PhaseResult, n: _Lengths) -> list[str]:
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
    runner = PhaseRunner(cfg, hardware, p, tp, mode, layout, calibration,
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


def _suggest(cfg: LLMConfig, runner: PhaseRunner, batch: int, n: _Lengths, need: int | None, mb: int, mc: int,
             phase: str) -> list[str]:
    """What would make a run that does not fit possible: more devices, fewer weight or KV bytes, less work."""
    hw, p, tp, kv_tokens, q_len = runner.hw, runner.p, runner.tp, n.kv_tokens, n.q_len
    out = []
    if need is not None and need > tp and link_for_or_none(hw) is None:
        out.append(f"{need} devices would hold it, but {hw.id} has no peer link or PCIe data to combine them")
    elif need is not None and need > tp:
        try:
            other = PhaseRunner(cfg, hw, p, need, runner.mode, runner.layout, runner.calibration, runner.predictor)
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


def link_for_or_none(hw: Hardware) -> Link | None:
    try:
        return link_for(hw)
    except InputError:
        return None
