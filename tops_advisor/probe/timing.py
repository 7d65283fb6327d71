"""Timing with warm-up, an L2 flush before each timed run, and the median of repeats.

Two backends with one interface: CUDA events on a GPU, ``time.perf_counter`` on the CPU. The flush writes a
buffer twice the size of the last-level cache, so each timed run starts with cold caches the way a layer's
weights do in a real model (mamf-finder does the same).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Timing:
    """Seconds per call: the median and the best of the timed repeats."""

    median_s: float
    min_s: float
    repeats: int


class Backend:
    """Where the work runs: 'cuda' or 'cpu'."""

    name = "base"

    def synchronize(self) -> None:  # pragma: no cover - trivial
        pass

    def flush(self) -> None:  # pragma: no cover - trivial
        pass

    def time_calls(self, fn: Callable[[], object], repeats: int, flush: bool) -> list[float]:
        raise NotImplementedError

    def time(self, fn: Callable[[], object], *, warmup: int = 2, repeats: int = 10, flush: bool = True,
             budget_s: float | None = None) -> Timing:
        """Warm up, then time ``repeats`` single calls (fewer if ``budget_s`` would be exceeded)."""
        t0 = time.perf_counter()
        for _ in range(max(1, warmup)):
            fn()
        self.synchronize()
        if budget_s is not None:
            per_call = (time.perf_counter() - t0) / max(1, warmup)
            repeats = int(max(3, min(repeats, budget_s / max(per_call, 1e-9))))
        samples = self.time_calls(fn, repeats, flush)
        return Timing(statistics.median(samples), min(samples), len(samples))


class CpuBackend(Backend):
    name = "cpu"

    def __init__(self, flush_bytes: int = 32 * 2**20):
        import torch

        self._torch = torch
        self._flush_buf = torch.empty(flush_bytes // 4, dtype=torch.float32)

    def flush(self) -> None:
        self._flush_buf.fill_(1.0)

    def time_calls(self, fn, repeats, flush):
        out = []
        for _ in range(repeats):
            if flush:
                self.flush()
            t = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t)
        return out


class CudaBackend(Backend):
    name = "cuda"

    def __init__(self, device_index: int = 0):
        import torch

        self._torch = torch
        self.device = torch.device("cuda", device_index)
        props = torch.cuda.get_device_properties(self.device)
        l2_bytes = int(getattr(props, "L2_cache_size", 0) or 64 * 2**20)
        self._flush_buf = torch.empty(2 * l2_bytes // 4, dtype=torch.float32, device=self.device)

    def synchronize(self) -> None:
        self._torch.cuda.synchronize(self.device)

    def flush(self) -> None:
        self._flush_buf.fill_(1.0)

    def time_calls(self, fn, repeats, flush):
        torch = self._torch
        pairs = []
        for _ in range(repeats):
            if flush:
                self.flush()  # also keeps the GPU busy while the host queues fn: no launch gap in the timing
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            pairs.append((start, end))
        self.synchronize()
        return [s.elapsed_time(e) / 1e3 for s, e in pairs]


def make_backend(device: str) -> Backend:
    """'cuda' or 'cpu'; ProbeError when CUDA is asked for and missing."""
    from ..errors import ProbeError

    if device == "cpu":
        return CpuBackend()
    if device == "cuda":
        try:
            import torch
        except ImportError:
            raise ProbeError("PyTorch is not installed; the probe needs it", hint="install torch") from None
        if not torch.cuda.is_available():
            raise ProbeError("no CUDA GPU is visible to PyTorch (torch.cuda.is_available() is False; "
                             f"torch {torch.__version__})", hint="use --device cpu to probe this CPU instead")
        return CudaBackend()
    raise ProbeError(f"unknown device {device!r}; expected cuda or cpu")
