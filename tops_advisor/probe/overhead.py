"""Per-kernel cost: a tiny kernel (one-element add) launched eagerly from Python, and replayed in a CUDA graph.

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


def graph_kernel_s(backend: Backend, kernels: int = 200, replays: int = 20) -> float:
    """Seconds per tiny kernel inside a replayed CUDA graph (device time, events)."""
    import torch

    x = torch.zeros(1, device=backend.device)
    graph = capture_graph(lambda: x.add_(1), calls=kernels, device=backend.device)
    t = backend.time(graph.replay, warmup=3, repeats=replays, flush=False)
    return t.median_s / kernels
