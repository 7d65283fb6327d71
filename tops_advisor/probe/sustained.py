"""Hold a heavy matrix load for a while and watch throughput, clocks, power, temperature and throttling.

Each interval (about 0.5 s) counts the products finished since the last one, so throughput is measured
over the interval, not per call; the NVML reading comes at the interval's end. TOPS per watt is the
median throughput over the median board power: the article's efficiency column, measured.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

from ..calibration import SustainedResult, SustainedSample
from .gemm import make_gemm
from .kit import Backend
from .nvml import SLOWDOWN_REASONS, sample_state

# A drop from the first to the last interval larger than this counts as throttling even without a reason.
DROP_THRESHOLD = 0.05


def run_sustained(backend: Backend, seconds: float, *, precision: str = "bf16", size: int = 8192,
                  nvml=None, interval_s: float = 0.5,
                  progress: Callable[[str], None] | None = None) -> SustainedResult:
    """Run ``size``^3 products back to back for ``seconds``; KeyboardInterrupt ends early with what was seen."""
    device = getattr(backend, "device", "cpu")
    fn = make_gemm(precision, size, size, size, device)
    ops = 2.0 * size**3
    fn()
    backend.synchronize()
    samples: list[SustainedSample] = []
    start = last = time.perf_counter()
    done = 0
    try:
        while last - start < seconds:
            fn()
            done += 1
            now = time.perf_counter()
            if now - last < interval_s:
                continue
            backend.synchronize()
            now = time.perf_counter()
            state = sample_state(nvml) if nvml is not None else None
            samples.append(SustainedSample(
                t_s=round(now - start, 3), tops=done * ops / (now - last) / 1e12,
                sm_clock_mhz=state and state.sm_clock_mhz, power_w=state and state.power_w,
                temperature_c=state and state.temperature_c,
                throttle_reasons=state.throttle_reasons if state else ()))
            if progress and len(samples) % 10 == 0:
                s = samples[-1]
                progress(f"sustained {s.t_s:5.1f}s: {s.tops:7.1f} TOPS, "
                         f"{s.sm_clock_mhz or '?'} MHz, {s.power_w or '?'} W, {s.temperature_c or '?'} C")
            done, last = 0, now
    except KeyboardInterrupt:
        if not samples:
            raise
    backend.synchronize()
    return summarise(precision, samples)


def summarise(precision: str, samples: list[SustainedSample]) -> SustainedResult:
    """Reduce interval samples to the result; pure, so it is tested without a GPU."""
    if not samples:
        raise ValueError("no samples")
    tops = [s.tops for s in samples]
    edge = max(1, len(samples) // 10)  # first and last tenth, at least one interval each
    start, end = statistics.median(tops[:edge]), statistics.median(tops[-edge:])
    clocks = [s.sm_clock_mhz for s in samples if s.sm_clock_mhz is not None]
    powers = [s.power_w for s in samples if s.power_w is not None]
    temps = [s.temperature_c for s in samples if s.temperature_c is not None]
    reasons = sorted({r for s in samples for r in s.throttle_reasons if r in SLOWDOWN_REASONS})
    median_tops = statistics.median(tops)
    power = statistics.median(powers) if powers else None
    return SustainedResult(
        precision=precision, seconds=samples[-1].t_s, tops_start=start, tops_end=end, tops_median=median_tops,
        sm_clock_mhz_min=min(clocks) if clocks else None, sm_clock_mhz_max=max(clocks) if clocks else None,
        power_w_median=power, temperature_c_max=max(temps) if temps else None,
        tops_per_watt=median_tops / power if power else None,
        throttle_reasons=tuple(reasons), throttled=bool(reasons) or end < (1 - DROP_THRESHOLD) * start,
        samples=tuple(samples))
