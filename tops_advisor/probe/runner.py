"""Run the probe: device facts, matrix rates, bandwidth, per-kernel cost, optional sustained load.

Each step is tried on its own: a step that fails (a precision the card lacks, out of memory, NVML missing)
leaves a note and the next step runs. Ctrl-C stops at once and returns what was measured with
``interrupted=True``; the CLI then writes no calibration, so a file on disk is always a whole probe.
"""

from __future__ import annotations

import datetime as _dt
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ..calibration import Calibration, GemmSample, SustainedResult
from ..errors import AmbiguousHardwareError, ProbeError, ShapeUnsupported, UnknownHardwareError
from .gemm import (
    ARTICLE_SHAPE,
    PROBE_PRECISIONS,
    GemmResult,
    measure_gemm,
    precision_support,
)
from .kit import Backend, cpu_model, device_label, environment, is_oom, make_backend
from .nvml import DeviceFacts, import_nvml, read_device_facts

PROBE_VERSION = "1"
GIB = 2**30
MIB = 2**20


@dataclass(frozen=True)
class Plan:
    """What one mode measures. Shapes are (m, n, k)."""

    precisions: tuple[str, ...]
    search_shapes: tuple[tuple[int, int, int], ...]
    article_point: bool
    sample_precisions: tuple[str, ...]
    sample_m: tuple[int, ...]
    sample_nk: tuple[int, ...]
    repeats: int  # timed runs per search shape (after one warm-up), as the sweep times them
    spin_up_s: float  # heavy work before the first timing so clocks leave idle
    memory_bytes: int
    link_bytes: int
    launches: int
    cool_s: float = 0.0  # idle before each search shape


# Search shapes (m, n, k). On an H200 the exhaustive sweep (benchmarks/studies/gemm-sweep/gemm_sweep.py, docs/probe.md) found the
# best rates at a long k with a moderate m and n (bf16: 1024x4096x16384; fp8/fp16: 3072x3072x15360), 10-15%
# above the article's 8192^3 point; these shapes and a few square ones cover other cards too.
_SEARCH = ((1024, 4096, 16384), (3072, 3072, 15360), (5120, 9216, 9216), (4096, 4096, 16384),
           (1024, 8192, 14336), (2048, 4096, 16384), (4096, 4096, 12288), (4096, 4096, 4096),
           (6144, 6144, 6144), (4096, 8192, 8192), (13312, 13312, 13312))
_SAMPLE_M = (1, 8, 32, 128, 512, 2048, 8192)
_SAMPLE_NK = (1024, 4096, 8192)

PLANS: dict[tuple[str, str], Plan] = {
    ("cuda", "quick"): Plan(PROBE_PRECISIONS, _SEARCH[:3], True, ("bf16", "fp16", "fp32"), _SAMPLE_M, _SAMPLE_NK,
                            5, 0.5, 1 * GIB, 256 * MIB, 1000),
    ("cuda", "full"): Plan(PROBE_PRECISIONS, _SEARCH, True, PROBE_PRECISIONS, _SAMPLE_M, _SAMPLE_NK,
                           5, 0.5, 4 * GIB, 1 * GIB, 5000, 0.2),
    ("cpu", "quick"): Plan(("fp32", "bf16"), ((256, 256, 256), (512, 512, 512)), False, ("fp32",),
                           (1, 8, 64), (256, 512), 3, 0.0, 64 * MIB, 0, 300),
    ("cpu", "full"): Plan(PROBE_PRECISIONS, ((512, 512, 512), (1024, 1024, 1024), (2048, 2048, 2048)), False,
                          ("fp32", "bf16"), (1, 8, 32, 128, 512), (512, 1024, 2048), 5, 0.5, 256 * MIB, 0, 2000),
}
# fp32 runs at a tenth of the tensor rates or less: search it over the smaller shapes only.
_SLOW_MAX_OPS = 2.0 * 8192**3


@dataclass
class ProbeResult:
    """Everything one probe run saw. ``calibration`` is None when too little was measured to make one."""

    backend: str
    mode: str
    facts: DeviceFacts | None
    hardware: str
    matched_catalog: bool
    environment: dict[str, str]
    best: dict[str, GemmResult] = field(default_factory=dict)
    article: dict[str, GemmResult] = field(default_factory=dict)
    searched: list[GemmResult] = field(default_factory=list)
    samples: list[GemmResult] = field(default_factory=list)
    bandwidth_gb_s: dict[str, float] = field(default_factory=dict)
    kernel_eager_s: float | None = None
    module_call_s: float | None = None
    kernel_graph_s: float | None = None
    sustained: SustainedResult | None = None
    notes: list[str] = field(default_factory=list)
    interrupted: bool = False
    calibration: Calibration | None = None


# NVML names that the catalog's aliases cannot tell apart (the H100 SXM reports only its memory).
NVML_NAMES = {
    "NVIDIA H100 80GB HBM3": "h100-sxm",
    "NVIDIA H100 PCIe": "h100-pcie",
    "NVIDIA H100 NVL": "h100-nvl",
    "NVIDIA H200": "h200-sxm",
    "NVIDIA H200 NVL": "h200-nvl",
    "NVIDIA A100-SXM4-80GB": "a100-sxm4-80gb",
    "NVIDIA A100 80GB PCIe": "a100-pcie-80gb",
    "NVIDIA A100-PCIE-40GB": "a100-pcie-40gb",
}


def match_catalog(device_name: str, catalog) -> str | None:
    """Catalog id for an NVML name ('NVIDIA H200' -> 'h200-sxm'), or None when no single device matches.

    Tries the name, the name without the vendor/brand words, and without memory words ('80GB', 'HBM3').
    """
    known = NVML_NAMES.get(device_name.strip())
    if known and known in catalog:
        return known
    words = device_name.split()
    tries = [device_name]
    brandless = [w for w in words if w.lower() not in ("nvidia", "geforce", "amd", "tesla")]
    tries.append(" ".join(brandless))
    tries.append(" ".join(w for w in brandless if not re.fullmatch(r"\d+gb|hbm\w*|gddr\w*", w.lower())))
    for name in tries:
        if not name:
            continue
        try:
            return catalog.get(name).id
        except (UnknownHardwareError, AmbiguousHardwareError):
            continue
    return None


def _progress_default(msg: str) -> None:
    sys.stderr.write(f"probe: {msg}\n")
    sys.stderr.flush()


def run_probe(device: str = "cuda", mode: str = "quick", *, sustained_s: float | None = None, catalog=None,
              command: str = "", progress: Callable[[str], None] | None = _progress_default,
              nvml=None) -> ProbeResult:
    """Measure this machine's ``device``; see the module doc for how failures and Ctrl-C are handled."""
    say = progress or (lambda _m: None)
    if mode not in ("quick", "full"):
        raise ProbeError(f"unknown probe mode {mode!r}; expected quick or full")
    backend = make_backend(device)
    plan = PLANS[(backend.name, mode)]
    notes: list[str] = []

    facts = None
    if backend.name == "cuda":
        try:
            nvml = nvml or import_nvml()
            facts = read_device_facts(nvml)
            notes += list(facts.notes)
        except ProbeError as exc:
            nvml = None
            notes.append(f"{exc} (clocks, power and throttling not reported)")
    name = _device_name(backend, facts)
    hw_id = match_catalog(name, catalog) if catalog is not None and backend.name == "cuda" else None
    if backend.name == "cuda" and hw_id is None:
        notes.append(f"card {name!r} is not in the catalog: measured anyway, saved under its own name")
    result = ProbeResult(backend.name, mode, facts, hw_id or name, hw_id is not None,
                         environment(backend.name, command, facts) | {"probe_version": PROBE_VERSION},
                         notes=notes)
    say(f"{name} ({backend.name}, {mode} mode)" + (f" = catalog {hw_id}" if hw_id else ""))
    try:
        _measure(backend, plan, result, say, sustained_s, nvml)
    except KeyboardInterrupt:
        result.interrupted = True
        result.notes.append("interrupted: the results above are partial and no calibration was written")
        say("interrupted; keeping what was measured")
    result.calibration = build_calibration(result)
    return result


def _device_name(backend: Backend, facts: DeviceFacts | None) -> str:
    if facts and facts.name:
        return facts.name
    if backend.name == "cuda":
        import torch

        return torch.cuda.get_device_name()
    return f"CPU {cpu_model()}"


def _spin_up(backend: Backend, seconds: float) -> None:
    """Heavy work so the clocks leave idle before the first timing."""
    import time

    from .gemm import make_gemm

    if seconds <= 0:
        return
    size = 8192 if backend.name == "cuda" else 512
    fn = make_gemm("bf16" if backend.name == "cuda" else "fp32", size, size, size, getattr(backend, "device", "cpu"))
    t = time.perf_counter()
    while time.perf_counter() - t < seconds:
        fn()
        backend.synchronize()


def _measure(backend, plan: Plan, result: ProbeResult, say, sustained_s, nvml) -> None:
    """Every step in turn, each adding to ``result``."""
    _spin_up(backend, plan.spin_up_s)
    supported = _supported_precisions(backend, plan, result)
    _search_best(backend, plan, supported, result, say)
    _sample_small(backend, plan, supported, result, say)
    _measure_memory(backend, plan, result, say)
    _measure_kernel_cost(backend, plan, result, say)
    if sustained_s:
        from .sustained import run_sustained

        p = "bf16" if "bf16" in supported else "fp32"
        size = 8192 if backend.name == "cuda" else 512
        say(f"sustained {p} {size}^3 load for {sustained_s:g} s")
        result.sustained = run_sustained(backend, sustained_s, precision=p, size=size, nvml=nvml, progress=say)
    if nvml is not None:
        _record_state_after_load(nvml, result)


def _supported_precisions(backend, plan: Plan, result: ProbeResult) -> list[str]:
    """The plan's precisions this device can run; a note for each one it cannot."""
    supported = []
    for p in plan.precisions:
        why = precision_support(p, backend.device)
        if why:
            result.notes.append(f"skipped {why}")
        else:
            supported.append(p)
    return supported


def _search_best(backend, plan: Plan, supported: list[str], result: ProbeResult, say) -> None:
    """Best rate per precision: the article point and a short shape search."""
    for p in supported:
        shapes = list(plan.search_shapes)
        if plan.article_point and ARTICLE_SHAPE not in shapes:
            shapes.insert(0, ARTICLE_SHAPE)
        if p == "fp32":
            shapes = [s for s in shapes if 2.0 * s[0] * s[1] * s[2] <= _SLOW_MAX_OPS]
        for m, n, k in shapes:
            if plan.cool_s:
                time.sleep(plan.cool_s)  # each shape starts from the same power state, not the last one's cap
            r = _try_gemm(backend, p, m, n, k, result, repeats=plan.repeats)
            if r is None:
                continue
            result.searched.append(r)
            if (m, n, k) == ARTICLE_SHAPE:
                result.article[p] = r
            if p not in result.best or r.tops > result.best[p].tops:
                result.best[p] = r
        if p in result.best:
            b = result.best[p]
            art = f", 8192^3 {result.article[p].tops:.4g}" if p in result.article else ""
            say(f"{p}: best {b.tops:.4g} TOPS at {b.shape}{art}")


def _sample_small(backend, plan: Plan, supported: list[str], result: ProbeResult, say) -> None:
    """Small and skinny products for the roofline's shape-efficiency model."""
    say("small and skinny products")
    for p in plan.sample_precisions:
        if p not in supported:
            continue
        for nk in plan.sample_nk:
            for m in plan.sample_m:
                r = _try_gemm(backend, p, m, nk, nk, result, quiet_shape=True, budget_s=0.05)
                if r is not None:
                    result.samples.append(r)
                    if p in result.best and r.tops > result.best[p].tops:  # a grid point can beat the search
                        result.best[p] = r


def _measure_memory(backend, plan: Plan, result: ProbeResult, say) -> None:
    """Copy, read and elementwise bandwidth; on a GPU also the host link both ways."""
    from . import memory

    say("memory bandwidth")
    for what, fn in (("copy", memory.measure_copy), ("read", memory.measure_read),
                     ("elementwise", memory.measure_elementwise)):
        r = _with_backoff(lambda nbytes, fn=fn: fn(backend, nbytes), plan.memory_bytes, what, result)
        if r is not None:
            result.bandwidth_gb_s[what] = r.gb_s
    if backend.name == "cuda" and plan.link_bytes:
        r = _with_backoff(lambda nbytes: memory.measure_host_link(backend, nbytes), plan.link_bytes, "host link",
                          result)
        if r is not None:
            result.bandwidth_gb_s["h2d"], result.bandwidth_gb_s["d2h"] = r[0].gb_s, r[1].gb_s
    say(", ".join(f"{k} {v:.0f} GB/s" for k, v in result.bandwidth_gb_s.items()))


def _measure_kernel_cost(backend, plan: Plan, result: ProbeResult, say) -> None:
    """Per-kernel cost, eager and (on a GPU) in a replayed CUDA graph."""
    from . import overhead

    result.kernel_eager_s = overhead.eager_kernel_s(backend, plan.launches)
    result.module_call_s = overhead.module_call_s(backend)
    if backend.name == "cuda":
        try:
            result.kernel_graph_s = overhead.graph_kernel_s(backend)
        except RuntimeError as exc:
            result.notes.append(f"CUDA graph replay failed: {str(exc).splitlines()[0]}")
    graph = f", graph {result.kernel_graph_s * 1e6:.2f} us" if result.kernel_graph_s else ""
    say(f"per kernel: eager {result.kernel_eager_s * 1e6:.2f} us{graph}; per module call "
        f"{result.module_call_s * 1e6:.1f} us")


def _record_state_after_load(nvml, result: ProbeResult) -> None:
    """The card's state after the load: clocks, throttling, the PCIe link it reached."""
    try:
        after = read_device_facts(nvml)
        result.environment["sm_clock_mhz_after_load"] = str(after.sm_clock_mhz)
        result.environment["throttle_reasons_after_load"] = ",".join(after.throttle_reasons) or "none"
        if result.facts is not None:  # the link trains up under load: keep the best it reached
            f = result.facts
            result.facts = f.model_copy(update={"pcie_gen": max(f.pcie_gen or 0, after.pcie_gen or 0) or None,
                                                "pcie_width": max(f.pcie_width or 0, after.pcie_width or 0) or None})
    except ProbeError as exc:
        result.notes.append(str(exc))


def _try_gemm(backend, p, m, n, k, result, quiet_shape=False, repeats=20, budget_s=None) -> GemmResult | None:
    try:
        return measure_gemm(backend, p, m, n, k, repeats=repeats, budget_s=budget_s, warmup=1 if budget_s is None else 2)
    except ShapeUnsupported as exc:
        if not quiet_shape:
            result.notes.append(f"{p} {m}x{n}x{k} skipped: {exc}")
    except Exception as exc:  # torch.OutOfMemoryError is a RuntimeError; one bad shape must not end the probe
        if is_oom(exc):
            result.notes.append(f"{p} {m}x{n}x{k} skipped: out of memory")
            _empty_cache(backend)
        else:
            result.notes.append(f"{p} {m}x{n}x{k} failed: {str(exc).splitlines()[0][:160]}")
    return None


def _with_backoff(fn, nbytes: int, what: str, result: ProbeResult):
    """Run fn(nbytes), halving nbytes on out-of-memory down to 16 MiB."""
    while nbytes >= 16 * MIB:
        try:
            return fn(nbytes)
        except Exception as exc:  # one failing measurement must not end the probe
            if not is_oom(exc):
                result.notes.append(f"{what} bandwidth failed: {str(exc).splitlines()[0][:160]}")
                return None
            result.notes.append(f"{what} bandwidth: out of memory at {nbytes // MIB} MiB, halving")
            nbytes //= 2
    return None


def _empty_cache(backend) -> None:
    if backend.name == "cuda":
        import torch

        torch.cuda.empty_cache()


def build_calibration(result: ProbeResult) -> Calibration | None:
    """The calibration, or None when the essentials (a matrix rate and the copy bandwidth) are missing."""
    if not result.best or "copy" not in result.bandwidth_gb_s:
        return None
    bw = result.bandwidth_gb_s
    return Calibration(
        hardware=result.hardware, matched_catalog=result.matched_catalog,
        device_name=(result.facts.name if result.facts and result.facts.name else device_label(result.environment)),
        measured_tops={p: r.tops for p, r in result.best.items()},
        memory_bandwidth_gb_s=bw["copy"], read_bandwidth_gb_s=bw.get("read"),
        elementwise_bandwidth_gb_s=bw.get("elementwise"), h2d_gb_s=bw.get("h2d"), d2h_gb_s=bw.get("d2h"),
        kernel_graph_us=None if result.kernel_graph_s is None else result.kernel_graph_s * 1e6,
        kernel_eager_us=None if result.kernel_eager_s is None else result.kernel_eager_s * 1e6,
        module_call_us=None if result.module_call_s is None else result.module_call_s * 1e6,
        gemm_samples=tuple(GemmSample(precision=r.precision, m=r.m, n=r.n, k=r.k, batch=r.batch, tops=r.tops)
                           for r in result.samples),
        sustained=result.sustained,
        article_point_tops={p: r.tops for p, r in result.article.items()},
        best_gemm_shapes={p: r.shape for p, r in result.best.items()},
        backend=result.backend, mode=result.mode, notes=tuple(result.notes),
        environment=result.environment,
        created=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        probe_version=PROBE_VERSION,
    )
