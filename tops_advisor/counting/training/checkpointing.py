"""Gradient checkpointing, as the model's library offers it: timm's ``set_grad_checkpointing(True)``,
Hugging Face's ``gradient_checkpointing_enable()`` (non-reentrant ``torch.utils.checkpoint``). A model that
enables it itself (``torch.utils.checkpoint`` in its forward) needs nothing: the recompute is counted where
the backward runs it."""

from __future__ import annotations

from torch import nn

from ...errors import InputError


def enable_checkpointing(model: nn.Module, label: str) -> str:
    """Turn on the library's checkpointing; returns how. Raises InputError when the model offers none."""
    if hasattr(model, "set_grad_checkpointing"):
        model.set_grad_checkpointing(True)
        return "set_grad_checkpointing(True) (timm)"
    if getattr(model, "supports_gradient_checkpointing", False) and hasattr(model, "gradient_checkpointing_enable"):
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        return "gradient_checkpointing_enable() (transformers, non-reentrant)"
    raise InputError(f"{label}: the model offers no gradient checkpointing to enable (timm's "
                     "set_grad_checkpointing, transformers' gradient_checkpointing_enable)",
                     hint="drop --checkpointing, or wrap blocks in torch.utils.checkpoint.checkpoint in the model "
                          "file (counted as it runs)")
