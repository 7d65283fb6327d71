"""The precisions a model can be counted in, and the precision each counted operator computes in."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from ..errors import CountingError, InputError
from ..kinds import OpKind
from ..units import AMP, parse_precision

# Precisions a model can be counted in. fp64/fp32/tf32/fp16/bf16 run the model in that torch dtype (tf32:
# fp32 storage, matrix operators labelled tf32). fp8/int8/int4/fp4 have no eager kernels for most operators:
# the model runs in fp16 (same shapes) and ``scaling.retype`` rescales the floating-point bytes to the
# narrow element size (weights and activations quantised together, as TensorRT-style inference runs).
COUNT_DTYPES: tuple[str, ...] = ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int8", "int4", "fp4", AMP)
NARROW = frozenset({"fp8", "int8", "int4", "fp4"})
DTYPE_NAME = {torch.float64: "fp64", torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16"}
TORCH_DTYPE = {name: dt for dt, name in DTYPE_NAME.items()} | {"tf32": torch.float32, AMP: torch.float32}
_TENSOR_CORE_KINDS = frozenset({OpKind.MATMUL, OpKind.CONV, OpKind.ATTENTION})


def resolve_dtype(dtype: str | None, module: torch.nn.Module | None = None) -> str:
    """A precision name from COUNT_DTYPES; None means the module's own floating dtype (fp32 if none)."""
    if dtype is None:
        for p in module.parameters() if module is not None else ():
            if p.is_floating_point():
                return DTYPE_NAME.get(p.dtype, "fp32")
        return "fp32"
    try:
        return parse_precision(dtype, COUNT_DTYPES)
    except InputError as exc:
        raise CountingError(f"cannot count in {dtype!r}: {exc}", hint=exc.hint) from None


def _float_dtype(tensors: Sequence[torch.Tensor]) -> torch.dtype | None:
    """The dtype of the largest floating-point input (the one the kernel computes in)."""
    floats = [t for t in tensors if t.is_floating_point()]
    return max(floats, key=lambda t: t.numel()).dtype if floats else None


def op_dtype(model_dtype: str, kind: OpKind, ins: Sequence[torch.Tensor]) -> str:
    """The precision an operator computes in: the model's, fp32 for non-matrix work of a tf32 model, or
    the inputs' own when they differ (an fp32 upcast inside fp16 work)."""
    dtype = model_dtype
    if dtype == "tf32" and kind not in _TENSOR_CORE_KINDS:
        dtype = "fp32"
    actual = _float_dtype(ins)
    if actual is not None and actual != TORCH_DTYPE.get(dtype):
        dtype = DTYPE_NAME.get(actual, dtype)
    return dtype
