"""The backward of a function the counter takes whole (fused attention, RMS norm) when a training step is
counted: the function runs without autograd (its meta/CPU decomposition must not reach the backward), and an
autograd node in its place records, during the backward, the one fused backward kernel a GPU runs:
``_scaled_dot_product_flash_attention_backward`` (FlashAttention-2: dQ, dK, dV in one kernel) or
``_fused_rms_norm_backward``, with ATen's argument layout, so that a handle costs it like any operator."""

from __future__ import annotations

from collections.abc import Callable

import torch

from .attention_choice import SDPA, qkv
from .tensors import flat_tensors

FLASH_BACKWARD = "aten._scaled_dot_product_flash_attention_backward"
RMS_NORM_BACKWARD = "aten._fused_rms_norm_backward"

Record = Callable[[str, tuple, dict, object], None]


def needs_grad(args: tuple, kwargs: dict) -> bool:
    """Autograd is on and some floating-point input requires a gradient."""
    return torch.is_grad_enabled() and any(t.requires_grad for t in flat_tensors((args, kwargs)))


class _FusedNode(torch.autograd.Function):
    """Stands in for the fused function in the autograd graph: ``backward`` records its kernel."""

    @staticmethod
    def forward(ctx, backward: Callable, out: torch.Tensor, *inputs: torch.Tensor):
        ctx.backward_fn = backward
        ctx.save_for_backward(out, *inputs)
        return out.detach()

    @staticmethod
    def backward(ctx, grad_out: torch.Tensor):
        out, *inputs = ctx.saved_tensors
        return (None, None, *ctx.backward_fn(grad_out, out, inputs))


def _grads(inputs: list[torch.Tensor]) -> tuple[torch.Tensor | None, ...]:
    return tuple(torch.empty_like(t) if t is not None and t.requires_grad else None for t in inputs)


def _attention(record: Record, args: tuple, kwargs: dict, out: torch.Tensor) -> torch.Tensor:
    q, k, v = qkv(args, kwargs)
    is_causal = bool(args[4] if len(args) > 4 else kwargs.get("is_causal", False))
    dropout = float(args[3] if len(args) > 3 else kwargs.get("dropout_p", 0.0))
    scale = kwargs.get("scale")

    def backward(grad_out, out, inputs):
        q, k, v = inputs
        lse = torch.empty(q.shape[:-1], dtype=torch.float32, device=q.device)   # FA2's saved log-sum-exp
        grads = _grads([q, k, v])
        record(FLASH_BACKWARD, (grad_out, q, k, v, out, lse, None, None, q.shape[-2], k.shape[-2], dropout,
                                is_causal, None, None), {"scale": scale}, tuple(g for g in grads if g is not None))
        return grads

    return _FusedNode.apply(backward, out, q, k, v)


def _rms_norm(record: Record, args: tuple, kwargs: dict, out: torch.Tensor) -> torch.Tensor:
    x = args[0]
    shape = args[1] if len(args) > 1 else kwargs.get("normalized_shape")
    weight = args[2] if len(args) > 2 else kwargs.get("weight")

    def backward(grad_out, out, inputs):
        x, *rest = inputs
        w = rest[0] if rest else None
        rows = x.shape[:x.dim() - len(shape)]
        rstd = torch.empty((*rows, *([1] * len(shape))), dtype=torch.float32, device=x.device)
        grads = _grads([x, w])
        mask = [grads[0] is not None, w is not None and grads[1] is not None]
        record(RMS_NORM_BACKWARD, (grad_out, x, list(shape), rstd, w, mask), {},
               tuple(g for g in grads if g is not None))
        return grads[: 1 + len(rest)]

    return _FusedNode.apply(backward, out, x, *([weight] if isinstance(weight, torch.Tensor) else []))


def attach(record: Record, name: str, args: tuple, kwargs: dict, out):
    """``out`` of a fused function (computed without autograd) joined to the autograd graph by a node that
    records the function's fused backward kernel; other functions' outputs are returned as they are."""
    if name == SDPA and isinstance(out, torch.Tensor):
        return _attention(record, args, kwargs, out)
    if name == "aten.rms_norm" and isinstance(out, torch.Tensor):
        return _rms_norm(record, args, kwargs, out)
    return out
