"""Derive workloads at other batch sizes and precisions without counting the model again.

Batch: every per-operator quantity (operations, bytes, GEMM dimensions) of a feed-forward model is affine in
the batch size, so two counts at batches b1 < b2 give every other batch by linear extrapolation. The two
counts must have the same operator sequence (same names and kinds); otherwise the model is not batch-affine
and must be counted at each batch.

Precision: bytes of floating-point data scale with the element size; operations do not. Parameters and
activations change together (weights and activations in the same precision, as TensorRT-style int8/fp8
inference runs). Attention stays at fp16 for int8 (no int8 attention kernels in common stacks).
"""

from __future__ import annotations

from dataclasses import replace

from .errors import CountingError
from .units import BYTES_PER_ELEMENT
from .workload import Note, NoteKind, Reuse, Workload


def _lerp(v1: float, v2: float, t: float) -> float:
    return v1 + (v2 - v1) * t


def _lerp_int(v1: int, v2: int, t: float) -> int:
    return max(int(round(v1 + (v2 - v1) * t)), 1)


def batch_affine(w1: Workload, w2: Workload, batch: int) -> Workload:
    """The workload at ``batch`` from counts at two other batches (w1.batch != w2.batch)."""
    if w1.batch == w2.batch:
        raise CountingError("batch scaling needs counts at two different batch sizes")
    if batch == w1.batch:
        return w1
    if batch == w2.batch:
        return w2
    if len(w1.ops) != len(w2.ops) or any(a.name != b.name for a, b in zip(w1.ops, w2.ops, strict=True)):
        raise CountingError(f"{w1.name}: the operator sequence changes with the batch size; "
                            "count it at each batch instead")
    t = (batch - w1.batch) / (w2.batch - w1.batch)
    ops = []
    for a, b in zip(w1.ops, w2.ops, strict=True):
        gemm = None
        if a.gemm and b.gemm:
            gemm = replace(a.gemm, m=_lerp_int(a.gemm.m, b.gemm.m, t), n=_lerp_int(a.gemm.n, b.gemm.n, t),
                           k=_lerp_int(a.gemm.k, b.gemm.k, t), batch=_lerp_int(a.gemm.batch, b.gemm.batch, t))
        ops.append(replace(
            a, flops=max(_lerp(a.flops, b.flops, t), 0.0), bytes_read=max(_lerp(a.bytes_read, b.bytes_read, t), 0.0),
            bytes_written=max(_lerp(a.bytes_written, b.bytes_written, t), 0.0), gemm=gemm,
            reuse=_lerp_reuse(a.reuse, b.reuse, t)))
    return replace(
        w1, batch=batch, ops=tuple(ops),
        input_bytes=max(_lerp(w1.input_bytes, w2.input_bytes, t), 0.0),
        activation_peak_bytes=max(_lerp(w1.activation_peak_bytes, w2.activation_peak_bytes, t), 0.0))


def _lerp_reuse(a: tuple[Reuse, ...], b: tuple[Reuse, ...], t: float) -> tuple[Reuse, ...]:
    """Each reused activation's bytes at the batch between (its traffic scales with the batch as the rest)."""
    if len(a) != len(b):
        return a
    return tuple(Reuse(bytes=max(_lerp(x.bytes, y.bytes, t), 0.0),
                       between_bytes=max(_lerp(x.between_bytes, y.between_bytes, t), 0.0),
                       producer_bytes=max(_lerp(x.producer_bytes, y.producer_bytes, t), 0.0),
                       consumer_bytes=max(_lerp(x.consumer_bytes, y.consumer_bytes, t), 0.0))
                 for x, y in zip(a, b, strict=True))


def _scaled_reuse(r: Reuse, ratio: float) -> Reuse:
    """A reused activation at another element size (its traffic scaled as the operator's own)."""
    return Reuse(bytes=r.bytes * ratio, between_bytes=r.between_bytes * ratio, producer_bytes=r.producer_bytes * ratio,
                 consumer_bytes=r.consumer_bytes * ratio)


FLOAT_DTYPES = ("fp32", "tf32", "fp16", "bf16", "fp8", "fp4", "fp64")
MATRIX_KINDS = ("matmul", "conv")


def retype(w: Workload, dtype: str) -> Workload:
    """The same workload at another precision: float bytes rescaled, matrix operators computed at ``dtype``.

    Vector work (elementwise, norms) of an int8/fp8/int4 model still computes in fp16 (its bytes shrink with
    the activations); attention of an int8 model stays fp16.
    """
    if dtype == w.dtype:
        return w
    ops = []
    for op in w.ops:
        if op.dtype not in FLOAT_DTYPES:
            ops.append(op)
            continue
        ratio = BYTES_PER_ELEMENT[dtype] / BYTES_PER_ELEMENT[op.dtype]
        if op.kind in MATRIX_KINDS or dtype in FLOAT_DTYPES and dtype not in ("fp8", "fp4"):
            new_dtype = dtype
        elif op.kind == "attention" and dtype in ("fp8",):
            new_dtype = dtype
        else:
            new_dtype = "fp16"
        ops.append(replace(op, dtype=new_dtype, bytes_read=op.bytes_read * ratio,
                           bytes_written=op.bytes_written * ratio, param_bytes=op.param_bytes * ratio,
                           reuse=tuple(_scaled_reuse(r, ratio) for r in op.reuse)))
    ratio_w = BYTES_PER_ELEMENT[dtype] / BYTES_PER_ELEMENT.get(w.dtype, 4)
    return replace(w, dtype=dtype, ops=tuple(ops), param_bytes=w.param_bytes * ratio_w,
                   activation_peak_bytes=w.activation_peak_bytes * ratio_w,
                   input_bytes=w.input_bytes * ratio_w,
                   notes=w.notes + (Note(NoteKind.DERIVED,
                                             f"derived from a count at {w.dtype}: bytes scaled by element size"),))
