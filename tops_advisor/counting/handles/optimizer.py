"""Cost formulas of the optimizer step: PyTorch's ``_foreach_*`` operators, the fused optimizers
(``_fused_adam_``, ``_fused_adamw_``, ``_fused_sgd_``) and GradScaler's unscale-and-check and scale update.

All of them are memory-bound passes over lists of tensors, launched by PyTorch's ``multi_tensor_apply``
(aten/src/ATen/native/cuda/MultiTensorApply.cuh): each tensor is cut into chunks of ``kChunkSize`` elements,
one thread block per chunk, and one kernel is launched whenever its argument block is full: when it holds
``depth_to_max_tensors[depth - 1]`` tensors (``depth_to_max_tensors_scalarlist`` for operators that carry one
scalar per tensor) or ``depth_to_max_blocks`` chunks. ``depth`` is the number of tensor lists the kernel walks,
the output list of an out-of-place operator included. ``train.optimizer.multi_tensor_launches`` reproduces
that loop exactly (one function for counting and for the analytic LLM training step); checked against the
H200 profiles (benchmarks/studies/training-step/h200_train_profiles.json): the launches of the eight foreach operators of AdamW and GradScaler's unscale (nine passes a step: ``mul_`` twice)
for the twelve profiled models (TinyLlama-1.1B's 201 fp32 tensors: 53 launches a pass), 96 of 96 equal.

Those tables are the 4 KB kernel-argument ones. PyTorch also builds 32 KB-argument kernels (7x the tensors,
2240 blocks) for CUDA 12.1+ drivers, but the H200 profiles (torch 2.11+cu130, driver 580) launched the 4 KB
counts, so those are used.

Records carry ``workload.MULTI_TENSOR_FAMILY``. Bytes: each tensor list read once and written once where the
operator writes it, at its element size. An operator whose lists PyTorch cannot take on the fast path (tensors
of different element sizes or shapes at one position) runs one kernel per tensor instead
(``foreach_tensor_*_slow``).
"""

from __future__ import annotations

from collections.abc import Sequence

from ... import opcosts as O
from ...kinds import OpKind
from ...train.optimizer import CHUNK_ELEMENTS, multi_tensor_launches
from ...workload import MULTI_TENSOR_FAMILY
from .registry import Cost, OpCall, TensorInfo, register

__all__ = ["CHUNK_ELEMENTS", "multi_tensor_launches"]   # re-exported: the counting tests read them here


def _lists(c: OpCall) -> list[list[TensorInfo]]:
    """The tensor-list arguments, in order."""
    return [list(a) for a in c.args if isinstance(a, (list, tuple)) and a and isinstance(a[0], TensorInfo)]


def _has_scalar_list(c: OpCall) -> bool:
    """One scalar per tensor: a list of numbers, or addcmul/addcdiv's tensor of scalars (made a scalar list)."""
    if any(isinstance(a, (list, tuple)) and a and not isinstance(a[0], TensorInfo) for a in c.args):
        return True
    return ("addcmul" in c.name or "addcdiv" in c.name) and any(isinstance(a, TensorInfo) for a in c.args)


def _fast_route(lists: list[list[TensorInfo]]) -> bool:
    """PyTorch's fast path (``can_use_fast_route``): one element size throughout, equal shapes per position."""
    first = lists[0]
    if len({t.itemsize for lst in lists for t in lst}) > 1 or any(len(lst) != len(first) for lst in lists):
        return False
    return all(t.shape == f.shape for lst in lists[1:] for t, f in zip(lst, first, strict=True))


def _list_bytes(tensors: Sequence[TensorInfo]) -> float:
    return float(sum(t.numel * t.itemsize for t in tensors))


def _launches(lists: list[list[TensorInfo]], depth: int, scalar_list: bool) -> int:
    numels = [t.numel for t in lists[0]]
    if _fast_route(lists):
        return multi_tensor_launches(numels, depth, scalar_list)
    return sum(1 for n in numels if n > 0)   # the slow path: one operator per tensor


# --------------------------------------------------------------------------------------------------------
# The foreach family, by the operation per element of each (``opcosts``; the plain operators' counts).
_FOREACH_OPS: dict[str, float] = {
    **{name: O.ELEMENTWISE for name in (
        "add", "sub", "mul", "div", "maximum", "minimum", "clamp_min", "clamp_max", "neg", "abs", "sqrt", "rsqrt",
        "exp", "expm1", "log", "log1p", "log2", "log10", "reciprocal", "sign", "tanh", "pow", "erf", "erfc",
        "floor", "ceil", "round", "trunc", "frac", "sin", "cos", "tan", "sinh", "cosh", "asin", "acos", "atan",
        "lgamma")},
    "sigmoid": O.SIGMOID, "lerp": O.LERP, "addcmul": O.ADDCMUL, "addcdiv": O.ADDCDIV,
}


def _foreach(c: OpCall, base: str, inplace: bool) -> Cost:
    lists = _lists(c)
    if not lists:
        return Cost(OpKind.ELEMENTWISE, 0.0, kernels=0, family=MULTI_TENSOR_FAMILY)
    outputs = lists[0] if inplace else [t for t in c.outputs]
    depth = len(lists) + (0 if inplace else 1)
    ops = _FOREACH_OPS[base] * sum(t.numel for t in lists[0])
    read = sum(_list_bytes(lst) for lst in lists)
    return Cost(OpKind.ELEMENTWISE, ops, bytes_read=read, bytes_written=_list_bytes(outputs),
                param_bytes=sum(_list_bytes(lst) for lst in lists if all(t.is_param for t in lst)),
                kernels=_launches(lists, depth, _has_scalar_list(c)), family=MULTI_TENSOR_FAMILY)


def _register_foreach(base: str) -> None:
    register(f"aten._foreach_{base}")(lambda c: _foreach(c, base, inplace=False))
    register(f"aten._foreach_{base}_")(lambda c: _foreach(c, base, inplace=True))


for _base in _FOREACH_OPS:
    _register_foreach(_base)


@register("aten._foreach_copy_")
def foreach_copy(c: OpCall) -> Cost:
    # _foreach_copy_(self, src, non_blocking): src read, self written; depth 2
    dst, src = _lists(c)[:2]
    return Cost(OpKind.COPY, 0.0, bytes_read=_list_bytes(src), bytes_written=_list_bytes(dst),
                param_bytes=0.0, kernels=_launches([dst, src], 2, False), family=MULTI_TENSOR_FAMILY)


@register("aten._foreach_zero_")
def foreach_zero(c: OpCall) -> Cost:
    # _foreach_zero_(self): written, not read; depth 1 (``Optimizer.zero_grad(set_to_none=False)``)
    (dst,) = _lists(c)[:1]
    return Cost(OpKind.ELEMENTWISE, 0.0, bytes_read=0.0, bytes_written=_list_bytes(dst), param_bytes=0.0,
                kernels=_launches([dst], 1, False), family=MULTI_TENSOR_FAMILY)


@register("aten._foreach_norm", "aten._foreach_max")
def foreach_norm(c: OpCall) -> Cost:
    """_foreach_norm(self, ord=2, dtype=None) (``clip_grad_norm_``), _foreach_max(self): depth 1, plus the
    zeroed per-chunk partial results and the ``lpnorm_cleanup`` kernel that reduces them per tensor
    (aten/src/ATen/native/cuda/ForeachReduceOp.cu). Squares and accumulates: 2 per element (one for max, 1-norm
    and inf-norm)."""
    (tensors,) = _lists(c)[:1]
    order = c.arg(1, "ord", 2)
    per = 2.0 if c.name == "aten._foreach_norm" and order not in (1, float("inf")) else 1.0
    return Cost(OpKind.REDUCTION, per * sum(t.numel for t in tensors), bytes_read=_list_bytes(tensors),
                param_bytes=0.0, kernels=_launches([tensors], 1, False) + 2, family=MULTI_TENSOR_FAMILY)


# --------------------------------------------------------------------------------------------------------
# Fused optimizers: one multi_tensor_apply_for_fused_optimizer pass (the non-scalar-list limits), the update
# of opcosts.ADAM_STEP / SGD_STEP per element.
@register("aten._fused_adam_", "aten._fused_adamw_")
def fused_adam(c: OpCall) -> Cost:
    """(self, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, *, lr, beta1, beta2, weight_decay,
    eps, amsgrad, maximize, grad_scale=None, found_inf=None): depth 4 (params, grads, exp_avg, exp_avg_sq), 5
    with amsgrad (max_exp_avg_sq) (aten/src/ATen/native/cuda/FusedAdamWKernel.cu, FusedAdamKernel.cu). Every
    list is read; all but the gradients are written back, the gradients too when a GradScaler's scale is
    folded in (fused_adam_utils.cuh stores the unscaled gradient)."""
    params, grads, exp_avgs, exp_avg_sqs = c.args[:4]
    amsgrad, scaled = bool(c.kwargs.get("amsgrad", False)), isinstance(c.kwargs.get("grad_scale"), TensorInfo)
    lists = [list(params), list(grads), list(exp_avgs), list(exp_avg_sqs)] + ([list(c.args[4])] if amsgrad else [])
    state = lists[2:]
    ops = O.ADAM_STEP + (O.ADAM_WEIGHT_DECAY if c.kwargs.get("weight_decay", 0) else 0.0) \
        + (O.ADAM_AMSGRAD if amsgrad else 0.0) + (O.GRAD_UNSCALE if scaled else 0.0)
    steps = _list_bytes(c.args[5]) if len(c.args) > 5 else 0.0
    read = sum(_list_bytes(lst) for lst in lists) + steps
    written = _list_bytes(params) + sum(_list_bytes(lst) for lst in state) + (_list_bytes(grads) if scaled else 0.0)
    return Cost(OpKind.ELEMENTWISE, ops * sum(t.numel for t in params), bytes_read=read, bytes_written=written,
                param_bytes=_list_bytes(params), kernels=_launches(lists, len(lists), False),
                family=MULTI_TENSOR_FAMILY)


@register("aten._fused_sgd_")
def fused_sgd(c: OpCall) -> Cost:
    """(self, grads, momentum_buffer_list, *, weight_decay, momentum, lr, dampening, nesterov, maximize,
    is_first_step, grad_scale=None, found_inf=None): multi_tensor_apply<2> without momentum, <3> with it
    (aten/src/ATen/native/cuda/FusedSgdKernel.cu): params and momentum buffers written, gradients too when
    unscaled by a GradScaler."""
    params, grads = list(c.args[0]), list(c.args[1])
    momentum = float(c.kwargs.get("momentum", 0.0))
    buffers = list(c.args[2]) if momentum and len(c.args) > 2 else []
    scaled = isinstance(c.kwargs.get("grad_scale"), TensorInfo)
    lists = [params, grads] + ([buffers] if buffers else [])
    ops = O.SGD_STEP + (O.SGD_WEIGHT_DECAY if c.kwargs.get("weight_decay", 0) else 0.0) \
        + (O.SGD_MOMENTUM if buffers else 0.0) + (O.SGD_NESTEROV if buffers and c.kwargs.get("nesterov") else 0.0) \
        + (O.GRAD_UNSCALE if scaled else 0.0)
    written = _list_bytes(params) + _list_bytes(buffers) + (_list_bytes(grads) if scaled else 0.0)
    return Cost(OpKind.ELEMENTWISE, ops * sum(t.numel for t in params),
                bytes_read=sum(_list_bytes(lst) for lst in lists), bytes_written=written,
                param_bytes=_list_bytes(params), kernels=_launches(lists, len(lists), False),
                family=MULTI_TENSOR_FAMILY)


# --------------------------------------------------------------------------------------------------------
# GradScaler (torch/amp/grad_scaler.py): ``unscale_`` runs _amp_foreach_non_finite_check_and_unscale_ per device
# and dtype (multi_tensor_apply<1> over the gradients, aten/src/ATen/native/cuda/AmpKernels.cu: each gradient
# read, multiplied by 1/scale, checked and written back), ``update`` runs _amp_update_scale_ (one tiny kernel).
@register("aten._amp_foreach_non_finite_check_and_unscale_")
def amp_unscale(c: OpCall) -> Cost:
    # (self, found_inf, inv_scale)
    (grads,) = _lists(c)[:1]
    small = sum(t.nbytes for t in c.args[1:3] if isinstance(t, TensorInfo))
    return Cost(OpKind.ELEMENTWISE, O.NON_FINITE_CHECK * sum(t.numel for t in grads),
                bytes_read=_list_bytes(grads) + small, bytes_written=_list_bytes(grads), param_bytes=0.0,
                kernels=_launches([grads], 1, False), family=MULTI_TENSOR_FAMILY)


@register("aten._amp_update_scale_")
def amp_update_scale(c: OpCall) -> Cost:
    # (self, growth_tracker, found_inf, scale_growth_factor, scale_backoff_factor, growth_interval): a few
    # comparisons and one multiply on three scalars, one kernel (``amp_update_scale_cuda_kernel``)
    return Cost(OpKind.ELEMENTWISE, 4.0)
