"""Cost formulas of the memory-bound backward operators: activation and softmax gradients, losses, pooling,
upsampling and padding gradients, the embedding's weight gradient, and the gradients of slices.

Operations per element come from ``tops_advisor.opcosts``; bytes are the minimal traffic, except where PyTorch's
CUDA kernel provably touches more: a gradient that is zero-filled and then scattered into (max pooling,
bilinear upsampling, nll_loss, the embedding) is written twice, and that fill is a kernel of its own (the H200
profiles, benchmarks/studies/training-step/h200_train_profiles.json, show it as an ``aten::fill_`` under the
backward node: one per call).
"""

from __future__ import annotations

import math

from ... import opcosts as O
from ...kinds import OpKind
from .registry import Cost, Handle, OpCall, TensorInfo, expand, register


def gradient(ops_per_element: float, kind: OpKind = OpKind.ELEMENTWISE) -> Handle:
    """An activation's gradient: ``ops_per_element`` per element of the gradient written; the output gradient
    and the saved input (or output) read once."""

    def handle(c: OpCall) -> Cost:
        return Cost(kind, ops_per_element * c.out.numel)

    return handle


register("aten.threshold_backward")(gradient(O.RELU_BACKWARD))
register("aten.silu_backward")(gradient(O.SILU_BACKWARD))
register("aten.sigmoid_backward")(gradient(O.SIGMOID_BACKWARD))
register("aten.tanh_backward")(gradient(O.TANH_BACKWARD))
register("aten.hardswish_backward")(gradient(O.HARDSWISH_BACKWARD))
register("aten.hardsigmoid_backward")(gradient(O.HARDSIGMOID_BACKWARD))
register("aten.hardtanh_backward")(gradient(O.HARDTANH_BACKWARD))
register("aten.leaky_relu_backward")(gradient(O.LEAKY_RELU_BACKWARD))
register("aten.elu_backward")(gradient(O.ELU_BACKWARD))
register("aten.softplus_backward")(gradient(O.SOFTPLUS_BACKWARD))
register("aten.mish_backward")(gradient(O.MISH_BACKWARD))
register("aten.native_dropout_backward")(gradient(O.DROPOUT_BACKWARD))
register("aten.mse_loss_backward")(gradient(O.MSE_LOSS_BACKWARD))
register("aten._prelu_kernel_backward")(gradient(O.LEAKY_RELU_BACKWARD + O.MUL))  # and the weight's product
register("aten._softmax_backward_data",
         "aten._log_softmax_backward_data")(gradient(O.SOFTMAX_BACKWARD, OpKind.SOFTMAX))


@register("aten.gelu_backward")
def gelu_backward(c: OpCall) -> Cost:
    # gelu_backward(grad_output, self, approximate="none")
    tanh = c.arg(2, "approximate", "none") == "tanh"
    return Cost(OpKind.ELEMENTWISE, (O.GELU_TANH_BACKWARD if tanh else O.GELU_BACKWARD) * c.out.numel)


@register("aten.glu_backward")
def glu_backward(c: OpCall) -> Cost:
    # glu_backward(grad_output, self, dim): both halves' gradients from one output-gradient element
    return Cost(OpKind.ELEMENTWISE, O.GLU_BACKWARD * c.args[0].numel)


# --------------------------------------------------------------------------------------------------------
# Losses. mse_loss: the squared difference and its mean (aten/src/ATen/native/Loss.cpp: a TensorIterator
# kernel, then ``apply_loss_reduction``: 2 kernels when reduced).
@register("aten.mse_loss")
def mse_loss(c: OpCall) -> Cost:
    # mse_loss(self, target, reduction=mean): subtract, square, accumulate
    reduced = int(c.arg(2, "reduction", 1)) != 0
    return Cost(OpKind.REDUCTION if reduced else OpKind.ELEMENTWISE, 3.0 * c.args[0].numel,
                kernels=2 if reduced else 1)


@register("aten.smooth_l1_loss", "aten.huber_loss")
def smooth_l1_loss(c: OpCall) -> Cost:
    # (self, target, reduction=mean, beta / delta): elementwise, then the mean (2 kernels reduced, as mse_loss)
    reduced = int(c.arg(2, "reduction", 1)) != 0
    return Cost(OpKind.REDUCTION if reduced else OpKind.ELEMENTWISE, O.SMOOTH_L1 * c.args[0].numel,
                kernels=2 if reduced else 1)


register("aten.smooth_l1_loss_backward", "aten.huber_loss_backward")(gradient(O.SMOOTH_L1_BACKWARD))
register("aten.log_sigmoid_backward")(gradient(O.LOG_SIGMOID_BACKWARD))


@register("aten.log_sigmoid_forward")
def log_sigmoid_forward(c: OpCall) -> Cost:
    # (self) -> (output, buffer): the buffer is empty on CUDA (only the CPU kernel fills it)
    return Cost(OpKind.ELEMENTWISE, O.LOG_SIGMOID * c.out.numel, bytes_written=c.out.nbytes)


@register("aten.grid_sampler_2d_backward")
def grid_sampler_backward(c: OpCall) -> Cost:
    """(grad_output, input, grid, interpolation_mode, padding_mode, align_corners, output_mask): the input's
    gradient zeroed, then each output-gradient element scattered to its 4 bilinear taps (a multiply and an
    atomic add each) and the grid's gradient from the same taps (2 per tap): 2 kernels
    (aten/src/ATen/native/cuda/GridSampler.cu, ``grid_sampler_2d_backward_kernel``)."""
    dy, x, grid = c.args[0], c.args[1], c.args[2]
    dx, dgrid = (bool(v) for v in c.arg(6, "output_mask", (True, True)))
    written = (2 * x.numel * x.itemsize if dx else 0.0) + (grid.numel * grid.itemsize if dgrid else 0.0)
    return Cost(OpKind.COPY, 4.0 * 4 * dy.numel, bytes_read=dy.nbytes + x.nbytes + grid.nbytes,
                bytes_written=written, kernels=1 + int(dx))


@register("aten.binary_cross_entropy_with_logits")
def bce_with_logits(c: OpCall) -> Cost:
    """(self, target, weight, pos_weight, reduction): a composite on the GPU (aten/src/ATen/native/Loss.cpp):
    log_sigmoid(x), 1 - target, its product with x, minus the log-sigmoid, the mean: 5 kernels, each reading
    its operands and writing its result in full (with pos_weight 3 more, with weight 1 more)."""
    x, target = c.args[0], c.args[1]
    pos_weight = isinstance(c.arg(3, "pos_weight"), TensorInfo)
    weight = isinstance(c.arg(2, "weight"), TensorInfo)
    reduced = int(c.arg(4, "reduction", 1)) != 0
    full = x.numel * x.itemsize
    reads = 3 + int(reduced) + 4 * pos_weight + weight      # x and target apart: 2 x + target
    writes = 4 + 3 * pos_weight + weight
    return Cost(OpKind.REDUCTION if reduced else OpKind.ELEMENTWISE, O.BCE_WITH_LOGITS * x.numel,
                bytes_read=2 * x.nbytes + target.nbytes + reads * full, bytes_written=writes * full,
                kernels=4 + int(reduced) + 3 * pos_weight + weight)


def _nll_rows(c: OpCall, weight_arg: int) -> tuple[TensorInfo, TensorInfo, float]:
    """(input, target, bytes of what the kernel reads besides the gathered log-probabilities: the target and
    the class weights gathered, one per row)."""
    x, target = c.args[0], c.args[1]
    weight = c.arg(weight_arg, "weight")
    gathered_weight = target.numel * weight.itemsize if isinstance(weight, TensorInfo) else 0.0
    return x, target, target.nbytes + gathered_weight


@register("aten.nll_loss_forward")
def nll_loss_forward(c: OpCall) -> Cost:
    """(self, target, weight, reduction, ignore_index) -> (output, total_weight): one log-probability gathered
    and accumulated per row, one kernel (``nll_loss_forward_reduce_cuda_kernel_2d``, H200 profiles)."""
    x, target, read = _nll_rows(c, 2)
    return Cost(OpKind.REDUCTION, O.REDUCTION * target.numel, bytes_read=read + target.numel * x.itemsize)


@register("aten.nll_loss2d_forward")
def nll_loss2d_forward(c: OpCall) -> Cost:
    """(self, target, weight, reduction, ignore_index): per pixel as nll_loss. Reduced, PyTorch zeroes the output
    and the total weight, runs the kernel and (mean) divides in one more: 4 kernels (aten/src/ATen/native/cuda/
    NLLLoss2d.cu; H200 profile of U-Net: two fills, ``nll_loss2d_forward_kernel``, ``..._size_average_kernel``)."""
    x, target, read = _nll_rows(c, 2)
    reduction = int(c.arg(3, "reduction", 1))
    kernels = {0: 1, 1: 4}.get(reduction, 3)
    return Cost(OpKind.REDUCTION, O.REDUCTION * target.numel, bytes_read=read + target.numel * x.itemsize,
                kernels=kernels)


@register("aten.nll_loss_backward", "aten.nll_loss2d_backward")
def nll_loss_backward(c: OpCall) -> Cost:
    """(grad_output, self, target, weight, reduction, ignore_index, total_weight): the input gradient zeroed
    (a fill of the whole) and one element per row written: 2 kernels (H200 profiles: ``aten::fill_`` and
    ``nll_loss_backward_reduce_cuda_kernel_2d`` / ``nll_loss2d_backward_kernel`` per call)."""
    dy, x, target = c.args[0], c.args[1], c.args[2]
    weight = c.arg(3, "weight")
    gathered_weight = target.numel * weight.itemsize if isinstance(weight, TensorInfo) else 0.0
    total = c.arg(6, "total_weight")
    read = dy.nbytes + target.nbytes + gathered_weight + (total.nbytes if isinstance(total, TensorInfo) else 0.0)
    written = x.numel * x.itemsize + target.numel * x.itemsize
    return Cost(OpKind.COPY, O.ELEMENTWISE * target.numel, bytes_read=read, bytes_written=written, kernels=2)


# --------------------------------------------------------------------------------------------------------
# Pooling's gradients: one operation per output-gradient element per window element, as the forward.
def _filled(c: OpCall, grad_in: TensorInfo, ops: float, reads: float, kernels: int = 2) -> Cost:
    """A gradient zero-filled, then written by a scatter: the fill and the kernel both write it."""
    return Cost(OpKind.POOL, ops, bytes_read=reads, bytes_written=2 * grad_in.numel * grad_in.itemsize,
                kernels=kernels)


def max_pool_backward(spatial_dims: int) -> Handle:
    """max_pool*d_with_indices_backward(grad_output, self, kernel_size, stride, padding, dilation, ceil_mode,
    indices): the gradient zeroed, then each element gathers from the windows that picked it (compares the
    saved indices: one comparison per output element per window element); the forward's input is not read.
    2 kernels (H200 profiles: ``aten::fill_`` and ``max_pool_backward_nchw``)."""

    def handle(c: OpCall) -> Cost:
        dy, x, indices = c.args[0], c.args[1], c.arg(7, "indices")
        window = math.prod(expand(c.arg(2, "kernel_size"), spatial_dims))
        return _filled(c, x, float(dy.numel * window), dy.nbytes + indices.nbytes)

    return handle


register("aten.max_pool2d_with_indices_backward")(max_pool_backward(2))
register("aten.max_pool3d_with_indices_backward")(max_pool_backward(3))


def avg_pool_backward(spatial_dims: int) -> Handle:
    """avg_pool*d_backward(grad_output, self, kernel_size, ...): each input element sums the windows over it,
    one kernel (``avg_pool2d_backward_out_cuda_frame``, H200 profile of DenseNet-121); the input is not read."""

    def handle(c: OpCall) -> Cost:
        dy, x = c.args[0], c.args[1]
        window = math.prod(expand(c.arg(2, "kernel_size"), spatial_dims))
        return Cost(OpKind.POOL, float(dy.numel * window), bytes_read=dy.nbytes,
                    bytes_written=x.numel * x.itemsize)

    return handle


register("aten.avg_pool2d_backward")(avg_pool_backward(2))
register("aten.avg_pool3d_backward")(avg_pool_backward(3))


@register("aten._adaptive_avg_pool2d_backward", "aten._adaptive_avg_pool3d_backward")
def adaptive_avg_pool_backward(c: OpCall) -> Cost:
    """(grad_output, self): ``zeros_like(input)`` then atomic adds, one per input element (aten/src/ATen/native/
    cuda/AdaptiveAveragePooling.cu, ``adaptive_avg_pool2d_backward_cuda``: 2 kernels, NCHW)."""
    dy, x = c.args[0], c.args[1]
    return _filled(c, x, float(x.numel), dy.nbytes)


@register("aten.adaptive_max_pool2d_backward", "aten.adaptive_max_pool3d_backward")
def adaptive_max_pool_backward(c: OpCall) -> Cost:
    """(grad_output, self, indices): the gradient zeroed, then one atomic add per output element."""
    dy, x, indices = c.args[0], c.args[1], c.args[2]
    return _filled(c, x, float(dy.numel), dy.nbytes + indices.nbytes)


# --------------------------------------------------------------------------------------------------------
# Upsampling and padding gradients. Nearest: each input element sums its copies, one kernel
# (UpSampleNearest2d.cu, ``upsample_nearest2d_backward_nchw_kernel``). Linear interpolation scatters each
# output-gradient element to its taps with atomic adds into a zeroed gradient (UpSampleBilinear2d.cu,
# ``upsample_bilinear2d_backward_out_frame``): 2 kernels, 2 operations (a multiply and an add) per tap.
def _grad_input_elements(c: OpCall, sizes_arg: int, name: str, dy: TensorInfo) -> int:
    sizes = c.arg(sizes_arg, name)
    return math.prod(int(s) for s in sizes) if sizes is not None else dy.numel


def upsample_backward(taps: int) -> Handle:
    """upsample_*_backward(grad_output, output_size, input_size, ...)."""

    def handle(c: OpCall) -> Cost:
        dy = c.args[0]
        written = _grad_input_elements(c, 2, "input_size", dy) * dy.itemsize
        if taps == 1:
            return Cost(OpKind.COPY, O.ADD * dy.numel, bytes_read=dy.nbytes, bytes_written=written)
        return Cost(OpKind.COPY, 2.0 * taps * dy.numel, bytes_read=dy.nbytes, bytes_written=2 * written, kernels=2)

    return handle


register("aten.upsample_nearest1d_backward", "aten.upsample_nearest2d_backward", "aten.upsample_nearest3d_backward",
         "aten._upsample_nearest_exact1d_backward", "aten._upsample_nearest_exact2d_backward",
         "aten._upsample_nearest_exact3d_backward")(upsample_backward(1))
register("aten.upsample_linear1d_backward")(upsample_backward(2))
register("aten.upsample_bilinear2d_backward", "aten._upsample_bilinear2d_aa_backward")(upsample_backward(4))
register("aten.upsample_trilinear3d_backward")(upsample_backward(8))
register("aten.upsample_bicubic2d_backward", "aten._upsample_bicubic2d_aa_backward")(upsample_backward(16))


@register("aten.reflection_pad1d_backward", "aten.reflection_pad2d_backward", "aten.reflection_pad3d_backward",
          "aten.replication_pad1d_backward", "aten.replication_pad2d_backward", "aten.replication_pad3d_backward")
def pad_backward(c: OpCall) -> Cost:
    """(grad_output, self, padding): the gradient zeroed, then each output-gradient element added to the
    input element it copied (atomic adds; aten/src/ATen/native/cuda/ReflectionPad.cu): 2 kernels."""
    dy, x = c.args[0], c.args[1]
    return Cost(OpKind.COPY, O.ADD * dy.numel, bytes_read=dy.nbytes, bytes_written=2 * x.numel * x.itemsize,
                kernels=2)


# --------------------------------------------------------------------------------------------------------
# The embedding's weight gradient. aten/src/ATen/native/cuda/Embedding.cu, ``embedding_dense_backward_cuda``:
# up to 3072 indices (and no ``scale_grad_by_freq``) a zeroed table and one ``embedding_backward_feature_kernel``
# (2 kernels: H200 profiles of DistilBERT, BART, TinyLlama); more indices are sorted first (an arange and cub's
# radix sort: a histogram, a scan and one pass per 8 bits of the vocabulary's index), then
# EmbeddingBackwardKernel.cu's segment reduction: unique_by_key (2), partials per segment, an exclusive sum
# (2), the partial-segment count and offsets, compute_grad_weight, sum_and_scatter (9): counted from the
# source, not profiled.
EMBEDDING_FEATURE_PATH_MAX_INDICES = 3072


def embedding_sort_kernels(num_weights: int) -> int:
    """Kernels of the sorted path: the zeroed table, the arange, the radix sort, the segment reduction."""
    bits = max(1, math.ceil(math.log2(max(num_weights, 2))))
    return 1 + 1 + (2 + math.ceil(bits / 8)) + 9


@register("aten.embedding_dense_backward")
def embedding_dense_backward(c: OpCall) -> Cost:
    """(grad_output, indices, num_weights, padding_idx, scale_grad_by_freq): the whole table's gradient
    written (zeroed), the rows used read and written once more, the output gradient and the indices read."""
    dy, indices = c.args[0], c.args[1]
    num_weights, by_freq = int(c.arg(2, "num_weights")), bool(c.arg(4, "scale_grad_by_freq", False))
    dim = dy.shape[-1] if dy.shape else 1
    table = num_weights * dim * dy.itemsize
    small = indices.numel <= EMBEDDING_FEATURE_PATH_MAX_INDICES and not by_freq
    kernels = 2 if small else embedding_sort_kernels(num_weights)
    return Cost(OpKind.EMBEDDING, O.INDEX_ADD * dy.numel, bytes_read=dy.nbytes + indices.nbytes,
                bytes_written=table + dy.nbytes, kernels=kernels)


# --------------------------------------------------------------------------------------------------------
# Gradients of views: a zeroed tensor of the input's size with the output gradient copied into its slice
# (``at::zeros(input_sizes)`` then ``copy_`` into the view: 2 kernels; H200 profile of DeiT-S, SelectBackward0:
# ``aten::fill_`` and ``aten::copy_``).
@register("aten.select_backward", "aten.slice_backward", "aten.diagonal_backward", "aten.as_strided_backward")
def view_backward(c: OpCall) -> Cost:
    # (grad_output, input_sizes, ...)
    dy = c.args[0]
    return Cost(OpKind.COPY, 0.0, bytes_read=dy.nbytes,
                bytes_written=_grad_input_elements(c, 1, "input_sizes", dy) * dy.itemsize + dy.nbytes, kernels=2)


@register("aten.index_select_backward")
def index_select_backward(c: OpCall) -> Cost:
    # (grad, self_sizes, dim, index): zeros, then index_add_ of the gradient rows: 2 kernels
    dy, index = c.args[0], c.args[3]
    return Cost(OpKind.COPY, O.INDEX_ADD * dy.numel, bytes_read=dy.nbytes + index.nbytes,
                bytes_written=_grad_input_elements(c, 1, "self_sizes", dy) * dy.itemsize + dy.nbytes, kernels=2)


@register("aten.unfold_backward")
def unfold_backward(c: OpCall) -> Cost:
    # (grad_in, input_sizes, dim, size, step): zeros, then each window element added back (2 kernels)
    dy = c.args[0]
    return Cost(OpKind.COPY, O.ADD * dy.numel, bytes_read=dy.nbytes,
                bytes_written=2 * _grad_input_elements(c, 1, "input_sizes", dy) * dy.itemsize, kernels=2)
