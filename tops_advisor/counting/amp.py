"""Autocast (``--dtype amp``): an fp32 model run under ``torch.autocast("cuda", dtype=torch.float16)``, counted
operator by operator in the precision autocast gives each one.

Autocast's policy is three lists of operators, from PyTorch's ``aten/src/ATen/autocast_mode.h`` (the
``AT_FORALL_LOWER_PRECISION_FP``, ``AT_FORALL_FP32`` and ``AT_FORALL_FP32_SET_OPT_DTYPE`` macros, torch
2.14; the lists in ``autocast_mode.cpp`` register them for CUDA):

- **lower precision** (matrix products, convolutions, ``prelu``, attention): floating-point inputs cast to
  fp16, output fp16;
- **fp32** (layer/group/RMS norm, ``exp``, ``log``, ``pow``, ``rsqrt``, ``softplus``, upsampling, losses ...):
  inputs cast to fp32, output fp32;
- **fp32 with an output dtype** (``softmax``, ``log_softmax``, ``sum``, ``prod``, ``cumsum`` ...): computed
  and returned in fp32; on CUDA a half ``softmax`` upcasts inside its kernel (``_softmax(x, dim,
  half_to_float=True)``, aten/src/ATen/native/SoftMax.cpp), so no cast kernel;
- every other operator runs in its inputs' precision (an fp16 activation plus an fp32 residual is fp32 by
  type promotion, read as they are).

Each cast is a kernel (``aten._to_copy``: read the source, write the copy). Autocast caches the fp16 copy
of a weight (a leaf tensor that requires grad) for the rest of the autocast region, so each fp32 weight is
read and cast once per forward; activations are cast at every use. Batch norm is on no list: it runs on
the fp16 convolution output with its fp32 statistics, with no cast.

The counter sees operators after autocast and composite decomposition (``linear`` arrives as ``addmm``), so
the lists are matched by the ATen operators they decompose into. The casting happens inside the counter's
dispatch mode, on meta or fake tensors: nothing is computed.
"""

from __future__ import annotations

import torch
from torch.utils._pytree import tree_map_only

# autocast_mode.h, AT_FORALL_LOWER_PRECISION_FP, as the ATen operators reaching the dispatcher
LOWER_PRECISION = frozenset(f"aten.{n}" for n in (
    "mm", "addmm", "bmm", "baddbmm", "addbmm", "mv", "addmv", "addr", "convolution", "_convolution",
    "conv1d", "conv2d", "conv3d", "conv_tbc", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "prelu", "_prelu_kernel", "matmul", "linear", "einsum", "_scaled_dot_product_flash_attention",
    "_scaled_dot_product_efficient_attention", "_scaled_dot_product_cudnn_attention",
    "scaled_dot_product_attention",
))
# AT_FORALL_FP32
FP32 = frozenset(f"aten.{n}" for n in (
    "acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2", "log1p", "reciprocal", "rsqrt",
    "sinh", "tan", "pow", "softplus", "layer_norm", "native_layer_norm", "rms_norm", "_fused_rms_norm",
    "group_norm", "native_group_norm", "frobenius_norm", "nuclear_norm", "cosine_similarity", "poisson_nll_loss",
    "cosine_embedding_loss", "nll_loss", "nll_loss2d", "nll_loss_forward", "hinge_embedding_loss", "kl_div",
    "l1_loss", "smooth_l1_loss", "huber_loss", "mse_loss", "margin_ranking_loss", "multilabel_margin_loss",
    "soft_margin_loss", "triplet_margin_loss", "multi_margin_loss", "binary_cross_entropy_with_logits", "dist",
    "pdist", "cdist", "renorm", "logsumexp", "upsample_nearest1d", "_upsample_nearest_exact1d",
    "upsample_nearest2d", "_upsample_nearest_exact2d", "upsample_nearest3d", "_upsample_nearest_exact3d",
    "upsample_linear1d", "upsample_bilinear2d", "_upsample_bilinear2d_aa", "upsample_trilinear3d",
    "upsample_bicubic2d", "_upsample_bicubic2d_aa",
))
# AT_FORALL_FP32_SET_OPT_DTYPE: computed in fp32; a half softmax upcasts inside its kernel on CUDA
FP32_OUTPUT = frozenset(f"aten.{n}" for n in (
    "prod", "_softmax", "softmax", "_log_softmax", "log_softmax", "cumprod", "cumsum", "linalg_vector_norm",
    "linalg_matrix_norm", "sum", "norm",
))
_F = torch.nn.functional
# Functions that check their inputs' dtypes before reaching the dispatcher (or that the counter takes whole,
# as one fused kernel): cast where autocast casts them, at the call.
_FUNCTIONS = frozenset({_F.conv1d, _F.conv2d, _F.conv3d, _F.conv_transpose1d, _F.conv_transpose2d,
                        _F.conv_transpose3d, torch.conv1d, torch.conv2d, torch.conv3d,
                        _F.scaled_dot_product_attention})
_IN_KERNEL_UPCAST = frozenset({"aten._softmax", "aten._log_softmax"})


def _function_names(ops: frozenset[str]) -> frozenset[str]:
    return frozenset(n.removeprefix("aten.") for n in ops)


# A training step casts where autocast does, above autograd (the autograd graph then holds the cast copies, and
# the backward gets its gradients in their dtypes): at the torch functions, by name (``F.linear``, ``torch.matmul``
# and ``Tensor.__matmul__``, ``Tensor.softmax`` ...). Losses are fp32 (their ATen parts are on the fp32 list).
TRAIN_LOWER = _function_names(LOWER_PRECISION) | {"__matmul__", "__rmatmul__"}
TRAIN_FP32 = _function_names(FP32) | {"cross_entropy", "nll_loss", "mse_loss", "l1_loss",
                                      "binary_cross_entropy_with_logits", "smooth_l1_loss", "huber_loss"}
TRAIN_FP32_OUTPUT = _function_names(FP32_OUTPUT)  # computed in fp32 inside the kernel: the cast is not a kernel
_CAST = "aten._to_copy"


class Autocast:
    """Autocast's casts for one forward: ``cast`` returns an operator's arguments in the precision autocast
    gives it and records each cast kernel through ``record(name, args, kwargs, out)``."""

    def __init__(self, record, lower: torch.dtype = torch.float16):
        self.record = record
        self.lower = lower
        self._weights: dict[tuple, torch.Tensor] = {}   # autocast's cast cache: (weight, dtype) -> its copy

    def clear_cache(self) -> None:
        """Leaving an autocast region empties its cache of cast weights (``torch.autocast.__exit__``)."""
        self._weights.clear()

    def cast_function(self, func, args: tuple, kwargs: dict, weight_key) -> tuple[tuple, dict]:
        """Casts for a convolution function (``F.conv2d`` ...), which checks its input against its bias
        before it reaches the dispatcher, and for ``F.scaled_dot_product_attention`` (the counter counts it
        whole): autocast has cast their inputs by then. The casts dispatch (and are counted)
        as ``aten._to_copy``; a weight's copy is cached as for the ATen operators."""
        if func not in _FUNCTIONS:
            return args, kwargs
        return self._cast_all(args, kwargs, self.lower, weight_key, record=False)

    def cast_for_training(self, func, args: tuple, kwargs: dict, weight_key) -> tuple[tuple, dict, bool]:
        """A training step's casts for a torch function (by its name), above autograd. Returns the arguments
        and whether the casts are inside the kernel (fp32-output functions: run them uncounted)."""
        name = getattr(func, "__name__", "")
        if name in TRAIN_LOWER:
            dtype, in_kernel = self.lower, False
        elif name in TRAIN_FP32:
            dtype, in_kernel = torch.float32, False
        elif name in TRAIN_FP32_OUTPUT:
            dtype, in_kernel = torch.float32, True
        else:
            return args, kwargs, False
        args, kwargs = self._cast_all(args, kwargs, dtype, weight_key, record=False)
        return args, kwargs, in_kernel

    def target(self, name: str) -> torch.dtype | None:
        if name in LOWER_PRECISION:
            return self.lower
        if name in FP32 or name in FP32_OUTPUT:
            return torch.float32
        return None

    def cast(self, name: str, args: tuple, kwargs: dict, weight_key) -> tuple[tuple, dict]:
        """``weight_key(t)``: a key naming the weight behind ``t`` (a view of it included), None for an
        activation."""
        dtype = self.target(name)
        if dtype is None:
            return args, kwargs
        return self._cast_all(args, kwargs, dtype, weight_key, record=name not in _IN_KERNEL_UPCAST)

    def _cast_all(self, args: tuple, kwargs: dict, dtype: torch.dtype, weight_key, record: bool
                  ) -> tuple[tuple, dict]:
        def one(t: torch.Tensor) -> torch.Tensor:
            if not t.is_floating_point() or t.dtype == dtype or t.dtype == torch.float64:
                return t
            key = weight_key(t)
            if key is not None and (key, dtype) in self._weights:
                return self._weights[(key, dtype)]
            out = t.to(dtype)
            if record:
                self.record(_CAST, (t,), {"dtype": dtype}, out)
            if key is not None:
                self._weights[(key, dtype)] = out
            return out

        return tree_map_only(torch.Tensor, one, args), tree_map_only(torch.Tensor, one, kwargs)
