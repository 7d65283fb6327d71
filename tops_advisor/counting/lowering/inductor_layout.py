"""Inductor's per-operator layout and padding decisions, for the inductor lowering (``inductor.py``) and for
an eager model run channels-last. Pure (no torch).

- **Layout** (``layout_optimization``): whether inductor runs a graph's 2-D convolutions channels-last
  (:func:`uses_channels_last`), and what a convolution becomes there (:func:`to_channels_last`: an implicit
  GEMM, or a cuDNN NHWC convolution marked ``family="channels_last"``); an eager model run channels-last
  (:func:`channels_last_convs`, and a training step's :func:`channels_last_step`).
- **Padding for library kernels**: ``pad_mm`` of compute-bound half-precision GEMMs with unaligned rows
  (:func:`pad_mm`), and the head-dimension padding of fused attention (:func:`sdpa_padding`).
"""

from __future__ import annotations

from dataclasses import replace

from ...kinds import OpKind, Phase
from ...units import BYTES_PER_ELEMENT
from ...workload import CHANNELS_LAST_FAMILY, CONV_DGRAD_FAMILY, CONV_WGRAD_FAMILY, OpRecord, Workload
from .facts import OpFacts

# torch/_inductor/graph.py::decide_layout_opt
_NODES_PER_CONV = 300
_CHANNELS_LAST_MULTIPLIER = {"grouped": 1.358, "small": 0.783, "in_out": 0.725, "default": 0.823}
_GEMM_CHANNEL_ALIGNMENT = 8
MM_ALIGNMENT = 8             # pad_mm.get_alignment_size_dtype: fp16/bf16
_PAD_MM_MIN_INTENSITY = 103   # see pad_mm
_PADDED_MM = frozenset({"aten.mm", "aten.addmm", "aten.bmm"})   # fp16 tensor-core GEMMs take K in multiples of 8 elements (16 bytes)


def _conv_class(g) -> str:
    """decide_layout_opt's class of a 2-D convolution (its weight is C_out x C_in/groups x kh x kw)."""
    groups, cin_per_group = g.batch, g.k // g.window
    cout = g.n * groups
    if groups > 1 and cin_per_group > 1:
        return "grouped"
    if cout <= 64 and cin_per_group <= 64:
        return "small"
    if cout * 2 <= cin_per_group and g.window > 1:
        return "in_out"
    return "default"


def uses_channels_last(ops: list) -> bool:
    """Inductor's ``GraphLowering.decide_layout_opt`` (torch/_inductor/graph.py, torch 2.11-2.14) for an
    inference graph on a GPU: channels-last when the graph has convolutions, fewer than 300 FX nodes per
    convolution, and the convolutions' flops weighted by inductor's benchmarked channels-last speed-ups
    (grouped 1.358, small 0.783, in/out 0.725, default 0.823) do not exceed their plain sum. The FX node
    count is estimated as two per counted operator (views are nodes too) plus one per parameter."""
    convs = [c.record for c in ops if c.record.kind == OpKind.CONV and c.record.gemm is not None
             and c.record.gemm.spatial_dims == 2]
    if not convs:
        return False
    params = {i for c in ops if getattr(c, "flow", None) for i in c.flow.param_reads}
    if 2 * len(ops) + len(params) >= _NODES_PER_CONV * len(convs):
        return False
    weighted = sum(c.flops * _CHANNELS_LAST_MULTIPLIER[_conv_class(c.gemm)] for c in convs)
    return weighted <= sum(c.flops for c in convs)


def to_channels_last(record: OpRecord) -> OpRecord:
    """A 2-D convolution in a channels-last graph: a GEMM where :func:`_as_gemm` says so, else a cuDNN NHWC
    convolution, marked ``family="channels_last"`` (grouped and depthwise ones run other kernels than in NCHW:
    ``roofline.rates``)."""
    record = _as_gemm(record)
    if record.kind == OpKind.CONV and record.gemm is not None and record.gemm.spatial_dims == 2:
        return replace(record, family=CHANNELS_LAST_FAMILY)
    return record


def channels_last_convs(w: Workload) -> Workload:
    """An eager workload run channels-last (``model.to(memory_format=torch.channels_last)``): cuDNN runs the
    NHWC kernels it runs under inductor's channels-last layout (``to_channels_last``): ungrouped 2-D
    convolutions as implicit GEMMs without the layout conversions, grouped, depthwise and thin-input ones
    marked ``family="channels_last"`` for their NHWC rates (``roofline.rates``); every other operator moves
    the same bytes in either layout."""
    return replace(w, ops=tuple(to_channels_last(o) for o in w.ops))


def channels_last_step(ops: tuple[OpRecord, ...]) -> tuple[OpRecord, ...]:
    """An eager training step run channels-last (model and batch ``.to(memory_format=torch.channels_last)``):
    the forward's 2-D convolutions as ``channels_last_convs`` runs them, the backward's ungrouped ones as NHWC
    implicit GEMMs (``_as_gemm``), and training batch norm without its one-block-per-channel kernels: on
    channels-last input PyTorch picks cuDNN's persistent spatial mode (aten/src/ATen/native/cudnn/BatchNorm.cpp,
    ``getCudnnBatchNormMode``: training and ChannelsLast -> CUDNN_BATCHNORM_SPATIAL_PERSISTENT) or its own
    channels-last kernels (aten/src/ATen/native/cuda/Normalization.cuh, ``*_channels_last_kernel``: a 2-D grid
    over channels and the reduction), both spread over the GPU, so its bytes price it."""
    out = []
    for r in ops:
        if r.kind == OpKind.CONV and r.gemm is not None and r.gemm.spatial_dims == 2:
            r = to_channels_last(r) if r.phase == Phase.FORWARD else backward_as_gemm(r)
        elif r.family in ("batch_norm", "batch_norm_backward") and r.gemm is not None:
            r = replace(r, gemm=None)
        out.append(r)
    return tuple(out)


def backward_as_gemm(record: OpRecord) -> OpRecord:
    """A channels-last convolution gradient (``CONV_DGRAD_FAMILY`` or ``CONV_WGRAD_FAMILY``) runs as an implicit
    GEMM where its forward does (ungrouped, input channels a multiple of 8); its GEMM shape says the input
    channels as dgrad's n and wgrad's n / window (``counting/handles/backward.py``)."""
    g = record.gemm
    if record.kind != OpKind.CONV or g is None or g.batch != 1 or g.spatial_dims != 2:
        return record
    channels = g.n if record.family == CONV_DGRAD_FAMILY else g.n // max(g.window, 1)
    if record.family not in (CONV_DGRAD_FAMILY, CONV_WGRAD_FAMILY) or channels % _GEMM_CHANNEL_ALIGNMENT:
        return record
    return replace(record, kind=OpKind.MATMUL, dtype="tf32" if record.dtype == "fp32" else record.dtype)


def _as_gemm(record: OpRecord) -> OpRecord:
    """A channels-last 2-D convolution without groups runs as a GEMM: cuBLAS kernels for 1x1 windows and
    cuDNN's implicit-GEMM NHWC kernels otherwise (the H200 trace), so it is predicted as its implicit GEMM.
    Input channels not a multiple of 8 (an RGB stem) run cuDNN's own kernels (``image_first_layer``): a
    convolution still."""
    g = record.gemm
    if record.kind == OpKind.CONV and g is not None and g.batch == 1 and g.spatial_dims == 2 \
            and (g.k // g.window) % _GEMM_CHANNEL_ALIGNMENT == 0:
        # still a cuDNN convolution call: fp32 runs in TF32 (torch.backends.cudnn.allow_tf32 defaults to True)
        return replace(record, kind=OpKind.MATMUL, dtype="tf32" if record.dtype == "fp32" else record.dtype)
    return record


def pad_mm(record: OpRecord) -> tuple[OpRecord, list[OpRecord]]:
    """Inductor's ``pad_mm`` pass (torch/_inductor/fx_passes/pad_mm.py, ``shape_padding`` on by default): a
    half-precision matrix product whose row length (n or k) is not a multiple of 8 and that is compute-bound
    is run on zero-padded operands (a pad kernel per padded operand; the result is sliced, a view). The
    pass pads m too, where its benchmark finds it faster; unaligned m costs cuBLAS little, so it is left. Compute-bound is
    inductor's test, intensity m*n*k / (m*k + k*n + m*n) above half the card's flops per byte: 103 on the
    H100/H200 (990 TFLOP/s fp16 over 4.8 TB/s, x 0.5) is used for every card."""
    g = record.gemm
    if record.kind != OpKind.MATMUL or g is None or record.name not in _PADDED_MM or record.dtype not in ("fp16", "bf16"):
        return record, []
    m, n, k = (g.m, g.n, g.k)
    pad = [m] + [-(-d // MM_ALIGNMENT) * MM_ALIGNMENT for d in (n, k)]  # rows (m) need no alignment
    if pad == [m, n, k] or m * n * k <= _PAD_MM_MIN_INTENSITY * (m * k + k * n + m * n):
        return record, []
    item = BYTES_PER_ELEMENT[record.dtype]
    copies = []
    if pad[2] != k:
        copies.append((g.batch * m * k, g.batch * pad[0] * pad[2]))
    if pad[1] != n or pad[2] != k:
        copies.append((g.batch * k * n, g.batch * pad[2] * pad[1]))
    padded = replace(record, gemm=replace(g, m=pad[0], n=pad[1], k=pad[2]))
    return padded, [OpRecord(name="triton.pad_mm", kind=OpKind.COPY, module=record.module, flops=0.0,
                             bytes_read=src * item, bytes_written=dst * item, dtype=record.dtype,
                             phase=record.phase)
                    for src, dst in copies]


def sdpa_padding(attention: OpRecord, facts: OpFacts | None) -> list[OpRecord]:
    """Fused attention pads a half-precision head dimension that is not a multiple of 8 (as in eager,
    ``lowering.lower_pytorch_cuda`` rewrite 2); inductor generates one pointwise kernel per padded query,
    key and value, and one that slices the padded output back (H200 trace, Conformer-S's head dim 36:
    ``triton_poi_fused__scaled_dot_product_flash_attention_constant_pad_nd`` x3 and ``clone_slice`` per
    layer)."""
    inputs = facts.attention_inputs if facts is not None else ()
    if not inputs or inputs[0].dtype not in ("fp16", "bf16") or inputs[0].last_dim % MM_ALIGNMENT == 0:
        return []
    out = []
    for t in inputs:
        padded = t.numel // t.last_dim * (-(-t.last_dim // MM_ALIGNMENT) * MM_ALIGNMENT) * t.itemsize
        out.append(OpRecord(name="triton.sdpa_pad", kind=OpKind.COPY, module=attention.module, flops=0.0,
                            bytes_read=float(t.numel * t.itemsize), bytes_written=float(padded), dtype=t.dtype,
                            phase=attention.phase))
    q = out[0]
    out.append(OpRecord(name="triton.sdpa_unpad", kind=OpKind.COPY, module=attention.module, flops=0.0,
                        bytes_read=q.bytes_written, bytes_written=q.bytes_read, dtype=q.dtype, phase=attention.phase))
    return out
