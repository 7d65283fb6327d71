"""Which kernel eager PyTorch on CUDA picks for a depthwise convolution, from its shapes alone.

PyTorch (aten/src/ATen/native/Convolution.cpp, ``ConvParams::use_cudnn_depthwise`` and
``check_cudnn_depthwise_workload_with_filter``, the version for cuDNN 8.2 and later) sends an NCHW depthwise
2-D convolution to cuDNN only in half precision (``kHalf``; bf16 and fp32 never), with at least 32 channels,
no dilation, equal strides, a square 1x1, 3x3 or 5x5 filter and an input at least 7 wide; at stride 1 always,
at stride 2 by a table of batch, channels and width, at other strides never. Everything else runs PyTorch's
own ``conv_depthwise2d_forward_kernel``, which computes in fp32 per element: its rate is the same in half and
single precision (H200 per-operator profiles, benchmarks/results/*records*: 5x5 at 2.7 TFLOPS fp16 and
2.8 fp32; ConvMixer's 7x7 at 2.5-2.7 fp16, where cuDNN's fp16 depthwise kernels reach 4-7).

A channels-last input always goes to cuDNN (``cudnn_conv_suggest_memory_format``); the inductor lowering
marks those (``CHANNELS_LAST_FAMILY``). The rule holds for the half-precision dtype only; the roofline applies it
(``rates.depthwise_rate``) and treats bf16 as native throughout.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..workload import NATIVE_DEPTHWISE_FAMILY

_CUDNN_FILTERS = (1, 3, 5)
_MIN_CHANNELS = 32
_MIN_WIDTH = 7


def depthwise_family(x_shape: Sequence[int], w_shape: Sequence[int], stride: Sequence[int],
                     dilation: Sequence[int], groups: int, transposed: bool, half: bool = True) -> str:
    """``NATIVE_DEPTHWISE_FAMILY`` for a 2-D depthwise convolution PyTorch runs on its own kernel even in
    fp16 (``half``: the input is fp16; bf16 and fp32 ones always run it); "" for every other convolution
    (cuDNN's)."""
    if transposed or len(x_shape) != 4 or len(w_shape) != 4:
        return ""
    batch, channels, width = x_shape[0], x_shape[1], x_shape[3]
    if groups <= 1 or channels != groups or w_shape[0] % channels:
        return ""   # not depthwise: cuDNN's ordinary (grouped) convolution
    if half and _cudnn_takes_it(batch, channels, width, w_shape, stride, dilation):
        return ""
    return NATIVE_DEPTHWISE_FAMILY


def _cudnn_takes_it(batch: int, channels: int, width: int, w_shape: Sequence[int], stride: Sequence[int],
                    dilation: Sequence[int]) -> bool:
    kh, kw = w_shape[2], w_shape[3]
    s = tuple(stride) if len(stride) == 2 else (stride[0], stride[0])
    if any(d != 1 for d in dilation) or s[0] != s[1] or channels < _MIN_CHANNELS:
        return False
    if kh != kw or kw not in _CUDNN_FILTERS or width < _MIN_WIDTH:
        return False
    if s[1] == 1:
        return True
    if s[1] != 2:
        return False
    if batch == 1:
        return (kw == 1 and width <= 28) or kw in (3, 5)
    if kw == 1:
        return batch <= 16 and channels >= 128 and width <= 7
    return channels >= 512 or (channels >= 256 and width >= 28)
