"""Matrix-product throughput per precision: a short shape search, the article's 8192^3 point, small shapes.

Operands are random (never zeros: a bf16 product on zeros ran 13% faster on an H200). fp32 is plain IEEE
FP32 (TF32 off); tf32 is the same product with TF32 allowed; fp16/bf16 accumulate in FP32; fp8 (e4m3) goes
through ``torch._scaled_mm`` with bf16 output; int8 through ``torch._int_mm`` (int32 accumulate).
One multiply-add = 2 operations: a product of (m x k) @ (k x n), ``batch`` times, is 2*m*n*k*batch ops.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import PrecisionUnsupported, ShapeUnsupported
from .kit import Backend

PROBE_PRECISIONS: tuple[str, ...] = ("fp32", "tf32", "fp16", "bf16", "fp8", "int8")
ARTICLE_SHAPE = (8192, 8192, 8192)


@dataclass(frozen=True)
class GemmResult:
    precision: str
    m: int
    n: int
    k: int
    batch: int
    seconds: float

    @property
    def ops(self) -> float:
        return 2.0 * self.m * self.n * self.k * self.batch

    @property
    def tops(self) -> float:
        return self.ops / self.seconds / 1e12

    @property
    def shape(self) -> str:
        return f"{self.m}x{self.n}x{self.k}" + (f"x{self.batch}" if self.batch > 1 else "")


@contextlib.contextmanager
def fp32_mode(tf32: bool):
    """Allow (or forbid) TF32 for fp32 products while the block runs; restores the previous setting."""
    import torch

    matmul = torch.backends.cuda.matmul
    if hasattr(matmul, "fp32_precision"):  # torch >= 2.9: the new API (mixing it with allow_tf32 raises)
        old = matmul.fp32_precision
        matmul.fp32_precision = "tf32" if tf32 else "ieee"
        try:
            yield
        finally:
            matmul.fp32_precision = old
    else:  # pragma: no cover - older torch
        old = matmul.allow_tf32
        matmul.allow_tf32 = tf32
        try:
            yield
        finally:
            matmul.allow_tf32 = old


def check_shape(precision: str, m: int, n: int, k: int, device_type: str) -> None:
    if device_type != "cuda":
        return
    if precision == "fp8" and (m % 16 or n % 16 or k % 16):
        raise ShapeUnsupported("fp8 products need m, n and k divisible by 16")
    if precision == "int8" and (m <= 16 or n % 8 or k % 8):
        raise ShapeUnsupported("int8 products need m > 16 and n, k divisible by 8")


def make_gemm(precision: str, m: int, n: int, k: int, device, batch: int = 1) -> Callable[[], object]:
    """A closure that runs one product; operands are allocated once, here."""
    import torch

    device = torch.device(device)
    check_shape(precision, m, n, k, device.type)
    gen = torch.Generator(device=device).manual_seed(m * 7919 + n * 104729 + k)
    lead = (batch,) if batch > 1 else ()
    if precision in ("fp32", "tf32", "fp16", "bf16"):
        dtype = {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
        a = torch.randn(*lead, m, k, device=device, dtype=dtype[precision], generator=gen)
        b = torch.randn(*lead, k, n, device=device, dtype=dtype[precision], generator=gen)
        c = torch.empty(*lead, m, n, device=device, dtype=dtype[precision])
        op = torch.bmm if batch > 1 else torch.mm
        if precision in ("fp32", "tf32"):
            tf32 = precision == "tf32"

            def run():
                with fp32_mode(tf32):
                    return op(a, b, out=c)
            return run
        return lambda: op(a, b, out=c)
    if batch > 1:
        raise ShapeUnsupported(f"batched {precision} products are not probed")
    if precision == "fp8":
        if not hasattr(torch, "_scaled_mm") or not hasattr(torch, "float8_e4m3fn"):
            raise PrecisionUnsupported("this PyTorch has no torch._scaled_mm / float8_e4m3fn")
        a = torch.randn(m, k, device=device, generator=gen).to(torch.float8_e4m3fn)
        b = torch.randn(n, k, device=device, generator=gen).to(torch.float8_e4m3fn).t()  # column-major
        one = torch.ones((), device=device, dtype=torch.float32)
        return lambda: torch._scaled_mm(a, b, one, one, out_dtype=torch.bfloat16)
    if precision == "int8":
        if not hasattr(torch, "_int_mm"):
            raise PrecisionUnsupported("this PyTorch has no torch._int_mm")
        a = torch.randint(-128, 128, (m, k), device=device, dtype=torch.int8, generator=gen)
        # column-major b (the "TN" layout cuBLASLt's int8 tensor-core kernels want), as torchao passes w.t()
        b = torch.randint(-128, 128, (n, k), device=device, dtype=torch.int8, generator=gen).t()
        return lambda: torch._int_mm(a, b)
    raise PrecisionUnsupported(f"unknown precision {precision!r}")


def precision_support(precision: str, device) -> str | None:
    """None when the device can run ``precision``; otherwise why not (one line)."""
    import torch

    device = torch.device(device)
    if device.type == "cuda":
        major, minor = torch.cuda.get_device_capability(device)
        need = {"tf32": (8, 0), "bf16": (8, 0), "fp8": (8, 9), "int8": (7, 5)}.get(precision)
        if need and (major, minor) < need:
            return (f"{precision} needs compute capability {need[0]}.{need[1]}; "
                    f"this card has {major}.{minor}")
    elif precision == "tf32":
        return "tf32 is a GPU tensor-core mode; the CPU has none"
    try:
        s = 32 if device.type == "cuda" else 16
        make_gemm(precision, s, s, s, device)()
    except (PrecisionUnsupported, RuntimeError, TypeError, NotImplementedError) as exc:
        return f"{precision} does not run here: {str(exc).splitlines()[0][:160]}"
    return None


def measure_gemm(backend: Backend, precision: str, m: int, n: int, k: int, *, batch: int = 1,
                 budget_s: float | None = 0.2, repeats: int = 20, warmup: int = 2) -> GemmResult:
    """Time one shape (warm-up, flush before each run, median). Raises ShapeUnsupported or torch's OOM."""
    fn = make_gemm(precision, m, n, k, backend_device(backend), batch)
    t = backend.time(fn, warmup=warmup, repeats=repeats, flush=True, budget_s=budget_s)
    return GemmResult(precision, m, n, k, batch, t.median_s)


def backend_device(backend: Backend):
    return getattr(backend, "device", "cpu")
