"""Memory bandwidth: device copy, read-only, elementwise a+b, and host<->device over pinned memory.

Bytes are counted as they move: a copy of N bytes reads N and writes N (2N); a sum over N bytes reads N;
c = a + b over N-byte tensors reads 2N and writes N (3N); a host-to-device copy of N bytes moves N over the
link. GB = 1e9 bytes. Buffers are many times the L2 so the numbers are DRAM's, not the cache's.
"""

from __future__ import annotations

from dataclasses import dataclass

from .kit import Backend


@dataclass(frozen=True)
class BandwidthResult:
    what: str
    bytes_moved: int
    seconds: float

    @property
    def gb_s(self) -> float:
        return self.bytes_moved / self.seconds / 1e9


def _alloc_float32(nbytes: int, device, fill: float | None = None):
    import torch

    x = torch.empty(nbytes // 4, dtype=torch.float32, device=device)
    x.uniform_(-1, 1) if fill is None else x.fill_(fill)
    return x


def measure_copy(backend: Backend, nbytes: int, repeats: int = 10) -> BandwidthResult:
    src = _alloc_float32(nbytes, _device(backend))
    dst = _alloc_float32(nbytes, _device(backend), 0.0)
    t = backend.time(lambda: dst.copy_(src), warmup=2, repeats=repeats, flush=False)
    return BandwidthResult("copy", 2 * src.numel() * 4, t.median_s)


def measure_read(backend: Backend, nbytes: int, repeats: int = 10) -> BandwidthResult:
    import torch

    src = _alloc_float32(nbytes, _device(backend))
    t = backend.time(lambda: torch.sum(src), warmup=2, repeats=repeats, flush=False)
    return BandwidthResult("read", src.numel() * 4, t.median_s)


def measure_elementwise(backend: Backend, nbytes: int, repeats: int = 10) -> BandwidthResult:
    import torch

    a = _alloc_float32(nbytes, _device(backend))
    b = _alloc_float32(nbytes, _device(backend))
    c = _alloc_float32(nbytes, _device(backend), 0.0)
    t = backend.time(lambda: torch.add(a, b, out=c), warmup=2, repeats=repeats, flush=False)
    return BandwidthResult("elementwise", 3 * a.numel() * 4, t.median_s)


def measure_host_link(backend: Backend, nbytes: int, repeats: int = 10) -> tuple[BandwidthResult, BandwidthResult]:
    """(host-to-device, device-to-host) over pinned host memory; CUDA only."""
    import torch

    host = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
    host.fill_(7)
    dev = torch.empty(nbytes, dtype=torch.uint8, device=_device(backend))
    h2d = backend.time(lambda: dev.copy_(host, non_blocking=True), warmup=2, repeats=repeats, flush=False)
    d2h = backend.time(lambda: host.copy_(dev, non_blocking=True), warmup=2, repeats=repeats, flush=False)
    return BandwidthResult("h2d", nbytes, h2d.median_s), BandwidthResult("d2h", nbytes, d2h.median_s)


def _device(backend: Backend):
    return getattr(backend, "device", "cpu")
