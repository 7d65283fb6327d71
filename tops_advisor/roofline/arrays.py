"""A workload's operators as one frozen structure of arrays, one array per field, one meaning per field.

``OpArrays`` is what the roofline's rate functions read: row ``i`` of every array is operator ``i``. It is
built once per workload (``op_arrays``, cached) and never changed; the rates take subsets (``take``) and
derive the dense shapes they run (``dataclasses.replace``).

``GemmShape.batch`` (tops_advisor/workload.py) counts a different thing for each operator kind, so it becomes
three fields here, each zero for operators of other kinds:

    gemm_batch   matmuls: the independent products of one call (bmm's batch; a MoE grouped GEMM's experts hit,
                 ``round(experts_hit)`` from counting or the LLM builder)
    groups       convolutions: the convolution's groups
    batch_heads  fused attention: batch x heads (x the heads sharing one key/value head in grouped decode)

``m``, ``n`` and ``k`` are the operator's GEMM or GEMM-like shape (``GemmShape``): the implicit GEMM of a
convolution (m = N*H_out*W_out, n = C_out/groups, k = C_in/groups*kh*kw), query length x key length x head
dim for attention, rows x elements per row for layer and group norms, output positions x (batch x channels)
for bilinear upsampling; 0 where the counter records no shape.
"""

from __future__ import annotations

import dataclasses
import weakref
from dataclasses import dataclass

import numpy as np

from ..kinds import OpKind
from ..workload import Workload


@dataclass(frozen=True)
class OpArrays:
    """Per-operator arrays of one workload (or of a subset of its operators)."""

    flops: np.ndarray          # operations (a multiply-add is 2)
    bytes: np.ndarray          # bytes read + bytes written
    kernels: np.ndarray        # kernels launched (float)
    strided: np.ndarray        # bool: reads an activation through a permuted view
    internal: np.ndarray       # bool: launched inside another operator's call
    kind: np.ndarray           # int: ``OpKind.position`` (unknown kinds: OTHER)
    dtype: np.ndarray          # str: the precision the operator computes in
    family: np.ndarray         # str: ``OpRecord.family`` ("" when the kind says enough)
    m: np.ndarray
    n: np.ndarray
    k: np.ndarray
    gemm_batch: np.ndarray     # matmuls: independent products per call (0 for other kinds)
    groups: np.ndarray         # convolutions: groups (0 for other kinds)
    batch_heads: np.ndarray    # attention: batch x heads (0 for other kinds)
    window: np.ndarray         # convolutions: kh x kw (1 otherwise)
    spatial: np.ndarray        # convolutions: spatial dimensions, 1-3 (0 otherwise)
    stride: np.ndarray         # convolutions: the largest spatial stride (1 otherwise)
    dilation: np.ndarray       # convolutions: the largest dilation (1 otherwise)
    plane: np.ndarray          # convolutions: output elements per image and channel, H_out*W_out (0: unknown)

    @classmethod
    def of(cls, w: Workload) -> OpArrays:
        """The arrays of every operator of ``w``, in execution order."""
        ops = w.ops
        kinds = {k.value: k for k in OpKind}
        kind = [kinds.get(o.kind, OpKind.OTHER) for o in ops]
        batch = np.array([o.gemm.batch if o.gemm else 0 for o in ops], dtype=np.float64)

        def of_kind(wanted: OpKind) -> np.ndarray:
            return np.where(np.array([k is wanted for k in kind], dtype=bool), batch, 0.0)

        def shape(name: str, missing: float) -> np.ndarray:
            return np.array([getattr(o.gemm, name) if o.gemm else missing for o in ops], dtype=np.float64)

        return cls(
            flops=np.array([o.flops for o in ops], dtype=np.float64),
            bytes=np.array([o.bytes_read + o.bytes_written for o in ops], dtype=np.float64),
            kernels=np.array([o.kernels for o in ops], dtype=np.float64),
            strided=np.array([o.strided for o in ops], dtype=bool),
            internal=np.array([o.internal for o in ops], dtype=bool),
            kind=np.array([k.position for k in kind], dtype=np.int64),
            dtype=np.array([o.dtype for o in ops]),
            family=np.array([o.family for o in ops]),
            m=shape("m", 0), n=shape("n", 0), k=shape("k", 0),
            gemm_batch=of_kind(OpKind.MATMUL), groups=of_kind(OpKind.CONV), batch_heads=of_kind(OpKind.ATTENTION),
            window=shape("window", 1), spatial=shape("spatial_dims", 0), stride=shape("stride", 1),
            dilation=shape("dilation", 1), plane=shape("plane", 0))

    @classmethod
    def build(cls, kind: OpKind, dtype: str, **given: np.ndarray | list) -> OpArrays:
        """Operators of one kind and dtype from ``given`` arrays (all of one length, at least one given); the
        other fields neutral: no work, one kernel, contiguous, no shape, a 1-element window."""
        length = len(next(iter(given.values())))
        neutral = {"kernels": 1.0, "window": 1.0, "stride": 1.0, "dilation": 1.0}
        values: dict[str, np.ndarray] = {}
        for f in dataclasses.fields(cls):
            if f.name == "family":
                continue
            if f.name in given:
                values[f.name] = np.asarray(given[f.name], dtype=_DTYPES.get(f.name, np.float64))
            else:
                values[f.name] = np.full(length, neutral.get(f.name, 0.0), dtype=np.float64)
        values.update(kind=np.full(length, kind.position, dtype=np.int64), dtype=np.array([dtype] * length))
        for name in ("strided", "internal"):
            values[name] = values[name].astype(bool)
        values["family"] = np.asarray(given.get("family", [""] * length))
        return cls(**values)

    @classmethod
    def matmuls(cls, m: np.ndarray, n: np.ndarray, k: np.ndarray, gemm_batch: np.ndarray,
                dtype: str) -> OpArrays:
        """Plain matmuls of the given shapes in one dtype (the probe's GEMMs)."""
        return cls.build(OpKind.MATMUL, dtype, m=m, n=n, k=k, gemm_batch=gemm_batch,
                         flops=2.0 * np.asarray(m) * n * k * gemm_batch)

    def __len__(self) -> int:
        return int(self.kind.shape[0])

    def take(self, rows: np.ndarray) -> OpArrays:
        """The operators at ``rows`` (indices or a boolean mask), every field alike."""
        return dataclasses.replace(self, **{f.name: getattr(self, f.name)[rows] for f in dataclasses.fields(self)})

    def is_kind(self, kind: OpKind) -> np.ndarray:
        return self.kind == kind.position


_DTYPES = {"strided": bool, "internal": bool, "kind": np.int64}

# --- computed once per workload ---------------------------------------------------------------------------
_CACHE: dict[int, tuple[weakref.ref, OpArrays]] = {}


def op_arrays(w: Workload) -> OpArrays:
    """``OpArrays.of(w)``, cached while ``w`` lives (a workload is predicted on many devices)."""
    hit = _CACHE.get(id(w))
    if hit is not None and hit[0]() is w:
        return hit[1]
    a = OpArrays.of(w)
    _CACHE[id(w)] = (weakref.ref(w), a)
    if len(_CACHE) > 256:
        for key in [k for k, (ref, _) in _CACHE.items() if ref() is None]:
            del _CACHE[key]
    return a
