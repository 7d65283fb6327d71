"""Cost formulas of the vector operators: elementwise, normalisations, softmax, reductions, pooling, copies,
upsampling and gathers, most of them from small factories for whole families (fvcore's style).

Operations per element come from ``tops_advisor.opcosts`` (the table the LLM builder reads too); bytes are the
minimal traffic unless an operator provably touches less (embedding rows, gathers) or more.
"""

from __future__ import annotations

import math
from dataclasses import replace

from ... import opcosts as O
from ...kinds import OpKind
from ...workload import GemmShape
from .registry import Cost, Handle, OpCall, TensorInfo, expand, register, with_inplace


# Families from factories.
def elementwise(ops_per_element: float = 1.0, kind: OpKind = OpKind.ELEMENTWISE) -> Handle:
    """``ops_per_element`` operations per output element; default bytes (inputs read, output written)."""

    def handle(c: OpCall) -> Cost:
        return Cost(kind, ops_per_element * (c.out.numel if c.outputs else 0))

    return handle


def norm(ops_per_element: float, affine_ops: float, affine_arg: int | None, kernels: int = 1) -> Handle:
    """Normalisations: ``ops_per_element`` per input element (``affine_ops`` fewer without the affine weight).

    Only the normalised output is counted as written; saved statistics are small and not used in inference.
    """

    def handle(c: OpCall) -> Cost:
        x = c.args[0]
        has_affine = affine_arg is None or c.arg(affine_arg, "weight") is not None
        ops = ops_per_element if has_affine else ops_per_element - affine_ops
        return Cost(OpKind.NORM, ops * x.numel, bytes_written=c.out.nbytes, kernels=kernels)

    return handle


def reduction(ops_per_element: float = 1.0, kind: OpKind = OpKind.REDUCTION) -> Handle:
    """Operations per *input* element (sum, mean, max: one each)."""

    def handle(c: OpCall) -> Cost:
        return Cost(kind, ops_per_element * c.args[0].numel)

    return handle


def pooling(spatial_dims: int, kernel_arg: int = 1, outputs_written: int = 1) -> Handle:
    """Window pooling: one operation per output element per window element."""

    def handle(c: OpCall) -> Cost:
        window = math.prod(expand(c.arg(kernel_arg, "kernel_size"), spatial_dims))
        return Cost(OpKind.POOL, float(c.out.numel * window),
                    bytes_written=sum(t.nbytes for t in c.outputs[:outputs_written]))

    return handle


def adaptive_pooling() -> Handle:
    """Adaptive pooling: every input element is visited once (one operation each)."""

    def handle(c: OpCall) -> Cost:
        return Cost(OpKind.POOL, float(c.args[0].numel), bytes_written=c.out.nbytes)

    return handle


def copy(ops_per_element: float = 0.0) -> Handle:
    """Operators that materialise memory (cat, clone, pad, upsampling): read inputs, write outputs."""

    def handle(c: OpCall) -> Cost:
        return Cost(OpKind.COPY, ops_per_element * (c.out.numel if c.outputs else 0))

    return handle


_UNARY = ("relu", "silu", "sigmoid", "tanh", "exp", "exp2", "log", "log2", "log1p", "expm1", "sqrt",
          "rsqrt", "abs", "neg", "reciprocal", "sign", "sin", "cos", "erf", "erfc", "floor", "ceil", "round",
          "trunc", "hardtanh", "hardswish", "hardsigmoid", "leaky_relu", "elu", "selu", "celu", "mish",
          "softplus", "threshold", "logical_not", "bitwise_not", "square", "clamp_min", "clamp_max",
          "nan_to_num", "frac", "sgn", "relu6", "glu", "logit", "tril", "triu", "fill", "zero", "heaviside")
_BINARY = ("add", "sub", "rsub", "mul", "div", "pow", "maximum", "minimum", "fmax", "fmin", "remainder",
           "fmod", "atan2", "eq", "ne", "gt", "lt", "ge", "le", "logical_and", "logical_or", "logical_xor",
           "bitwise_and", "bitwise_or", "bitwise_xor", "masked_fill", "where",
           "floor_divide", "copysign", "hypot", "xlogy", "true_divide", "bitwise_left_shift",
           "bitwise_right_shift", "hardshrink", "softshrink", "prelu", "_prelu_kernel", "isnan", "isinf",
           "logaddexp")
for _name in _UNARY + _BINARY:
    register(*with_inplace(_name))(elementwise(O.activation(_name)))  # O.ELEMENTWISE unless listed
# Three-operand updates (the optimizers' lines): a + w * (b - a), a + v * b * c, a + v * b / c: 3 each
register(*with_inplace("lerp"))(elementwise(O.LERP))
register(*with_inplace("addcmul"))(elementwise(O.ADDCMUL))
register(*with_inplace("addcdiv"))(elementwise(O.ADDCDIV))


@register(*with_inplace("gelu"))
def gelu(c: OpCall) -> Cost:
    # gelu(input, approximate="none"): the erf form, or the tanh approximation
    tanh = c.arg(1, "approximate", "none") == "tanh"
    return Cost(OpKind.ELEMENTWISE, (O.GELU_TANH if tanh else O.GELU) * c.out.numel)


@register(*with_inplace("clamp"), *with_inplace("clip"))
def clamp(c: OpCall) -> Cost:
    # clamp(input, min=None, max=None): one comparison per bound given
    bounds = sum(c.arg(i, n) is not None for i, n in ((1, "min"), (2, "max")))
    return Cost(OpKind.ELEMENTWISE, O.ELEMENTWISE * max(bounds, 1) * c.out.numel)

# polar(abs, angle) = abs * (cos(angle) + i sin(angle)): cos, sin and two multiplies per element (DeepSeek-V2's
# rotary embedding builds its complex frequencies this way).
register("aten.polar")(elementwise(4.0))

# Casts and factories: no arithmetic, but memory is read and/or written.
register("aten._to_copy", "aten.to", "aten._to_dtype", "aten.type_as")(elementwise(O.CAST))
register("aten.zeros", "aten.ones", "aten.full", "aten.zeros_like", "aten.ones_like", "aten.full_like",
         "aten.scalar_tensor", "aten.arange", "aten.linspace", "aten.new_zeros", "aten.new_ones",
         "aten.new_full", "aten.rand", "aten.randn", "aten.randint", "aten.rand_like", "aten.randn_like",
         "aten.randint_like", "aten.randperm", "aten.normal", "aten.uniform_", "aten.normal_", "aten.bernoulli",
         "aten.bernoulli_", "aten.tensor", "aten.eye")(elementwise(0.0))
register("aten.native_dropout")(elementwise(O.DROPOUT))

# Normalisations (tops_advisor.opcosts): batch norm in eval is one folded scale-and-shift (2 per element),
# in training statistics as layer norm (8); layer and group norm: mean, variance, normalise, scale, shift (8);
# RMS norm: square, accumulate, normalise, scale (4).
register("aten._native_batch_norm_legit_no_training")(norm(O.BATCH_NORM_EVAL, O.BATCH_NORM_EVAL_AFFINE, 1))
@register("aten.layer_norm", "aten.native_layer_norm")
def layer_norm(c: OpCall) -> Cost:
    """A layer norm, with its rows as a GEMM-like shape (m rows of n normalised elements): PyTorch's CUDA kernel
    runs one thread block per row, so short rows leave it latency-bound (``rates.layer_norm_row_s``)."""
    cost = norm(O.LAYER_NORM, O.LAYER_NORM_AFFINE, 2)(c)
    shape = c.arg(1, "normalized_shape")
    n = math.prod(int(v) for v in shape) if shape else 1
    rows = c.args[0].numel // max(n, 1)
    return replace(cost, gemm=GemmShape(max(rows, 1), max(n, 1), 1))


@register("aten.native_group_norm", "aten.group_norm")
def group_norm(c: OpCall) -> Cost:
    """A group norm, with its groups as a GEMM-like shape (m = batch x groups rows of n = channels per group x
    plane elements): PyTorch's CUDA kernels reduce each row in one thread block, then apply the statistics
    elementwise (3 kernels: RowwiseMoments, ComputeFusedParams and the apply; H200 profiles, 481 calls)."""
    cost = norm(O.GROUP_NORM, O.GROUP_NORM_AFFINE, 1, kernels=3)(c)
    x = c.args[0]
    if c.name == "aten.native_group_norm":   # (input, weight, bias, N, C, HxW, group, eps)
        groups = int(c.arg(6, "group", 1))
    else:                                     # (input, num_groups, weight, bias, eps, cudnn_enabled)
        groups = int(c.arg(1, "num_groups", 1))
    batch = x.shape[0] if len(x.shape) else 1
    rows = max(batch * groups, 1)
    return replace(cost, gemm=GemmShape(rows, max(x.numel // rows, 1), 1))
register("aten.rms_norm", "aten._fused_rms_norm")(norm(O.RMS_NORM, O.RMS_NORM_AFFINE, 2))


def channel_rows(x: TensorInfo) -> GemmShape:
    """A training batch norm's per-channel reductions as a GEMM-like shape: m = channels (one thread block
    each in the NCHW kernels of PyTorch and cuDNN: ``rates.batch_norm_rows_s``), n = the batch x plane elements
    each block streams."""
    channels = x.shape[1] if len(x.shape) > 1 else 1
    return GemmShape(max(channels, 1), max(x.numel // max(channels, 1), 1), 1)


@register("aten.native_batch_norm", "aten._native_batch_norm_legit", "aten.cudnn_batch_norm",
          "aten.batch_norm", "aten.miopen_batch_norm")
def batch_norm(c: OpCall) -> Cost:
    # (input, weight, bias, running_mean, running_var, training, momentum, eps)
    training = bool(c.arg(5, "training", False))
    cost = (norm(O.BATCH_NORM_TRAINING, O.LAYER_NORM_AFFINE, 1) if training
            else norm(O.BATCH_NORM_EVAL, O.BATCH_NORM_EVAL_AFFINE, 1))(c)
    if training:
        # Training statistics come first: the kernel reads each channel's input once for its mean and variance
        # and again to normalize it (a channel's N*H*W values do not stay on chip), so the input is read twice.
        # H200 profile, ResNet-50 b32 amp (benchmarks/studies/training-step/h200_train_profiles.json): the
        # forward's 53 batch norms took 1589 us, 2.6x one read and one write at the roofline's bandwidth.
        cost = replace(cost, bytes_read=sum(t.nbytes for t in c.inputs) + c.args[0].nbytes,
                       gemm=channel_rows(c.args[0]))
    weight = c.arg(1, "weight")
    if c.args[0].itemsize == 2 and not (weight is not None and weight.itemsize == 4):
        # Half-precision batch norm with half (or no) weights is not cuDNN's: PyTorch runs native_batch_norm
        # and then copies its result (profiled on the H200: one aten::copy_ per batch norm in fp16
        # ResNet-50/MobileNetV2). With fp32 weights (autocast) PyTorch takes cuDNN's kernel, as in fp32:
        # _batch_norm_impl_index (aten/src/ATen/native/Normalization.cpp) uses cuDNN when the input is not
        # half or the weight is float. H200, timm resnet50 batch 32 (h200_compiled.json, eager kernels): 297
        # under autocast against 347 in fp16, though autocast adds ~54 casts: two kernels fewer per batch norm.
        out = c.out.nbytes
        default_read = sum(t.nbytes for t in c.inputs)
        return replace(cost, kernels=2, bytes_read=default_read + out, bytes_written=2 * out)
    return cost


# Softmax: max, subtract, exp, sum, divide: 5 operations per element (O.SOFTMAX), one kernel.
# _safe_softmax (the masked math path's softmax) is softmax plus isneginf, all and where on CUDA: 4 kernels;
# the scores are read 3 times and written twice (the boolean intermediates are small).
@register("aten._safe_softmax")
def safe_softmax(c: OpCall) -> Cost:
    n = c.out.numel
    return Cost(OpKind.SOFTMAX, O.SAFE_SOFTMAX * n, bytes_read=3 * c.args[0].nbytes, bytes_written=2 * c.out.nbytes, kernels=4)


register("aten._softmax", "aten._log_softmax", "aten.softmax",
         "aten.log_softmax")(elementwise(O.SOFTMAX, kind=OpKind.SOFTMAX))

register("aten.sum", "aten.mean", "aten.amax", "aten.amin", "aten.max", "aten.min", "aten.argmax",
         "aten.argmin", "aten.prod", "aten.any", "aten.all", "aten.norm", "aten.linalg_vector_norm",
         "aten.cumsum", "aten.cumprod", "aten.logsumexp", "aten.topk", "aten.sort", "aten.aminmax",
         "aten.nansum", "aten.count_nonzero")(reduction(O.REDUCTION))
register("aten.var", "aten.std", "aten.var_mean", "aten.std_mean")(reduction(O.VARIANCE))

# Pooling. max_pool*_with_indices also returns indices: in inference only the values are written.
register("aten.max_pool1d", "aten.avg_pool1d")(pooling(1))
register("aten.max_pool2d", "aten.avg_pool2d", "aten.mkldnn_max_pool2d")(pooling(2))
register("aten.max_pool3d", "aten.avg_pool3d")(pooling(3))
register("aten.max_pool1d_with_indices")(pooling(1))
register("aten.max_pool2d_with_indices")(pooling(2))
register("aten.max_pool3d_with_indices")(pooling(3))
register("aten._adaptive_avg_pool2d", "aten._adaptive_avg_pool3d", "aten.adaptive_avg_pool1d",
         "aten.adaptive_avg_pool2d", "aten.adaptive_avg_pool3d", "aten.adaptive_max_pool1d",
         "aten.adaptive_max_pool2d", "aten.adaptive_max_pool3d")(adaptive_pooling())

# Copies and layout changes that materialise memory.
register("aten.cat", "aten.stack", "aten.clone", "aten.contiguous", "aten.constant_pad_nd", "aten.pad",
         "aten.reflection_pad1d", "aten.reflection_pad2d", "aten.reflection_pad3d", "aten.replication_pad1d",
         "aten.replication_pad2d", "aten.replication_pad3d", "aten.repeat", "aten.roll", "aten.flip",
         "aten.repeat_interleave", "aten.pixel_shuffle", "aten.pixel_unshuffle", "aten.channel_shuffle",
         "aten.narrow_copy", "aten.split_with_sizes_copy", "aten.unbind_copy", "aten.view_copy",
         "aten.permute_copy", "aten.transpose_copy", "aten.expand_copy", "aten.slice_copy",
         "aten.im2col", "aten.col2im", "aten.slice_scatter", "aten.select_scatter")(copy())
# Upsampling: nearest is a copy; linear interpolation blends 2 taps per dimension (a multiply-add each).
register("aten.upsample_nearest1d", "aten.upsample_nearest2d", "aten.upsample_nearest3d",
         "aten._upsample_nearest_exact1d", "aten._upsample_nearest_exact2d",
         "aten._upsample_nearest_exact3d")(copy(0.0))
register("aten.upsample_linear1d")(copy(2.0 * 2))
register("aten._upsample_bilinear2d_aa")(copy(2.0 * 4))


@register("aten.upsample_bilinear2d")
def upsample_bilinear2d(c: OpCall) -> Cost:
    """2 taps per dimension; the shape records the CUDA kernel's parallelism: PyTorch's NCHW kernel
    (UpSampleBilinear2d.cu, upsample_bilinear2d_out_frame) gives each output position (m = H x W) one thread
    that loops over the batch and the channels (n = N x C). The roofline reads it (``rates.floors``)."""
    out = c.out
    if len(out.shape) != 4:
        return Cost(OpKind.COPY, 2.0 * 4 * out.numel)
    n, ch, h, w = out.shape
    return Cost(OpKind.COPY, 2.0 * 4 * out.numel, gemm=GemmShape(m=h * w, n=n * ch, k=1, batch=1))
register("aten.upsample_trilinear3d")(copy(2.0 * 8))
# grid_sample: bilinear, 4 taps per output element (a multiply-add each); nearest, a copy
register("aten.grid_sampler_2d")(copy(2.0 * 4))
register("aten.upsample_bicubic2d", "aten._upsample_bicubic2d_aa")(copy(2.0 * 16))


@register("aten.copy_", "aten.copy")
def copy_(c: OpCall) -> Cost:
    # copy_(dst, src): the source is read, the destination written; its old contents are not read.
    dst, src = c.args[0], c.args[1]
    return Cost(OpKind.COPY, 0.0, bytes_read=src.nbytes, bytes_written=dst.nbytes,
                param_bytes=src.nbytes if src.is_param else 0.0)


@register("aten.embedding")
def embedding(c: OpCall) -> Cost:
    # embedding(weight, indices): only the rows gathered are read, not the whole table.
    weight, indices = c.args[0], c.args[1]
    rows = c.out.nbytes
    return Cost(OpKind.EMBEDDING, 0.0, bytes_read=indices.nbytes + rows, bytes_written=rows,
                param_bytes=rows if weight.is_param else 0.0)


def _gather(source_arg: int) -> Handle:
    """index_select / gather / index: read the indices and the elements gathered (as many as written)."""

    def handle(c: OpCall) -> Cost:
        src = c.args[source_arg]
        index_bytes = sum(t.nbytes for t in c.inputs if t is not src)
        gathered = c.out.numel * src.itemsize
        return Cost(OpKind.COPY, 0.0, bytes_read=index_bytes + gathered, bytes_written=c.out.nbytes,
                    param_bytes=gathered if src.is_param else 0.0)

    return handle


register("aten.index_select", "aten.gather", "aten.index", "aten._unsafe_index", "aten.take",
         "aten.masked_select")(_gather(0))
register("aten.scatter", "aten.scatter_", "aten.index_put", "aten.index_put_", "aten.index_copy",
         "aten.index_copy_", "aten.masked_scatter", "aten.masked_scatter_")(copy())


@register("aten.scatter_add", "aten.scatter_add_", "aten.index_add", "aten.index_add_")
def scatter_add(c: OpCall) -> Cost:
    # (self, dim, index, source/src): one add per source element
    return Cost(OpKind.COPY, O.INDEX_ADD * c.args[3].numel)


register(*with_inplace("index_fill"))(copy())

