"""Cost formulas of the backward operators that carry a training step's heavy work: convolutions (the data,
weight and bias gradients, each its own kernel), fused attention, and the normalisations.

The convolution's gradients follow ``torch.utils.flop_counter`` (``conv_backward_flop``): each of the data and
the weight gradient is the forward's multiply-adds, two operations each. A handle of this module may answer a
tuple of costs, one per kernel of different shape (``registry.Handle``): the counter records each.
"""

from __future__ import annotations

import math

from ... import opcosts as O
from ...kinds import OpKind
from ...workload import CONV_BGRAD_FAMILY, CONV_DGRAD_FAMILY, CONV_WGRAD_FAMILY, GemmShape
from .registry import Cost, OpCall, TensorInfo, int_tuple, register
from .vector import channel_rows


def _bytes_of(t: TensorInfo) -> float:
    """A gradient written in full: every element of a tensor of ``t``'s shape, at ``t``'s element size."""
    return t.numel * t.itemsize


# --------------------------------------------------------------------------------------------------------
# convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed,
# output_padding, groups, output_mask) -> (grad_input, grad_weight, grad_bias), each computed only where
# output_mask says (a frozen weight: no weight gradient; the first layer: no data gradient).
#
# cuDNN runs the data gradient (dgrad) and the weight gradient (wgrad) as separate implicit-GEMM kernels
# (H200 profiles, benchmarks/studies/training-step/h200_train_profiles.json: ``sm90_xmma_dgrad_implicit_gemm``
# and ``sm90_xmma_wgrad_...`` kernels under ConvolutionBackward0); PyTorch computes the bias gradient itself,
# ``grad_output.sum([0, 2, 3])`` (aten/src/ATen/native/Convolution.cpp, ``convolution_backward``: "Calculate
# bias gradients outside of the backend"). So one call is up to three records (``CONV_*_FAMILY``).
#
# Shapes, with W = weight [w0, w1, *K] and "lo" the spatial positions of the smaller of input and output (the
# output of a convolution, the input of a transposed one): the forward is N * lo * w0 * w1 * K multiply-adds
# either way, and so is each gradient.
# - dgrad is the convolution that writes the input's gradient: m = N * (input positions), n its channels per
#   group, k the other side's channels per group x K (a convolution: m = N*H_in*W_in, n = C_in/groups,
#   k = C_out/groups*kh*kw). For a strided convolution its m x n x k is stride^2 times the multiply-adds: the
#   GEMM's rows include the taps that fall between strides, which carry no work.
# - wgrad is a product over the batch and the positions: m = w0/groups, n = w1*K, k = N * lo, batch = groups.
# Both keep the forward's window, stride and dilation; ``plane`` is dgrad's m per image and the forward's
# plane (lo) for wgrad and bgrad.
@register("aten.convolution_backward")
def convolution_backward(c: OpCall) -> tuple[Cost, ...]:
    dy, x, w = c.args[0], c.args[1], c.args[2]
    transposed, groups = bool(c.arg(7, "transposed", False)), int(c.arg(9, "groups", 1))
    mask = tuple(bool(v) for v in c.arg(10, "output_mask", (True, True, True)))
    dims = len(w.shape) - 2
    batch = x.shape[0] if len(x.shape) == len(w.shape) else 1
    kernel, (w0, w1) = math.prod(w.shape[2:]), w.shape[:2]
    x_plane, dy_plane = math.prod(x.shape[-dims:]), math.prod(dy.shape[-dims:])
    lo = x_plane if transposed else dy_plane
    flops = 2.0 * batch * lo * w0 * w1 * kernel
    facts = dict(window=kernel, spatial_dims=dims, stride=max(int_tuple(c.arg(4, "stride", 1))),
                 dilation=max(int_tuple(c.arg(6, "dilation", 1))))
    parts = []
    if mask[0]:
        n, k = (w0 // groups, w1 * kernel) if transposed else (w1, w0 // groups * kernel)
        parts.append(Cost(OpKind.CONV, flops, bytes_read=dy.nbytes + w.nbytes, bytes_written=_bytes_of(x),
                          param_bytes=w.nbytes if w.is_param else 0.0, family=CONV_DGRAD_FAMILY,
                          gemm=GemmShape(batch * x_plane, n, k, groups, plane=x_plane, **facts)))
    if mask[1]:
        parts.append(Cost(OpKind.CONV, flops, bytes_read=dy.nbytes + x.nbytes, bytes_written=_bytes_of(w),
                          param_bytes=0.0, family=CONV_WGRAD_FAMILY,
                          gemm=GemmShape(w0 // groups, w1 * kernel, batch * lo, groups, plane=lo, **facts)))
    if mask[2]:
        out_channels = dy.shape[1] if len(dy.shape) > 1 else 1
        parts.append(Cost(OpKind.REDUCTION, O.REDUCTION * dy.numel, bytes_read=dy.nbytes,
                          bytes_written=out_channels * dy.itemsize, param_bytes=0.0, family=CONV_BGRAD_FAMILY))
    return tuple(parts)


# --------------------------------------------------------------------------------------------------------
# Fused attention's backward. FlashAttention-2 (Dao 2023, arXiv:2307.08691, section 3.1.2 and Algorithm 2):
# the backward recomputes S = Q K^T and runs dV = P^T dO, dP = dO V^T, dQ = dS K and dK = dS^T Q: five matrix
# products over the query-key pairs where the forward runs two (QK^T and PV), so 2.5x the forward's operations
# (the paper's "the backward pass ... 2.5x the FLOPs of the forward"). torch.utils.flop_counter counts four
# (no recompute): this count is what the kernel does. Causal masks skip the masked pairs in both passes.
# Bytes: Q, K, V, the output, its gradient and the log-sum-exp read; dQ, dK, dV written; dQ also goes through an
# fp32 accumulator (written by the main kernel, read by the convert kernel).
def _attention_backward(c: OpCall, q: TensorInfo, k: TensorInfo, v: TensorInfo, dout: TensorInfo,
                        out: TensorInfo, lse: TensorInfo | None, causal: bool, kernels: int) -> Cost:
    *lead, lq, e = q.shape
    lk, ev = k.shape[-2], v.shape[-1]
    bh = math.prod(lead)
    pairs = O.causal_pairs(lq, lk) if causal else lq * lk
    flops = 2.0 * bh * pairs * (3 * e + 2 * ev)          # S and dQ, dK (head dim e); dV and dP (ev)
    accumulator = q.numel * 4.0
    read = q.nbytes + k.nbytes + v.nbytes + out.nbytes + dout.nbytes + (lse.nbytes if lse else 0.0)
    written = _bytes_of(q) + _bytes_of(k) + _bytes_of(v)
    return Cost(OpKind.ATTENTION, flops, bytes_read=read + accumulator, bytes_written=written + accumulator,
                kernels=kernels, gemm=GemmShape(lq, lk, e, bh))


@register("aten._scaled_dot_product_flash_attention_backward")
def sdpa_flash_backward(c: OpCall) -> Cost:
    """(grad_out, query, key, value, out, logsumexp, cum_seq_q, cum_seq_k, max_q, max_k, dropout_p, is_causal,
    philox_seed, philox_offset, scale). 3 kernels: FlashAttention-2's backward as PyTorch builds it
    (aten/src/ATen/native/transformers/cuda/flash_attn/flash_api.cpp, ``mha_bwd``, and flash_bwd_launch_template.h):
    the dot(dO, O) pre-pass (which also clears the dQ accumulator), the dQ/dK/dV kernel, the dQ conversion."""
    dout, q, k, v, out, lse = c.args[:6]
    return _attention_backward(c, q, k, v, dout, out, lse, bool(c.arg(11, "is_causal", False)), kernels=3)


@register("aten._scaled_dot_product_cudnn_attention_backward")
def sdpa_cudnn_backward(c: OpCall) -> Cost:
    """(grad_out, query, key, value, out, logsumexp, philox_seed, philox_offset, attn_bias, cum_seq_q,
    cum_seq_k, max_q, max_k, dropout_p, is_causal, scale). 4 kernels, profiled on the H200 in every call of
    five models (h200_train_profiles.json, ScaledDotProductCudnnAttentionBackward0): a memset, cuDNN's
    ``compute_dot_do_o``, the flash ``bprop`` kernel and ``convert_dq_to_16bits``."""
    dout, q, k, v, out, lse = c.args[:6]
    return _attention_backward(c, q, k, v, dout, out, lse, bool(c.arg(14, "is_causal", False)), kernels=4)


@register("aten._scaled_dot_product_efficient_attention_backward")
def sdpa_efficient_backward(c: OpCall) -> Cost:
    """(grad_out, query, key, value, attn_bias, out, logsumexp, philox_seed, philox_offset, dropout_p,
    grad_input_mask, is_causal, scale): one CUTLASS kernel that computes its own dot(dO, O)
    (``kKernelComputesDelta``, aten/src/ATen/native/transformers/cuda/mem_eff_attention/kernel_backward.h);
    not profiled."""
    dout, q, k, v, _bias, out, lse = c.args[:7]
    return _attention_backward(c, q, k, v, dout, out, lse, bool(c.arg(11, "is_causal", False)), kernels=1)


# --------------------------------------------------------------------------------------------------------
# Normalisations' backward: per input element (``opcosts``), with the kernels PyTorch's CUDA code launches.
def _masked(c: OpCall, index: int, size: int = 3) -> tuple[bool, ...]:
    mask = c.arg(index, "output_mask", (True,) * size)
    return tuple(bool(v) for v in mask)


def _row_shape(x: TensorInfo, normalized_shape) -> GemmShape:
    n = math.prod(int(v) for v in normalized_shape) if normalized_shape else 1
    return GemmShape(max(x.numel // max(n, 1), 1), max(n, 1), 1)


@register("aten.native_layer_norm_backward")
def layer_norm_backward(c: OpCall) -> Cost:
    """(grad_out, input, normalized_shape, mean, rstd, weight, bias, output_mask). Two kernels (H200, DeiT-S:
    every call ran ``layer_norm_grad_input_kernel`` and ``GammaBetaBackwardCUDAKernelTemplate``;
    aten/src/ATen/native/cuda/layer_norm_kernel.cu): each reads the output gradient and the input, so both are
    read twice when both gradients are wanted. Shape: the rows, as the forward's."""
    dy, x, shape, mean, rstd, weight = c.args[:6]
    dx, dw, db = _masked(c, 7)
    has_weight = isinstance(weight, TensorInfo)
    stats = mean.nbytes + rstd.nbytes
    ops = read = written = 0.0
    kernels = 0
    if dx:
        ops += (O.LAYER_NORM_BACKWARD - (0 if has_weight else 1)) * x.numel
        read += dy.nbytes + x.nbytes + stats + (weight.nbytes if has_weight else 0.0)
        written += _bytes_of(x)
        kernels += 1
    if dw or db:
        ops += O.LAYER_NORM_BACKWARD_AFFINE * x.numel
        read += dy.nbytes + x.nbytes + stats
        written += (dw + db) * (weight.nbytes if has_weight else 0.0)
        kernels += 1
    return Cost(OpKind.NORM, ops, bytes_read=read, bytes_written=written, kernels=kernels,
                param_bytes=weight.nbytes if has_weight and weight.is_param and dx else 0.0, gemm=_row_shape(x, shape))


@register("aten._fused_rms_norm_backward")
def rms_norm_backward(c: OpCall) -> Cost:
    """(grad_out, input, normalized_shape, rstd, weight, output_mask) -> (grad_input, grad_weight): as layer
    norm's two kernels (the input gradient by rows, the weight gradient by columns)."""
    dy, x, shape, rstd, weight = c.args[:5]
    dx, dw = _masked(c, 5, 2)
    has_weight = isinstance(weight, TensorInfo)
    ops = (O.RMS_NORM_BACKWARD * x.numel if dx else 0.0) + (O.RMS_NORM_BACKWARD_AFFINE * x.numel if dw else 0.0)
    read = (dx + dw) * (dy.nbytes + x.nbytes + rstd.nbytes) + (weight.nbytes if dx and has_weight else 0.0)
    written = (_bytes_of(x) if dx else 0.0) + (weight.nbytes if dw and has_weight else 0.0)
    return Cost(OpKind.NORM, ops, bytes_read=read, bytes_written=written, kernels=int(dx) + int(dw),
                param_bytes=weight.nbytes if has_weight and weight.is_param and dx else 0.0, gemm=_row_shape(x, shape))


@register("aten.native_group_norm_backward")
def group_norm_backward(c: OpCall) -> Cost:
    """(grad_out, input, mean, rstd, weight, N, C, HxW, group, output_mask). PyTorch's CUDA kernels
    (aten/src/ATen/native/cuda/group_norm_kernel.cu, ``GroupNormBackwardKernelImplInternal``, NCHW):
    ComputeInternalGradients (sum(dy * x), sum(dy) per sample and channel: 3 operations per element), then for
    the input gradient the weight x rstd product (with a weight), ComputeBackwardFusedParams and the
    elementwise c1 * dy + c2 * x + c3 (4 per element), and for the weight and bias gradients one column
    reduction of the per-channel sums: up to 5 kernels. The output gradient and the input are read by the
    first kernel and again by the elementwise one. Shape: rows of samples x groups, as the forward's."""
    dy, x, _mean, _rstd, weight = c.args[:5]
    groups = int(c.arg(8, "group", 1))
    dx, dw, db = _masked(c, 9)
    has_weight = isinstance(weight, TensorInfo)
    small = sum(t.nbytes for t in c.inputs if t.numel < x.numel)
    ops = O.GROUP_NORM_BACKWARD_SUMS * x.numel + (O.GROUP_NORM_BACKWARD_APPLY * x.numel if dx else 0.0)
    read = dy.nbytes + x.nbytes + small + (dy.nbytes + x.nbytes if dx else 0.0)
    written = (_bytes_of(x) if dx else 0.0) + (dw + db) * (weight.nbytes if has_weight else 0.0)
    kernels = 1 + ((2 + int(has_weight)) if dx else 0) + int(dw or db)
    rows = max((x.shape[0] if x.shape else 1) * groups, 1)
    return Cost(OpKind.NORM, ops, bytes_read=read, bytes_written=written, kernels=kernels,
                param_bytes=weight.nbytes if has_weight and weight.is_param else 0.0,
                gemm=GemmShape(rows, max(x.numel // rows, 1), 1))


def _batch_norm_backward(c: OpCall, dy: TensorInfo, x: TensorInfo, weight, train: bool,
                         mask: tuple[bool, ...]) -> Cost:
    dx, dw, db = mask
    has_weight = isinstance(weight, TensorInfo)
    stats = sum(t.nbytes for t in c.inputs if t is not dy and t is not x)
    ops = (O.BATCH_NORM_BACKWARD if train else O.BATCH_NORM_BACKWARD_EVAL) * x.numel if dx else 0.0
    if (dw or db) and not (train and dx):   # the per-channel sums alone (training's input gradient has them)
        ops += O.BATCH_NORM_BACKWARD_AFFINE * x.numel
    read = dy.nbytes + stats + (x.nbytes if train or dw else 0.0)   # frozen: dx = dy * weight * rstd
    if train and dx:
        # the per-channel sums of dy and dy * x-hat first, then dx from them: dy and x are read twice (H200
        # profile, ResNet-50 b32 amp: the backward's 53 batch norms took 2703 us, 2x one pass at the roofline's
        # bandwidth; benchmarks/studies/training-step/h200_train_profiles.json)
        read += dy.nbytes + x.nbytes
    written = (_bytes_of(x) if dx else 0.0) + (dw + db) * (weight.nbytes if has_weight else 0.0)
    return Cost(OpKind.NORM, ops, bytes_read=read, bytes_written=written,
                param_bytes=weight.nbytes if has_weight and weight.is_param else 0.0,
                gemm=channel_rows(x) if train and dx else None)


@register("aten.native_batch_norm_backward", "aten.batch_norm_backward")
def batch_norm_backward(c: OpCall) -> Cost:
    """native_batch_norm_backward(grad_out, input, weight, running_mean, running_var, save_mean, save_invstd,
    train, eps, output_mask); batch_norm_backward(grad_out, input, weight, running_mean, running_var,
    save_mean, save_var, update, eps, output_mask, reserve). One kernel: cuDNN's (every
    CudnnBatchNormBackward0 call of the H200 profiles ran one ``bn_bw_1C11`` kernel) and PyTorch's own fused
    reduce-and-apply kernel (aten/src/ATen/native/cuda/Normalization.cu, ``batch_norm_backward_cuda``: one
    ``batch_norm_backward_kernel`` for NCHW inputs). On meta tensors the forward runs native batch norm, so this
    is the operator the counter sees for either."""
    dy, x, weight = c.args[:3]
    return _batch_norm_backward(c, dy, x, weight, bool(c.arg(7, "train", True)), _masked(c, 9))


@register("aten.cudnn_batch_norm_backward", "aten.miopen_batch_norm_backward")
def cudnn_batch_norm_backward(c: OpCall) -> Cost:
    """(input, grad_output, weight, running_mean, running_var, save_mean, save_var, epsilon, ...): training
    statistics, all three gradients, one kernel."""
    x, dy, weight = c.args[:3]
    return _batch_norm_backward(c, dy, x, weight, True, (True, True, True))
