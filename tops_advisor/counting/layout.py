"""Memory layouts as the GPU would see them, read from the strides of meta (or fake) tensors.

Which inputs are permuted views (slow, uncoalesced reads for memory-bound kernels), which elementwise inputs
are dense in one memory order anyway, which convolution inputs PyTorch copies dense first, how cuDNN lays out
a convolution's output, which kernel family a layout picks, and which channels-last output a CUDA kernel
refuses by size.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from ..kinds import OpKind
from ..workload import (
    CONV_DGRAD_FAMILY,
    CONV_WGRAD_FAMILY,
    DEPTHWISE_DGRAD_FAMILY,
    DEPTHWISE_WGRAD_FAMILY,
    NATIVE_DEPTHWISE_FAMILY,
)
from .conv_backend import depthwise_family
from .handles import OpCall, int_tuple

CONVOLUTIONS = ("aten.convolution", "aten._convolution")
CONV_BACKWARD = "aten.convolution_backward"
# The gradients of a depthwise convolution PyTorch keeps from cuDNN run its own backward kernels
# (conv_depthwise2d_backward): convolution_backward picks the backend by the same rule as the forward
# (aten/src/ATen/native/Convolution.cpp, ``select_conv_backend``).
_DEPTHWISE_PARTS = {CONV_DGRAD_FAMILY: DEPTHWISE_DGRAD_FAMILY, CONV_WGRAD_FAMILY: DEPTHWISE_WGRAD_FAMILY}

# Operators whose kernels differ within their kind (OpRecord.family): the roofline reads the family, never
# an ATen name.
OP_FAMILY = {"aten.native_batch_norm": "batch_norm", "aten.native_layer_norm": "layer_norm",
             "aten.layer_norm": "layer_norm", "aten.native_group_norm": "group_norm",
             "aten.group_norm": "group_norm", "aten.upsample_bilinear2d": "bilinear_upsample",
             # training: the norms' backward kernels differ from their forward ones, and fused attention's too
             "aten.native_batch_norm_backward": "batch_norm_backward", "aten.batch_norm_backward": "batch_norm_backward",
             "aten.cudnn_batch_norm_backward": "batch_norm_backward",
             "aten.miopen_batch_norm_backward": "batch_norm_backward",
             "aten.native_layer_norm_backward": "layer_norm_backward",
             "aten.native_group_norm_backward": "group_norm_backward",
             "aten._fused_rms_norm_backward": "rms_norm_backward",
             "aten._scaled_dot_product_flash_attention_backward": "attention_backward",
             "aten._scaled_dot_product_efficient_attention_backward": "attention_backward",
             "aten._scaled_dot_product_cudnn_attention_backward": "attention_backward"}

# Memory-bound kinds whose kernels slow down when an input is a permuted or transposed view.
_STRIDE_SENSITIVE_KINDS = (OpKind.ELEMENTWISE, OpKind.NORM, OpKind.SOFTMAX, OpKind.REDUCTION, OpKind.COPY)
_INT_MAX = 2**31 - 1


def _strided(t: torch.Tensor) -> bool:
    """A permuted/transposed view: not contiguous in either standard layout. Broadcast views (a zero
    stride, e.g. a bias) and scalars are not strided in this sense."""
    try:
        if t.dim() < 2 or t.numel() <= 1 or 0 in t.stride():
            return False
        return not (t.is_contiguous() or t.is_contiguous(memory_format=torch.channels_last)
                    if t.dim() == 4 else t.is_contiguous())
    except (RuntimeError, NotImplementedError):
        return False


def _one_dense_layout(tensors: Sequence[torch.Tensor]) -> bool:
    """Every full-size input of an elementwise operator is dense in one and the same memory order (a permuted
    view of a contiguous tensor, such as a transpose). PyTorch's TensorIterator then reorders the dimensions
    and runs its vectorised kernel in memory order: data2vec-audio's GELU on a transposed (batch, channels,
    time) view moved 3.1 TB/s at fp16 batch 32 (H200 profile, blind round 21), as a contiguous one does.
    Broadcast inputs (a zero stride) and scalars do not count."""
    full = [t for t in tensors if t.dim() >= 2 and t.numel() > 1 and 0 not in t.stride()]
    if not full:
        return False
    first = full[0]
    if any(t.shape != first.shape or t.stride() != first.stride() for t in full):
        return False
    order = sorted(range(first.dim()), key=lambda d: -first.stride()[d])   # outermost first
    return first.permute(order).is_contiguous()


def reads_strided(kind: OpKind, activations: Sequence[torch.Tensor]) -> bool:
    """``OpRecord.strided``: a memory-bound operator reads an activation through a permuted view, unless it is
    elementwise over inputs dense in one order (TensorIterator walks that layout in memory order)."""
    strided = kind in _STRIDE_SENSITIVE_KINDS and any(_strided(t) for t in activations)
    if strided and kind == OpKind.ELEMENTWISE and _one_dense_layout(activations):
        return False
    return strided


def not_dense(x: torch.Tensor) -> bool:
    """A convolution input PyTorch copies before cuDNN: dense in neither NCHW nor channels-last once a 1-D
    input is viewed as 2-D (N, C, 1, L), as ``_convolution`` does (so a transposed (N, L, C) sequence is a
    channels-last input, not a copy, while a channel slice of a batch is one)."""
    try:
        x = x.unsqueeze(2) if x.dim() == 3 else x
        layout = {4: torch.channels_last, 5: torch.channels_last_3d}.get(x.dim())
        if layout is None or x.numel() <= 1:
            return False
        return not (x.is_contiguous() or x.is_contiguous(memory_format=layout))
    except (RuntimeError, NotImplementedError):
        return False


def _channels_last(t: torch.Tensor) -> bool:
    return t.dim() == 4 and not t.is_contiguous() and t.is_contiguous(memory_format=torch.channels_last)


def cudnn_output_layout(name: str, args: tuple, out):
    """cuDNN writes the output of a convolution with a channels-last input channels-last
    (``cudnn_conv_suggest_memory_format``); the meta kernel writes it NCHW. Restride it as the GPU lays it
    out, so the layouts downstream (residual adds, norms, upsampling, the next depthwise convolution) are the
    GPU's."""
    if name in CONVOLUTIONS and args and isinstance(args[0], torch.Tensor) and _channels_last(args[0]) \
            and isinstance(out, torch.Tensor) and out.dim() == 4 and out.is_contiguous():
        return out.contiguous(memory_format=torch.channels_last)
    return out


def _conv_family(call: OpCall, x: torch.Tensor, w: torch.Tensor, first: int, by_dtype: bool = False) -> str:
    """A convolution's backend family from its input, weight and the arguments from stride on (``first``:
    the position of stride: 3 in the forward, 4 in convolution_backward). ``by_dtype``: a bf16 or fp32 depthwise
    convolution is PyTorch's own kernel too (the forward's rates say so by dtype; a gradient's by family)."""
    if _channels_last(x):
        return ""
    return depthwise_family(tuple(x.shape), tuple(w.shape), int_tuple(call.arg(first, "stride", 1)),
                            int_tuple(call.arg(first + 2, "dilation", 1)), int(call.arg(first + 5, "groups", 1)),
                            bool(call.arg(first + 3, "transposed", False)),
                            half=x.dtype == torch.float16 or not by_dtype)


def family(call: OpCall, ins: list[torch.Tensor], own: str = "") -> str:
    """``OP_FAMILY``; bilinear upsampling of a channels-last input runs PyTorch's NHWC kernel (parallel over
    every element), not the NCHW one the family stands for (HF SegFormer's decode head: 2.85 ms at batch 128
    where the NCHW kernel takes 30); a depthwise convolution PyTorch keeps from cuDNN (``conv_backend``) unless
    its input is channels-last (cuDNN's NHWC kernels take it). ``own``: the family the handle gave a part of
    the call (a backward convolution's gradient), made the native depthwise one where that backend runs it."""
    name = call.name
    if own:
        if own in _DEPTHWISE_PARTS and name == CONV_BACKWARD and len(ins) >= 3 \
                and _conv_family(call, ins[1], ins[2], 4, by_dtype=True) == NATIVE_DEPTHWISE_FAMILY:
            return _DEPTHWISE_PARTS[own]
        return own
    if name in CONVOLUTIONS and len(ins) >= 2:
        return _conv_family(call, ins[0], ins[1], 3)
    found = OP_FAMILY.get(name, "")
    if found == "bilinear_upsample" and ins and _channels_last(ins[0]):
        return ""
    return found


def refused_on_cuda(name: str, ins: list[torch.Tensor], outs: list[torch.Tensor]) -> bool:
    """PyTorch's NHWC bilinear upsampling kernel checks its output size
    (``upsample_bilinear2d_nhwc only supports output tensors with less than INT_MAX elements``)."""
    return (name == "aten.upsample_bilinear2d" and bool(ins) and bool(outs) and _channels_last(ins[0])
            and outs[0].numel() >= _INT_MAX)
