"""Per-kernel cost: a tiny kernel (one-element add) launched eagerly from Python, and replayed in a CUDA graph;
and the host's time per nn.Module call of a stack of tiny layers.

Eager: the host's cost per aten op (Python, dispatcher, launch), because the GPU finishes each tiny kernel
faster than the host can queue the next; measured as wall time over N launches. Graph: the device's cost
per kernel with launch gaps removed; measured with CUDA events over replays of a graph of K kernels.
"""

from __future__ import annotations

import time

from .kit import Backend, capture_graph


def eager_kernel_s(backend: Backend, launches: int = 2000) -> float:
    """Seconds per tiny op launched one at a time from Python."""
    import torch

    x = torch.zeros(1, device=getattr(backend, "device", "cpu"))
    for _ in range(min(200, launches)):
        x.add_(1)
    backend.synchronize()
    t = time.perf_counter()
    for _ in range(launches):
        x.add_(1)
    backend.synchronize()
    return (time.perf_counter() - t) / launches


# The module stack: nn.Module calls that each launch one small operator (a Linear of 8 features), the unit of
# eager host work in a model (module call, dispatcher, launch). The host's speed moves between a fast and a
# slow state on the H200 machine (benchmarks/harness/host_drift.py: 16-17 us against 25-28 us per module, in
# benchmarks/rounds/round-15/measured and round-23/measured), and a model's eager time follows this probe more closely than the
# bare launch of eager_kernel_s (docs/accuracy.md).
MODULE_STACK_DEPTH = 64


def module_call_s(backend: Backend, forwards: int = 30) -> float:
    """Seconds per nn.Module call of a stack of ``MODULE_STACK_DEPTH`` Linear(8, 8) layers (fp16 on CUDA,
    fp32 on the CPU), batch 1, median of ``forwards`` forwards, each from an idle device (as
    ``benchmarks/harness/host_drift.py`` timed it beside models)."""
    import torch

    device = getattr(backend, "device", "cpu")
    dtype = torch.float16 if device == "cuda" else torch.float32
    stack = torch.nn.Sequential(*[torch.nn.Linear(8, 8) for _ in range(MODULE_STACK_DEPTH)])
    stack = stack.to(device, dtype=dtype).eval()
    x = torch.randn(1, 8, device=device, dtype=dtype)
    with torch.inference_mode():
        t = backend.time(lambda: stack(x), warmup=5, repeats=forwards, flush=False, sync_each=True,
                         warmup_s=0.5)   # half a second of calls brings the host's and GPU's clocks up
    return t.median_s / MODULE_STACK_DEPTH


def graph_kernel_s(backend: Backend, kernels: int = 200, replays: int = 20) -> float:
    """Seconds per tiny kernel inside a replayed CUDA graph (device time, events)."""
    import torch

    x = torch.zeros(1, device=backend.device)
    graph = capture_graph(lambda: x.add_(1), calls=kernels, device=backend.device)
    t = backend.time(graph.replay, warmup=3, repeats=replays, flush=False)
    return t.median_s / kernels
