"""LoRA adapters (Hu et al., 2021, arXiv:2106.09685) put on a model as peft's ``LoraModel`` does: each
targeted ``nn.Linear`` keeps its frozen weight and adds ``B(A(x)) * alpha / r`` (A: r x in, B: out x r,
trainable; peft's default dropout 0 is no operator), and every other parameter is frozen."""

from __future__ import annotations

import torch
from torch import nn

from ...errors import InputError
from ...train import LoraSpec

# Output heads are not adapted by default (peft targets the attention and MLP projections of the body).
HEAD_NAMES = ("lm_head", "head", "classifier", "fc", "score", "heads", "pooler")


class LoraLinear(nn.Module):
    def __init__(self, base: nn.Linear, rank: int, alpha: float):
        super().__init__()
        self.base = base
        kw = {"device": base.weight.device, "dtype": base.weight.dtype}
        self.lora_A = nn.Linear(base.in_features, rank, bias=False, **kw)
        self.lora_B = nn.Linear(rank, base.out_features, bias=False, **kw)
        self.scaling = alpha / rank

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.base(x) + self.lora_B(self.lora_A(x)) * self.scaling


def _targeted(name: str, spec: LoraSpec) -> bool:
    last = name.rsplit(".", 1)[-1]
    if spec.targets:
        return any(t in name for t in spec.targets)
    return last not in HEAD_NAMES and not any(part in HEAD_NAMES for part in name.split(".")[:1])


def add_lora(model: nn.Module, spec: LoraSpec, label: str) -> int:
    """Freeze ``model`` and wrap its targeted linear layers in LoRA adapters, in place; the adapters made."""
    for p in model.parameters():
        p.requires_grad_(False)
    chosen = [(name, m) for name, m in model.named_modules() if isinstance(m, nn.Linear) and _targeted(name, spec)]
    if not chosen:
        what = f"matching {', '.join(spec.targets)}" if spec.targets else "outside the output head"
        raise InputError(f"{label}: --lora found no linear layer {what}",
                         hint="LoRA adapts nn.Linear layers; name targets that exist (e.g. targets=q_proj+v_proj)")
    for name, layer in chosen:
        parent_name, _, child = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        setattr(parent, child, LoraLinear(layer, spec.rank, spec.alpha))
    return len(chosen)
