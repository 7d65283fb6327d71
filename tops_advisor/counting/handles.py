"""Per-operator cost formulas: one registry, keyed by ATen operator name, in the style of fvcore's handles.

Every handle is a pure function of shapes: it gets an :class:`OpCall` (the operator's arguments with each
tensor replaced by a :class:`TensorInfo`) and returns a :class:`Cost`. Handles for whole families
(elementwise, norms, reductions, pooling) come from small factories. Views and no-ops are registered
explicitly, by name, as costing nothing (:data:`ZERO_COST`); an operator in neither table is *unsupported*
and the counter reports it (never silently zero).

Conventions (see docs/counting.md):
- ``flops`` are operations: one multiply-add = 2 (fvcore and many papers count a multiply-add as one).
  Vector operators take their operations per element from ``tops_advisor.opcosts``, the table the LLM
  builder reads too.
- Bytes are the minimal traffic: every tensor input read once (an expanded tensor counts its distinct
  elements only) and every output written once, at the element size in use. A handle overrides this
  where an operator provably touches less (embedding rows, gathers) or more.
- ``kernels`` is how many GPU kernels the operator usually launches in eager PyTorch on a CUDA GPU.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from .. import opcosts as O
from ..workload import GemmShape


@dataclass(frozen=True)
class TensorInfo:
    """What a handle may know about a tensor: its shape, bytes per element and whether it is a parameter."""

    shape: tuple[int, ...]
    itemsize: float = 4.0
    is_param: bool = False           # a parameter or buffer of the model (or a view of one)
    unique_numel: int | None = None  # distinct elements, when dimensions are expanded (stride 0)

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> float:
        n = self.numel if self.unique_numel is None else self.unique_numel
        return n * self.itemsize


@dataclass(frozen=True)
class OpCall:
    """One operator call as a handle sees it: tensors replaced by TensorInfo, other arguments as given."""

    name: str
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    inputs: tuple[TensorInfo, ...] = ()   # every tensor argument, flattened, in order
    outputs: tuple[TensorInfo, ...] = ()  # every tensor output, flattened

    def arg(self, index: int, name: str, default=None):
        """Argument by position, else by keyword, else ``default``."""
        if index < len(self.args):
            return self.args[index]
        return self.kwargs.get(name, default)

    @property
    def out(self) -> TensorInfo:
        return self.outputs[0]


@dataclass(frozen=True)
class Cost:
    """A handle's answer. ``None`` bytes mean the default minimal traffic (inputs read, outputs written)."""

    kind: str
    flops: float = 0.0
    bytes_read: float | None = None
    bytes_written: float | None = None
    param_bytes: float | None = None  # None: the bytes of the parameter inputs
    kernels: int = 1
    gemm: GemmShape | None = None


Handle = Callable[[OpCall], Cost]

HANDLES: dict[str, Handle] = {}


def register(*names: str) -> Callable[[Handle], Handle]:
    """Decorator: register a handle under one or more ATen operator names ("aten.mm")."""

    def deco(fn: Handle) -> Handle:
        for name in names:
            HANDLES[name] = fn
        return fn

    return deco


def _with_inplace(*names: str) -> list[str]:
    return [n for name in names for n in (f"aten.{name}", f"aten.{name}_")]


# --------------------------------------------------------------------------------------------------------
# Views and no-ops: zero operations, zero bytes, zero kernels. On purpose and by name.
ZERO_COST: frozenset[str] = frozenset(f"aten.{n}" for n in (
    "view", "_unsafe_view", "reshape", "_reshape_alias", "view_as", "t", "t_", "transpose", "transpose_",
    "permute", "expand", "expand_as", "squeeze", "squeeze_", "unsqueeze", "unsqueeze_", "slice", "select",
    "narrow", "as_strided", "as_strided_", "alias", "detach", "detach_", "split", "split_with_sizes", "unbind",
    "chunk", "tensor_split", "unflatten", "flatten", "diagonal", "movedim", "unfold", "view_as_real",
    "view_as_complex", "real", "imag", "conj", "resolve_conj", "resolve_neg", "lift_fresh", "lift_fresh_copy",
    "empty", "empty_like", "empty_strided", "empty_permuted", "new_empty", "new_empty_strided", "resize_",
    "set_", "sym_size", "sym_stride", "sym_numel", "sym_storage_offset", "is_same_size", "_local_scalar_dense",
    "item", "_assert_async", "_assert_tensor_metadata", "_assert_scalar", "_functional_assert_async",
    "is_nonzero", "_has_compatible_shallow_copy_type", "_unsafe_index_put_",
)) | frozenset({"prim.device", "prim.layout"})


def _tensors(value) -> list[TensorInfo]:
    if isinstance(value, TensorInfo):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    return []


def _expand(value, dims: int) -> tuple[int, ...]:
    if isinstance(value, int):
        return (value,) * dims
    value = tuple(value)
    return value * dims if len(value) == 1 else value


# --------------------------------------------------------------------------------------------------------
# Matrix products: 2 operations per multiply-add; the bias add of addmm is not counted (as in torch and
# fvcore: it is fused into the GEMM epilogue and negligible next to 2*m*n*k).
@register("aten.mm")
def mm(c: OpCall) -> Cost:
    (m, k), n = c.args[0].shape, c.args[1].shape[1]
    return Cost("matmul", 2.0 * m * n * k, gemm=GemmShape(m, n, k))


@register("aten.addmm")
def addmm(c: OpCall) -> Cost:
    (m, k), n = c.args[1].shape, c.args[2].shape[1]
    return Cost("matmul", 2.0 * m * n * k, gemm=GemmShape(m, n, k))


@register("aten.bmm")
def bmm(c: OpCall) -> Cost:
    (b, m, k), n = c.args[0].shape, c.args[1].shape[2]
    return Cost("matmul", 2.0 * b * m * n * k, gemm=GemmShape(m, n, k, b))


@register("aten.baddbmm")
def baddbmm(c: OpCall) -> Cost:
    (b, m, k), n = c.args[1].shape, c.args[2].shape[2]
    return Cost("matmul", 2.0 * b * m * n * k, gemm=GemmShape(m, n, k, b))


@register("aten.matmul")
def matmul(c: OpCall) -> Cost:
    a, b = c.args[0].shape, c.args[1].shape
    a2 = (1,) + a if len(a) == 1 else a
    b2 = b + (1,) if len(b) == 1 else b
    m, k, n = a2[-2], a2[-1], b2[-1]
    batch = math.prod(c.out.shape) // max(1, (m if len(a) > 1 else 1) * (n if len(b) > 1 else 1))
    return Cost("matmul", 2.0 * batch * m * n * k, gemm=GemmShape(m, n, k, batch))


@register("aten.dot", "aten.vdot")
def dot(c: OpCall) -> Cost:
    n = c.args[0].shape[0]
    return Cost("matmul", 2.0 * n, gemm=GemmShape(1, 1, n))


@register("aten.mv")
def mv(c: OpCall) -> Cost:
    m, k = c.args[0].shape
    return Cost("matmul", 2.0 * m * k, gemm=GemmShape(m, 1, k))


@register("aten.addmv")
def addmv(c: OpCall) -> Cost:
    m, k = c.args[1].shape
    return Cost("matmul", 2.0 * m * k, gemm=GemmShape(m, 1, k))


# --------------------------------------------------------------------------------------------------------
# Convolution of every kind: aten.convolution(input, weight, bias, stride, padding, dilation, transposed,
# output_padding, groups). Reported as its implicit GEMM.
@register("aten.convolution", "aten._convolution")
def convolution(c: OpCall) -> Cost:
    x, w = c.args[0], c.args[1]
    transposed, groups = bool(c.arg(6, "transposed", False)), int(c.arg(8, "groups", 1))
    batch = x.shape[0] if len(x.shape) == len(w.shape) else 1
    kernel = math.prod(w.shape[2:])
    if not transposed:
        # out[N, C_out, *S_out]: each output element is C_in/groups * kernel multiply-adds.
        m = batch * math.prod(c.out.shape[-(len(w.shape) - 2):])
        n, k = w.shape[0] // groups, w.shape[1] * kernel
    else:
        # weight[C_in, C_out/groups, *K]: each input element scatters into C_out/groups * kernel outputs.
        m = batch * math.prod(x.shape[-(len(w.shape) - 2):])
        n, k = w.shape[1] * kernel, w.shape[0] // groups
    # The convolution alone: PyTorch on CUDA adds the bias afterwards in a broadcast add over the output,
    # which the lowering inserts as an operator of its own (lowering.lower_pytorch_cuda, rewrite 1).
    return Cost("conv", 2.0 * m * n * k * groups, bytes_read=x.nbytes + w.nbytes,
                param_bytes=sum(t.nbytes for t in (x, w) if t.is_param),
                gemm=GemmShape(m, n, k, groups, window=kernel, spatial_dims=len(w.shape) - 2,
                               stride=max(int_tuple(c.arg(3, "stride", 1))), dilation=max(int_tuple(c.arg(5, "dilation", 1))),
                               plane=m // max(batch, 1)))


def int_tuple(value) -> tuple:
    """A stride or dilation argument as a tuple (an int or a list of ints)."""
    return tuple(int(v) for v in value) if isinstance(value, (list, tuple)) else (int(value),)


# --------------------------------------------------------------------------------------------------------
# Scaled-dot-product attention as ONE fused kernel (flash / memory-efficient): the operations of QK^T and
# PV over the query-key pairs computed (those the causal mask keeps when causal, O.causal_pairs); the bytes of
# Q, K, V, the mask and the output, nothing of the score matrix.
def _attention(c: OpCall, q: TensorInfo, k: TensorInfo, v: TensorInfo, causal: bool) -> Cost:
    *lead, lq, e = q.shape
    lk, ev = k.shape[-2], v.shape[-1]
    bh = math.prod(lead)
    pairs = O.causal_pairs(lq, lk) if causal else lq * lk
    flops = 2.0 * bh * pairs * e + 2.0 * bh * pairs * ev
    mask_bytes = sum(t.nbytes for t in c.inputs if all(t is not x for x in (q, k, v)))
    read = q.nbytes + k.nbytes + v.nbytes + mask_bytes
    return Cost("attention", flops, bytes_read=read, bytes_written=c.out.nbytes,
                gemm=GemmShape(lq, lk, e, bh))


@register("aten.scaled_dot_product_attention")
def sdpa(c: OpCall) -> Cost:
    # (query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False)
    return _attention(c, c.args[0], c.args[1], c.args[2], bool(c.arg(5, "is_causal", False)))


@register("aten._scaled_dot_product_flash_attention")
def sdpa_flash(c: OpCall) -> Cost:  # (query, key, value, dropout_p, is_causal, return_debug_mask, scale)
    return _attention(c, c.args[0], c.args[1], c.args[2], bool(c.arg(4, "is_causal", False)))


@register("aten._scaled_dot_product_flash_attention_for_cpu")
def sdpa_flash_cpu(c: OpCall) -> Cost:  # (query, key, value, dropout_p, is_causal, *, attn_mask, scale)
    return _attention(c, c.args[0], c.args[1], c.args[2], bool(c.arg(4, "is_causal", False)))


@register("aten._scaled_dot_product_efficient_attention")
def sdpa_efficient(c: OpCall) -> Cost:  # (query, key, value, attn_bias, compute_log_sumexp, dropout_p, is_causal)
    return _attention(c, c.args[0], c.args[1], c.args[2], bool(c.arg(6, "is_causal", False)))


@register("aten._scaled_dot_product_cudnn_attention")
def sdpa_cudnn(c: OpCall) -> Cost:  # (query, key, value, attn_bias, compute_log_sumexp, dropout_p, is_causal)
    return _attention(c, c.args[0], c.args[1], c.args[2], bool(c.arg(6, "is_causal", False)))


# --------------------------------------------------------------------------------------------------------
# Families from factories.
def elementwise(ops_per_element: float = 1.0, kind: str = "elementwise") -> Handle:
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
        return Cost("norm", ops * x.numel, bytes_written=c.out.nbytes, kernels=kernels)

    return handle


def reduction(ops_per_element: float = 1.0, kind: str = "reduction") -> Handle:
    """Operations per *input* element (sum, mean, max: one each)."""

    def handle(c: OpCall) -> Cost:
        return Cost(kind, ops_per_element * c.args[0].numel)

    return handle


def pooling(spatial_dims: int, kernel_arg: int = 1, outputs_written: int = 1) -> Handle:
    """Window pooling: one operation per output element per window element."""

    def handle(c: OpCall) -> Cost:
        window = math.prod(_expand(c.arg(kernel_arg, "kernel_size"), spatial_dims))
        return Cost("pool", float(c.out.numel * window),
                    bytes_written=sum(t.nbytes for t in c.outputs[:outputs_written]))

    return handle


def adaptive_pooling() -> Handle:
    """Adaptive pooling: every input element is visited once (one operation each)."""

    def handle(c: OpCall) -> Cost:
        return Cost("pool", float(c.args[0].numel), bytes_written=c.out.nbytes)

    return handle


def copy(ops_per_element: float = 0.0) -> Handle:
    """Operators that materialise memory (cat, clone, pad, upsampling): read inputs, write outputs."""

    def handle(c: OpCall) -> Cost:
        return Cost("copy", ops_per_element * (c.out.numel if c.outputs else 0))

    return handle


_UNARY = ("relu", "gelu", "silu", "sigmoid", "tanh", "exp", "exp2", "log", "log2", "log1p", "expm1", "sqrt",
          "rsqrt", "abs", "neg", "reciprocal", "sign", "sin", "cos", "erf", "erfc", "floor", "ceil", "round",
          "trunc", "hardtanh", "hardswish", "hardsigmoid", "leaky_relu", "elu", "selu", "celu", "mish",
          "softplus", "threshold", "logical_not", "bitwise_not", "square", "clamp", "clamp_min", "clamp_max",
          "nan_to_num", "frac", "sgn", "relu6", "glu", "logit", "tril", "triu", "fill", "zero", "heaviside")
_BINARY = ("add", "sub", "rsub", "mul", "div", "pow", "maximum", "minimum", "fmax", "fmin", "remainder",
           "fmod", "atan2", "eq", "ne", "gt", "lt", "ge", "le", "logical_and", "logical_or", "logical_xor",
           "bitwise_and", "bitwise_or", "bitwise_xor", "masked_fill", "where", "lerp", "addcmul", "addcdiv",
           "floor_divide", "copysign", "hypot", "xlogy", "clip", "true_divide", "bitwise_left_shift",
           "bitwise_right_shift", "hardshrink", "softshrink", "prelu", "_prelu_kernel", "isnan", "isinf",
           "logaddexp")
for _name in _UNARY + _BINARY:
    register(*_with_inplace(_name))(elementwise(O.activation(_name)))  # O.ELEMENTWISE unless listed


@register(*_with_inplace("gelu"))
def gelu(c: OpCall) -> Cost:
    # gelu(input, approximate="none"): the erf form, or the tanh approximation
    tanh = c.arg(1, "approximate", "none") == "tanh"
    return Cost("elementwise", (O.GELU_TANH if tanh else O.GELU) * c.out.numel)


@register(*_with_inplace("clamp"), *_with_inplace("clip"))
def clamp(c: OpCall) -> Cost:
    # clamp(input, min=None, max=None): one comparison per bound given
    bounds = sum(c.arg(i, n) is not None for i, n in ((1, "min"), (2, "max")))
    return Cost("elementwise", O.ELEMENTWISE * max(bounds, 1) * c.out.numel)

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


@register("aten.native_batch_norm", "aten._native_batch_norm_legit", "aten.cudnn_batch_norm",
          "aten.batch_norm", "aten.miopen_batch_norm")
def batch_norm(c: OpCall) -> Cost:
    # (input, weight, bias, running_mean, running_var, training, momentum, eps)
    training = bool(c.arg(5, "training", False))
    cost = (norm(O.BATCH_NORM_TRAINING, O.LAYER_NORM_AFFINE, 1) if training
            else norm(O.BATCH_NORM_EVAL, O.BATCH_NORM_EVAL_AFFINE, 1))(c)
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
    return Cost("softmax", O.SAFE_SOFTMAX * n, bytes_read=3 * c.args[0].nbytes, bytes_written=2 * c.out.nbytes, kernels=4)


register("aten._softmax", "aten._log_softmax", "aten.softmax",
         "aten.log_softmax")(elementwise(O.SOFTMAX, kind="softmax"))

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
        return Cost("copy", 2.0 * 4 * out.numel)
    n, ch, h, w = out.shape
    return Cost("copy", 2.0 * 4 * out.numel, gemm=GemmShape(m=h * w, n=n * ch, k=1, batch=1))
register("aten.upsample_trilinear3d")(copy(2.0 * 8))
register("aten.upsample_bicubic2d", "aten._upsample_bicubic2d_aa")(copy(2.0 * 16))


@register("aten.copy_", "aten.copy")
def copy_(c: OpCall) -> Cost:
    # copy_(dst, src): the source is read, the destination written; its old contents are not read.
    dst, src = c.args[0], c.args[1]
    return Cost("copy", 0.0, bytes_read=src.nbytes, bytes_written=dst.nbytes,
                param_bytes=src.nbytes if src.is_param else 0.0)


@register("aten.embedding")
def embedding(c: OpCall) -> Cost:
    # embedding(weight, indices): only the rows gathered are read, not the whole table.
    weight, indices = c.args[0], c.args[1]
    rows = c.out.nbytes
    return Cost("embedding", 0.0, bytes_read=indices.nbytes + rows, bytes_written=rows,
                param_bytes=rows if weight.is_param else 0.0)


def _gather(source_arg: int) -> Handle:
    """index_select / gather / index: read the indices and the elements gathered (as many as written)."""

    def handle(c: OpCall) -> Cost:
        src = c.args[source_arg]
        index_bytes = sum(t.nbytes for t in c.inputs if t is not src)
        gathered = c.out.numel * src.itemsize
        return Cost("copy", 0.0, bytes_read=index_bytes + gathered, bytes_written=c.out.nbytes,
                    param_bytes=gathered if src.is_param else 0.0)

    return handle


register("aten.index_select", "aten.gather", "aten.index", "aten._unsafe_index", "aten.take",
         "aten.masked_select")(_gather(0))
register("aten.scatter", "aten.scatter_", "aten.index_put", "aten.index_put_", "aten.index_copy",
         "aten.index_copy_", "aten.masked_scatter", "aten.masked_scatter_")(copy())


@register("aten.scatter_add", "aten.scatter_add_", "aten.index_add", "aten.index_add_")
def scatter_add(c: OpCall) -> Cost:
    # (self, dim, index, source/src): one add per source element
    return Cost("copy", O.INDEX_ADD * c.args[3].numel)


# --------------------------------------------------------------------------------------------------------
# Mixture of experts. transformers 5.x runs a MoE block's experts as grouped GEMMs by default
# (``config._experts_implementation`` "grouped_mm", transformers/integrations/moe.py): the router's top-k, a
# sort of the (token, expert) pairs by expert, histc of the expert ids and a cumsum for the offsets, a
# gather of the routed rows, then one grouped GEMM per projection (gate_up, down) over all experts at once.
#
# Routing assumption: on tensors without values the rows each expert gets are unknown; their total is not.
# ``mat_a`` holds all S = tokens * top_k routed rows, so the operations are exact: 2 * S * K * N. Which
# experts receive rows decides the weight bytes: an expert with no rows is skipped (CUTLASS's grouped kernel
# gives an empty problem no tiles; the fallback's mm of zero rows launches nothing), so only the experts hit
# are read. With each routed row on an expert drawn uniformly and independently, the expected number hit is
# E * (1 - (1 - 1/E)^S): all E when S >> E (prefill), about k at one decoded token. The LLM builder
# (``llm.builder.expected_experts_touched``) draws a token's k experts without repeats, E * (1 - (1 - k/E)^T);
# the two agree as S grows and differ most at one token (top-2 of 8: 1.875 here, 2 there). Real routers are
# skewed, which hits fewer experts: the uniform figure is the upper side of what a trained model reads.
def experts_hit(experts: int, rows: int) -> float:
    """Expected distinct experts among ``experts`` that ``rows`` uniform, independent picks hit."""
    if experts <= 0 or rows <= 0:
        return 0.0
    return experts * (1.0 - (1.0 - 1.0 / experts) ** rows)


@register("aten._grouped_mm", "aten._scaled_grouped_mm")
def grouped_mm(c: OpCall) -> Cost:
    """_grouped_mm(mat_a, mat_b, offs=None, ...). The MoE forward is 2-D x 3-D: mat_a (S, K) are the routed
    rows sorted by expert, mat_b (E, K, N) every expert's matrix, offs (E,) where each expert's rows end.

    Flops: each row multiplies one expert's K x N matrix, 2 * S * K * N (exact). Bytes: mat_a, offs and the
    output, plus the matrices of the experts hit (``experts_hit``, the routing assumption above); a 3-D x 3-D
    call (a batched product) reads all of mat_b. Kernels: 2 on the GPU in bf16 (CUTLASS's
    prepare_grouped_gemm_data and the grouped GEMM, profiled on the H200, torch 2.11+cu130). fp16 and fp32 run
    PyTorch's fallback there instead (offsets copied to the host, then one mm per expert): the handle cannot
    tell fp16 from bf16 (it sees bytes per element), so that is left to the lowering (docs/counting.md, MoE).
    """
    a, b = c.args[0], c.args[1]
    if len(a.shape) == 2 and len(b.shape) == 2:      # weight gradients: (M, sum K) @ (sum K, N) -> (G, M, N)
        flops = 2.0 * a.shape[0] * a.shape[1] * b.shape[1]
        groups, m = c.out.shape[0], a.shape[0]
        return Cost("matmul", flops, gemm=GemmShape(m, b.shape[1], max(1, a.shape[1] // max(1, groups)), groups))
    k = a.shape[-1]
    flops = 2.0 * c.out.numel * k                    # every output element is a K-long dot product
    if len(a.shape) == 2 and len(b.shape) == 3:      # the MoE forward
        experts, rows, n = b.shape[0], a.shape[0], b.shape[-1]
        hit = experts_hit(experts, rows)
        weights = b.nbytes * hit / experts
        gemm = GemmShape(max(1, round(rows / hit)) if hit else 0, n, k, max(1, round(hit)))
    else:                                           # 3-D x 3-D (batched) or 3-D x 2-D: every operand read
        weights = b.nbytes
        gemm = GemmShape(a.shape[-2], c.out.shape[-1], k, a.shape[0] if len(a.shape) == 3 else 1)
    others = sum(t.nbytes for t in c.inputs if t is not b)
    return Cost("matmul", flops, bytes_read=others + weights, param_bytes=weights if b.is_param else 0.0,
                kernels=2, gemm=gemm)


# Routing's vector work: histc/bincount count the pairs per expert (one accumulate per element), searchsorted
# does a binary search per element, scatter_reduce/index_reduce one reduction per source element.
register("aten.histc", "aten.bincount")(reduction(O.REDUCTION))
register("aten.argsort")(reduction(O.REDUCTION))


@register("aten.searchsorted")
def searchsorted(c: OpCall) -> Cost:
    # searchsorted(sorted_sequence, values): log2(len) comparisons per value
    seq, values = c.args[0], c.args[1]
    per = max(1.0, math.log2(max(2, seq.shape[-1]))) if seq.shape else 1.0
    n = values.numel if isinstance(values, TensorInfo) else 1
    return Cost("reduction", O.REDUCTION * per * n)


@register("aten.scatter_reduce", "aten.scatter_reduce_", "aten.index_reduce", "aten.index_reduce_")
def scatter_reduce(c: OpCall) -> Cost:
    # (self, dim, index, src/source, reduce, ...): one reduction per source element
    return Cost("copy", O.INDEX_ADD * c.args[3].numel)


register(*_with_inplace("index_fill"))(copy())


def lookup(name: str) -> Handle | None:
    """The handle for an operator name ("aten.mm"), or None when there is none."""
    return HANDLES.get(name)
