"""What one training step runs: the precision, the optimizer, gradient checkpointing and LoRA adapters, parsed
from the names people type (one clear error line for anything else)."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InputError
from ..suggest import did_you_mean

# Training precisions, as PyTorch users run them:
#   fp32      fp32 weights and compute, PyTorch's defaults (TF32 off for matmuls, on for cuDNN convolutions)
#   tf32      fp32 weights, TF32 for matmuls and convolutions (torch.backends.cuda.matmul.allow_tf32)
#   bf16      weights, gradients and optimizer state in bf16 (model.to(torch.bfloat16))
#   amp       fp32 weights, torch.autocast fp16, torch.amp.GradScaler (a found-inf check and a host sync)
#   amp-bf16  fp32 weights, torch.autocast bf16, no scaler
TRAIN_PRECISIONS: tuple[str, ...] = ("fp32", "tf32", "bf16", "amp", "amp-bf16")
_PRECISION_ALIASES = {"float32": "fp32", "float": "fp32", "bfloat16": "bf16", "amp-fp16": "amp", "fp16-amp": "amp",
                      "mixed": "amp", "amp_bf16": "amp-bf16", "bf16-amp": "amp-bf16", "autocast": "amp"}

# Optimizers: torch.optim's AdamW / Adam (foreach: PyTorch's default on CUDA), its fused AdamW, SGD with
# momentum (foreach), and bitsandbytes' 8-bit AdamW (blockwise-quantised moments, one fused kernel per tensor).
OPTIMIZERS: tuple[str, ...] = ("adamw", "adam", "sgd", "adamw-fused", "adamw-8bit")
_OPTIMIZER_ALIASES = {"fused-adamw": "adamw-fused", "adamw_fused": "adamw-fused", "adamw8bit": "adamw-8bit",
                      "adamw_8bit": "adamw-8bit", "8bit-adamw": "adamw-8bit", "bnb-adamw": "adamw-8bit"}


@dataclass(frozen=True)
class LoraSpec:
    """LoRA adapters (Hu et al., 2021): each targeted linear layer frozen and given a trainable low-rank
    update B @ A of rank ``rank``; ``targets`` are substrings of module names (empty: every linear layer of
    the body, the output head excepted)."""

    rank: int
    alpha: float = 0.0
    targets: tuple[str, ...] = ()

    def describe(self) -> str:
        on = ", ".join(self.targets) if self.targets else "every linear layer but the head"
        return f"LoRA r={self.rank} on {on}"


@dataclass(frozen=True)
class TrainSetup:
    """One optimizer step's setup."""

    precision: str = "fp32"
    optimizer: str = "adamw"
    checkpointing: bool = False
    lora: LoraSpec | None = None
    channels_last: bool = False   # model and batch in channels-last (NHWC) memory format

    @property
    def autocast(self) -> bool:
        return self.precision in ("amp", "amp-bf16")

    @property
    def grad_scaler(self) -> bool:
        return self.precision == "amp"

    def describe(self) -> str:
        parts = [self.precision, self.optimizer]
        if self.checkpointing:
            parts.append("gradient checkpointing")
        if self.lora is not None:
            parts.append(self.lora.describe())
        if self.channels_last:
            parts.append("channels-last")
        return ", ".join(parts)


def _parse_name(text: str, allowed: tuple[str, ...], aliases: dict[str, str], what: str) -> str:
    key = str(text).strip().lower()
    key = aliases.get(key, key)
    if key not in allowed:
        raise InputError(f"unknown {what} {text!r}; expected one of {', '.join(allowed)}",
                         hint=did_you_mean(str(text), allowed))
    return key


def parse_train_precision(text: str) -> str:
    """'amp', 'AMP-BF16', 'bfloat16' -> a name of TRAIN_PRECISIONS."""
    return _parse_name(text, TRAIN_PRECISIONS, _PRECISION_ALIASES, "training precision")


def parse_optimizer(text: str) -> str:
    """'adamw', 'AdamW-fused', 'adamw8bit' -> a name of OPTIMIZERS."""
    return _parse_name(text, OPTIMIZERS, _OPTIMIZER_ALIASES, "optimizer")


def parse_lora(text: str) -> LoraSpec:
    """'r=16', '16', 'r=16,alpha=32,targets=q_proj+v_proj' -> LoraSpec."""
    example = "expected --lora r=16 (optionally alpha=32,targets=q_proj+v_proj)"
    fields: dict[str, str] = {}
    for part in str(text).split(","):
        key, sep, value = part.partition("=")
        key, value = (key.strip().lower(), value.strip()) if sep else ("r", key.strip())
        fields[key] = value
    unknown = set(fields) - {"r", "rank", "alpha", "targets"}
    if unknown:
        raise InputError(f"--lora {text!r}: unknown key {sorted(unknown)[0]!r}; {example}")
    try:
        rank = int(fields.get("r", fields.get("rank", "")))
        alpha = float(fields.get("alpha", 2 * rank))
    except ValueError:
        raise InputError(f"--lora {text!r}: the rank must be a whole number; {example}") from None
    if rank <= 0 or alpha <= 0:
        raise InputError(f"--lora {text!r}: rank and alpha must be positive; {example}")
    targets = tuple(t for t in fields.get("targets", "").split("+") if t)
    return LoraSpec(rank, alpha, targets)
