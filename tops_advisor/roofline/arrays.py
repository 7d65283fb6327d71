"""A workload's operators as one frozen structure of arrays, one array per field, one meaning per field.

``OpArrays`` is what the roofline's rate functions read: row ``i`` of every array is operator ``i``. It is
built once per workload (``op_arrays``, cached) and never changed; the rates take subsets (``take``) and
derive the dense shapes they run (``dataclasses.replace``).

The counter's ``GemmShape`` (tops_advisor/workload.py) means a different thing for each operator kind: a
matrix product for the GEMM kinds, its kernel's parallel shape for a few memory-bound operators. Each of its
dimensions lands in the field of its meaning (``SHAPE_FIELDS``); every shape field below is 0 for operators of
other kinds and for operators without a shape.

GEMM kinds (matmul, conv, attention), ``batch`` (m x k) @ (k x n) products:

    m, n, k      matmuls: rows, columns and reduction depth of each product
                 convolutions: the implicit GEMM, m = N*H_out*W_out, n = C_out/groups, k = C_in/groups*kh*kw
                 fused attention: its larger product Q @ K^T, m = query length, n = key length, k = head dim
    tile_m       GEMM kinds: the rows at which the kernel's tile was chosen: m, except in an engine built for
                 another shape (``tuned_rows``: the engine's ``opt`` shape, whose tactics every shape runs)
    gemm_batch   matmuls: the independent products of one call (bmm's batch; a MoE grouped GEMM's experts
                 hit, ``round(experts_hit)`` from counting or the LLM builder)
    groups       convolutions: the convolution's groups
    batch_heads  fused attention: batch x heads (x the heads sharing one key/value head in grouped decode)

Norms: layer and group norms (batch and RMS norms record no shape); PyTorch's kernels reduce each row in one
thread block.

    norm_rows          layer norm: elements / elements of the normalized shape; group norm: batch x groups
    norm_row_elements  layer norm: elements of the normalized shape; group norm: channels per group x plane

Copies: bilinear upsampling, the only copy with a shape; PyTorch's NCHW kernel gives each output position one
thread, which loops over the batch and the channels.

    upsample_positions  output positions, H_out*W_out
    upsample_planes     batch x channels

``window``, ``spatial``, ``stride``, ``dilation`` and ``plane`` describe convolutions (neutral values for
other operators: window, stride and dilation 1, spatial and plane 0).

Reused activations (``OpRecord.reuse``: an input an earlier operator wrote), the ``REUSE_SLOTS`` largest per
operator, one column each (0 where an operator has fewer): ``reuse_bytes`` (the bytes it reads of it),
``reuse_between`` (the traffic of the operators in between), ``reuse_producer`` (the producer's traffic),
``reuse_consumer`` (the operator's own, in distinct bytes).
"""

from __future__ import annotations

import dataclasses
import weakref
from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from ..kinds import OpKind
from ..workload import CONV_WGRAD_FAMILY, DEPTHWISE_WGRAD_FAMILY, OpRecord, Workload


@dataclass(frozen=True)
class OpArrays:
    """Per-operator arrays of one workload (or of a subset of its operators)."""

    flops: np.ndarray          # operations (a multiply-add is 2)
    bytes: np.ndarray          # bytes read + bytes written
    bytes_written: np.ndarray  # bytes written
    kernels: np.ndarray        # kernels launched (float)
    strided: np.ndarray        # bool: reads an activation through a permuted view
    internal: np.ndarray       # bool: launched inside another operator's call
    kind: np.ndarray           # int: ``OpKind.position`` (unknown kinds: OTHER)
    dtype: np.ndarray          # str: the precision the operator computes in
    family: np.ndarray         # str: ``OpRecord.family`` ("" when the kind says enough)
    m: np.ndarray              # GEMM kinds: rows of the product (attention: query length; 0 for other kinds)
    n: np.ndarray              # GEMM kinds: columns (attention: key length; 0 for other kinds)
    k: np.ndarray              # GEMM kinds: reduction depth (attention: head dim; 0 for other kinds)
    tile_m: np.ndarray         # GEMM kinds: rows the kernel's tile was chosen at (m unless ``tuned_rows``)
    gemm_batch: np.ndarray     # matmuls: independent products per call (0 for other kinds)
    groups: np.ndarray         # convolutions: groups (0 for other kinds)
    batch_heads: np.ndarray    # attention: batch x heads (0 for other kinds)
    norm_rows: np.ndarray      # norms: rows, one thread block each (0 for other kinds)
    norm_row_elements: np.ndarray   # norms: elements per row (0 for other kinds)
    upsample_positions: np.ndarray  # bilinear upsampling: output positions H_out*W_out (0 for other kinds)
    upsample_planes: np.ndarray     # bilinear upsampling: batch x channels (0 for other kinds)
    window: np.ndarray         # convolutions: kh x kw (1 otherwise)
    spatial: np.ndarray        # convolutions: spatial dimensions, 1-3 (0 otherwise)
    stride: np.ndarray         # convolutions: the largest spatial stride (1 otherwise)
    dilation: np.ndarray       # convolutions: the largest dilation (1 otherwise)
    plane: np.ndarray          # convolutions: output elements per image and channel, H_out*W_out (0: unknown)
    reuse_bytes: np.ndarray    # (ops, REUSE_SLOTS): bytes read of activations an earlier operator wrote
    reuse_between: np.ndarray  # (ops, REUSE_SLOTS): traffic between each one's producer and this operator
    reuse_producer: np.ndarray  # (ops, REUSE_SLOTS): each one's producer's own traffic
    reuse_consumer: np.ndarray  # (ops, REUSE_SLOTS): this operator's own traffic (distinct bytes)

    @classmethod
    def of(cls, w: Workload) -> OpArrays:
        """The arrays of every operator of ``w``, in execution order."""
        ops = w.ops
        kinds = {k.value: k for k in OpKind}
        kind = [kinds.get(o.kind, OpKind.OTHER) for o in ops]

        def shape(name: str, missing: float) -> np.ndarray:
            return np.array([getattr(o.gemm, name) if o.gemm else missing for o in ops], dtype=np.float64)

        shapes = _split_shapes(ops, kind)
        return cls(
            flops=np.array([o.flops for o in ops], dtype=np.float64),
            bytes=np.array([o.bytes_read + o.bytes_written for o in ops], dtype=np.float64),
            bytes_written=np.array([o.bytes_written for o in ops], dtype=np.float64),
            kernels=np.array([o.kernels for o in ops], dtype=np.float64),
            strided=np.array([o.strided for o in ops], dtype=bool),
            internal=np.array([o.internal for o in ops], dtype=bool),
            kind=np.array([k.position for k in kind], dtype=np.int64),
            dtype=np.array([o.dtype for o in ops]),
            family=np.array([o.family for o in ops]),
            **shapes, tile_m=shapes["m"],
            window=shape("window", 1), spatial=shape("spatial_dims", 0), stride=shape("stride", 1),
            dilation=shape("dilation", 1), plane=shape("plane", 0), **_reuse_columns(ops))

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
            if f.name in REUSE_FIELDS:
                values[f.name] = np.zeros((length, REUSE_SLOTS))
            elif f.name in given:
                values[f.name] = np.asarray(given[f.name], dtype=_DTYPES.get(f.name, np.float64))
            else:
                values[f.name] = np.full(length, neutral.get(f.name, 0.0), dtype=np.float64)
        if "tile_m" not in given:
            values["tile_m"] = values["m"]
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

# Reused activations kept per operator (the largest by bytes): an elementwise add reads two, a concatenation
# more, whose smaller inputs matter little.
REUSE_SLOTS = 3
REUSE_FIELDS = ("reuse_bytes", "reuse_between", "reuse_producer", "reuse_consumer")


def _reuse_columns(ops: tuple[OpRecord, ...]) -> dict[str, np.ndarray]:
    """``OpRecord.reuse`` as (ops, REUSE_SLOTS) arrays, largest reads first, zeros where there is none."""
    out = {name: np.zeros((len(ops), REUSE_SLOTS)) for name in REUSE_FIELDS}
    for i, o in enumerate(ops):
        for slot, r in enumerate(sorted(o.reuse, key=lambda r: -r.bytes)[:REUSE_SLOTS]):
            out["reuse_bytes"][i, slot] = r.bytes
            out["reuse_between"][i, slot] = r.between_bytes
            out["reuse_producer"][i, slot] = r.producer_bytes
            out["reuse_consumer"][i, slot] = r.consumer_bytes
    return out

# The field each dimension of the counter's GemmShape (m, n, k, batch) lands in, by the operator's kind
# (None: not kept; kinds not listed keep no shape).
SHAPE_FIELDS: dict[OpKind, tuple[str | None, str | None, str | None, str | None]] = {
    OpKind.MATMUL: ("m", "n", "k", "gemm_batch"),
    OpKind.CONV: ("m", "n", "k", "groups"),
    OpKind.ATTENTION: ("m", "n", "k", "batch_heads"),
    OpKind.NORM: ("norm_rows", "norm_row_elements", None, None),
    OpKind.COPY: ("upsample_positions", "upsample_planes", None, None),
}


# A convolution's weight gradient is the GEMM (C_out x N*H_out*W_out) @ (N*H_out*W_out x C_in*kh*kw): few output
# tiles and a deep reduction. cuDNN's wgrad kernels split that reduction across thread blocks (split-K), so they
# fill the device as the layer's forward implicit GEMM does; the roofline prices a weight gradient at the
# forward's shape (m = N*H_out*W_out, n = C_out, k = C_in*kh*kw), which has its multiply-adds. H200 check:
# ResNet-50 amp's backward kernels (benchmarks/studies/training-step/h200_train_profiles.json) run its weight
# gradients at the rate of its forward convolutions within 2x, where the wgrad shape's own tile count gave 3.4x
# slower (a blind round scores it).
WGRAD_FAMILIES = frozenset({CONV_WGRAD_FAMILY, DEPTHWISE_WGRAD_FAMILY})


def _rate_dims(o: OpRecord) -> tuple[int, int, int, int]:
    """The (m, n, k, batch) the roofline prices ``o``'s GemmShape at (a weight gradient at its forward's)."""
    g = o.gemm
    if o.family in WGRAD_FAMILIES:
        return g.k, g.m, g.n, g.batch
    return g.m, g.n, g.k, g.batch


def _split_shapes(ops: tuple[OpRecord, ...], kind: list[OpKind]) -> dict[str, np.ndarray]:
    """The shape fields of ``ops`` (``SHAPE_FIELDS``): each GemmShape dimension in its kind's field, 0 in the
    others and for operators without a shape."""
    names = {name for fields in SHAPE_FIELDS.values() for name in fields if name}
    out = {name: np.zeros(len(ops), dtype=np.float64) for name in sorted(names)}
    for i, (o, kd) in enumerate(zip(ops, kind, strict=True)):
        if o.gemm is None:
            continue
        for value, name in zip(_rate_dims(o), SHAPE_FIELDS.get(kd, ()), strict=False):
            if name:
                out[name][i] = value
    return out


def tuned_rows(a: OpArrays, tuned: OpArrays) -> OpArrays:
    """``a`` with each GEMM's tile chosen at ``tuned``'s rows: ``tuned`` is the same model counted at the shape
    an engine's builder timed its tactics at (TensorRT's ``opt`` shape), operator for operator."""
    if len(tuned) != len(a) or np.any(tuned.kind != a.kind):
        raise InputError("the engine's opt shape does not give the same layers as the run's shape",
                         hint="give an opt shape of the same model that differs only in batch or image size")
    return dataclasses.replace(a, tile_m=np.where(a.m > 0, tuned.m, a.m))


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
