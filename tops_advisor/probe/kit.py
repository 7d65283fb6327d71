"""The measuring kit shared by ``probe`` and ``validate``: one timer, one CUDA-graph capture, one environment
record, one out-of-memory check. Imports torch lazily (importing this module is free).

Timing: warm-up, then the median of repeats. Two backends with one interface: CUDA events on a GPU,
``time.perf_counter`` on the CPU. Two protocols, because the probe and ``validate`` measure different things:

- ``flush=True`` (the probe's matrix products): before each timed call a buffer twice the size of the
  last-level cache is written, so each run starts with cold caches the way a layer's weights do in a real
  model (mamf-finder does the same); the flush also keeps the GPU busy while the host queues the call, so
  no launch gap is timed. Events of every repeat are read after one final synchronisation.
- ``sync_each=True`` (``validate``'s whole-model forwards): the device is synchronised after each timed call,
  so a forward starts from an idle GPU, as a request does; host launch gaps inside the forward are timed.

Why not the library timers: ``torch.utils.benchmark.Timer`` times with the host clock around a
synchronisation (host overhead included, no CUDA events) and never flushes the L2; ``triton.testing.do_bench``
flushes and uses events but is GPU-only, returns milliseconds of an adaptive number of runs, and triton is not
a dependency here (nor on CPU-only installs, where CI runs the probe). Both would still need the CPU path
below. Why not ``torch.utils.collect_env`` for the environment: it shells out to pip, conda and nvidia-smi
(seconds per call) and returns strings to parse; the same facts come straight from torch and NVML.
"""

from __future__ import annotations

import datetime as _dt
import platform
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

from .. import __version__
from ..errors import ProbeError


@dataclass(frozen=True)
class Timing:
    """Seconds per call: the median, the best and the worst of the timed repeats."""

    median_s: float
    min_s: float
    repeats: int
    max_s: float = 0.0


class Backend:
    """Where the work runs: 'cuda' or 'cpu'."""

    name = "base"
    device = "cpu"

    def synchronize(self) -> None:  # pragma: no cover - trivial
        pass

    def flush(self) -> None:  # pragma: no cover - trivial
        pass

    def time_calls(self, fn: Callable[[], object], repeats: int, flush: bool,
                   sync_each: bool = False) -> list[float]:
        raise NotImplementedError

    def time(self, fn: Callable[[], object], *, warmup: int = 2, repeats: int = 10, flush: bool = True,
             budget_s: float | None = None, sync_each: bool = False, warmup_s: float = 0.0) -> Timing:
        """Warm up (``warmup`` untimed calls, and more until ``warmup_s`` seconds have passed: an idle GPU
        and host clock down, and a few millisecond-long calls do not bring them back up), then time
        ``repeats`` single calls (fewer if ``budget_s`` would be exceeded: at least 3; the budget needs one
        warm-up call to estimate a call's cost)."""
        if budget_s is not None:
            warmup = max(1, warmup)
        t0 = time.perf_counter()
        calls = 0
        while calls < warmup or time.perf_counter() - t0 < warmup_s:
            fn()
            calls += 1
            if calls >= warmup:
                self.synchronize()
        self.synchronize()
        warmup = max(calls, 1)
        if budget_s is not None:
            per_call = (time.perf_counter() - t0) / warmup
            repeats = int(max(3, min(repeats, budget_s / max(per_call, 1e-9))))
        samples = self.time_calls(fn, repeats, flush, sync_each)
        return Timing(statistics.median(samples), min(samples), len(samples), max(samples))


class CpuBackend(Backend):
    name = "cpu"

    def __init__(self, flush_bytes: int = 32 * 2**20):
        self._flush_bytes = flush_bytes
        self._flush_buf = None

    def flush(self) -> None:
        if self._flush_buf is None:
            import torch

            self._flush_buf = torch.empty(self._flush_bytes // 4, dtype=torch.float32)
        self._flush_buf.fill_(1.0)

    def time_calls(self, fn, repeats, flush, sync_each=False):
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
        self._flush_buf = None  # allocated at the first flush: validate never flushes

    def synchronize(self) -> None:
        self._torch.cuda.synchronize(self.device)

    def flush(self) -> None:
        if self._flush_buf is None:
            props = self._torch.cuda.get_device_properties(self.device)
            l2_bytes = int(getattr(props, "L2_cache_size", 0) or 64 * 2**20)
            self._flush_buf = self._torch.empty(2 * l2_bytes // 4, dtype=self._torch.float32, device=self.device)
        self._flush_buf.fill_(1.0)

    def time_calls(self, fn, repeats, flush, sync_each=False):
        torch = self._torch
        pairs = []
        for _ in range(repeats):
            if flush:
                self.flush()  # also keeps the GPU busy while the host queues fn: no launch gap in the timing
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            if sync_each:
                end.synchronize()
            pairs.append((start, end))
        self.synchronize()
        return [s.elapsed_time(e) / 1e3 for s, e in pairs]


def make_backend(device: str) -> Backend:
    """'cuda' or 'cpu'; ProbeError when CUDA is asked for and missing."""
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


def capture_graph(fn: Callable[[], object], calls: int = 1, warmup: int = 3, device=None):
    """A CUDA graph of ``calls`` calls of ``fn``, captured after ``warmup`` calls on a side stream (so that
    lazy initialisation, cuDNN/cuBLAS heuristics, NCCL's graph registration and allocations happen outside
    the capture). ``device``: a torch device or index (default: the current one). Replay with ``.replay()``."""
    import torch

    side = torch.cuda.Stream(device=device)
    side.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(side):
        for _ in range(warmup):
            fn()
    torch.cuda.current_stream(device).wait_stream(side)
    torch.cuda.synchronize(device)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(calls):
            fn()
    return graph


def is_oom(exc: BaseException) -> bool:
    """True for torch's OutOfMemoryError and for any error whose message says 'out of memory' (cuBLAS, cuDNN
    and NCCL report it as a plain RuntimeError)."""
    try:
        import torch

        oom = getattr(torch.cuda, "OutOfMemoryError", None)
    except ImportError:  # pragma: no cover - the kit is only used with torch
        oom = None
    return (oom is not None and isinstance(exc, oom)) or "out of memory" in str(exc).lower()


def cpu_model() -> str:
    """'AMD EPYC 7763 64-Core Processor' from /proc/cpuinfo, else what platform knows."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def device_name(device: str) -> str:
    """The measured device's own name: 'NVIDIA H200' (CUDA device 0) or the CPU model."""
    if device == "cuda":
        import torch

        return torch.cuda.get_device_name(0)
    return cpu_model()


def device_label(env: dict[str, str]) -> str:
    """The measured device's name from an ``environment`` record: the GPU's name, or 'CPU <model>'."""
    if env.get("gpu"):
        return env["gpu"]
    if env.get("cpu"):
        return f"CPU {env['cpu']}"
    return env.get("device", "")


def environment(device: str = "cuda", command: str | None = None, facts=None) -> dict[str, str]:
    """Versions, the device and its state, the command: recorded with every measurement (probe, validate,
    benchmarks). Every value is a string. ``host`` is the machine's network name, ``machine`` its
    architecture; ``device`` is 'cuda' or 'cpu' and ``gpu`` (or ``cpu``) the device's name. ``facts``: the
    probe's NVML reading (``nvml.DeviceFacts``); without one, NVML is read here when there is a GPU."""
    import torch

    env = {"torch": torch.__version__, "python": platform.python_version(), "tops_advisor": __version__,
           "host": platform.node(), "machine": platform.machine(),
           "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
           "command": command if command is not None else " ".join(sys.argv), "device": device}
    if device != "cuda":
        return {**env, "cpu": cpu_model(), "threads": str(torch.get_num_threads())}
    props = torch.cuda.get_device_properties(0)
    env.update({"gpu": props.name, "compute_capability": f"{props.major}.{props.minor}",
                "sm_count": str(props.multi_processor_count), "cuda": str(torch.version.cuda),
                "cudnn": str(torch.backends.cudnn.version()),
                "allow_tf32_matmul": str(torch.backends.cuda.matmul.allow_tf32),
                "allow_tf32_cudnn": str(torch.backends.cudnn.allow_tf32)})
    return {**env, **_nvml_environment(facts)}


def _nvml_environment(facts) -> dict[str, str]:
    """Driver, CUDA driver version, power limit and maximum SM clock, from NVML (``nvml: unavailable ...``
    when it cannot be read: NVML is optional here)."""
    if facts is None:
        from .nvml import import_nvml, read_device_facts

        try:
            facts = read_device_facts(import_nvml())
        except ProbeError as exc:
            return {"nvml": f"unavailable: {exc}"}
    out = {"driver": facts.driver_version, "cuda_driver_version": facts.cuda_driver_version,
           "power_limit_w": facts.power_limit_w, "sm_clock_max_mhz": facts.sm_clock_max_mhz}
    return {k: str(v) for k, v in out.items() if v is not None}
