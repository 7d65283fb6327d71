"""The loss a training step backpropagates from: the model's own (a scalar forward, a model file's
``loss(output, *inputs)``, a Hugging Face model's loss), else the task's (cross-entropy over the classes of a
classifier's or language model's logits, or of a segmentation map's channels), else the sum of the output,
which the workload says."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from ...errors import ModelFileError


@dataclass(frozen=True)
class Loss:
    value: torch.Tensor
    what: str


def _logits(output):
    """The tensor a task loss is made of: ``.logits`` of a model output, the first tensor of a tuple."""
    if hasattr(output, "logits") and isinstance(output.logits, torch.Tensor):
        return output.logits
    if isinstance(output, torch.Tensor):
        return output
    if isinstance(output, dict):
        output = tuple(output.values())
    if isinstance(output, (tuple, list)):
        return next((t for t in output if isinstance(t, torch.Tensor) and t.is_floating_point()), None)
    return None


def _labels(shape: tuple[int, ...], classes: int, device: torch.device) -> torch.Tensor:
    return torch.zeros(shape, dtype=torch.long, device=device).clamp_(0, classes - 1)


def task_loss(output) -> Loss | None:
    """Cross-entropy on the output's logits: (N, C) a classifier, (N, T, V) a language model over tokens,
    (N, C, H, W) a segmentation map over pixels; None when the output is none of these."""
    logits = _logits(output)
    if logits is None or not logits.is_floating_point():
        return None
    if logits.dim() == 2:
        labels = _labels(logits.shape[:1], logits.shape[1], logits.device)
        return Loss(F.cross_entropy(logits, labels), f"cross-entropy over {logits.shape[1]} classes")
    if logits.dim() == 3:
        labels = _labels(logits.shape[:2], logits.shape[2], logits.device)
        return Loss(F.cross_entropy(logits.flatten(0, 1), labels.flatten()),
                    f"cross-entropy over {logits.shape[2]} classes per token")
    if logits.dim() == 4:
        labels = _labels((logits.shape[0], *logits.shape[2:]), logits.shape[1], logits.device)
        return Loss(F.cross_entropy(logits, labels), f"cross-entropy over {logits.shape[1]} classes per pixel")
    return None


def make_loss(output, inputs: tuple, user_loss: Callable | None, label: str, library: bool) -> Loss:
    """The step's loss. A scalar forward is the loss; ``user_loss`` (a model file's ``loss``) is called as
    ``loss(output, *inputs)``; a library model gets its task's loss; anything else is summed."""
    if user_loss is not None:
        value = user_loss(output, *inputs)
        if not isinstance(value, torch.Tensor) or value.numel() != 1:
            raise ModelFileError(f"{label}: loss(output, *inputs) must return a scalar tensor, got "
                                 f"{type(value).__name__}{tuple(value.shape) if isinstance(value, torch.Tensor) else ''}")
        return Loss(value.reshape(()), "the model file's loss()")
    if isinstance(output, torch.Tensor) and output.numel() == 1 and output.is_floating_point():
        return Loss(output.reshape(()), "the model's own (forward returns a scalar)")
    own = getattr(output, "loss", None)
    if isinstance(own, torch.Tensor) and own.numel() == 1:
        return Loss(own, "the model's own loss")
    if library:
        found = task_loss(output)
        if found is not None:
            return found
    logits = _logits(output)
    if logits is None or not logits.is_floating_point():
        raise ModelFileError(f"{label}: the forward returns {type(output).__name__}, which holds no "
                             "floating-point tensor to train on",
                             hint="return the loss (a scalar) from forward(), or define loss(output, *inputs) "
                                  "in the model file")
    return Loss(logits.float().sum(), "the sum of the output (the model gives no loss: return one from "
                                      "forward() or define loss(output, *inputs))")
