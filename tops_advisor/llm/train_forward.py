"""The forward pass of a training step built from an LLM config: the analytic builder's prefill
(``builder.py``, plain PyTorch as Hugging Face's code runs it) as a training step runs it. No KV cache is
written; the output head runs on every token (the loss reads every logit); LoRA adapters run beside the
linear layers they target; under autocast every matrix product first casts its fp32 input and weight.

Autocast (``amp``, ``amp-bf16``: fp32 weights, ``torch.autocast``): the residual stream and the norms stay in
fp32, the matrix products, attention and the MLP's activation run at 16 bits. Each product casts its input
unless the input is already a 16-bit product's output (``o_proj``'s, ``down_proj``'s), and casts its weight
once per forward (autocast caches the cast of a weight that requires grad; a frozen weight is cast at each
use, which is once here too). Attention casts its rotated q and k (fp32: q times the fp32 cos table)."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InputError
from ..kinds import Phase
from ..train import LoraSpec, TrainSetup
from ..workload import OpRecord
from .builder import _Builder
from .config import LLMConfig
from .precision import Precision

CAST = "aten._to_copy"
# Linear layers whose input is a 16-bit product under autocast (attention's output, the gated product)
LOWER_INPUT = ("o_proj", "down_proj", "fc_out")


@dataclass(frozen=True)
class TrainPrecision:
    """Where each tensor of a training step lives, by precision (train.setup.TRAIN_PRECISIONS)."""

    name: str
    param_bytes: float        # parameters, their gradients and the optimizer state
    stream_bytes: float       # the residual stream and the norms
    lower_bytes: float        # matrix products' inputs and outputs, attention, the MLP's activation
    matmul_dtype: str         # what the matrix products compute in
    builder: Precision        # the builder's precision for the 16-bit (or fp32) parts

    @property
    def autocast(self) -> bool:
        return self.name in ("amp", "amp-bf16")

    @property
    def stream_dtype(self) -> str:
        return "fp32" if self.stream_bytes == 4 else self.builder.stream


_FP32 = Precision("fp32", "fp32", "fp32")
TRAIN_PRECISION = {
    "fp32": TrainPrecision("fp32", 4, 4, 4, "fp32", _FP32),
    "tf32": TrainPrecision("tf32", 4, 4, 4, "tf32", _FP32),
    "bf16": TrainPrecision("bf16", 2, 2, 2, "bf16", Precision("bf16", "bf16", "bf16")),
    "amp": TrainPrecision("amp", 4, 4, 2, "fp16", Precision("fp16", "fp16", "fp16")),
    "amp-bf16": TrainPrecision("amp-bf16", 4, 4, 2, "bf16", Precision("bf16", "bf16", "bf16")),
}


def lora_targets(module: str, lora: LoraSpec | None) -> bool:
    """Whether LoRA adapts the linear layer at ``module`` (counting/training/lora.py's rule: a target is a
    substring of the module path; no targets: every linear layer of the attention and MLP blocks)."""
    if lora is None:
        return False
    if lora.targets:
        return any(t in module for t in lora.targets)
    return module != "lm_head"


class TrainingForward(_Builder):
    """The builder's prefill of ``seq`` tokens as a training step's forward (or, with ``phase`` backward,
    the recompute of a checkpointed layer)."""

    def __init__(self, cfg: LLMConfig, tp: TrainPrecision, setup: TrainSetup, batch: int, seq: int,
                 phase: Phase = Phase.FORWARD):
        super().__init__(cfg, cfg.full_shape(), tp.builder, "prefill", batch, seq, "torch")
        self.tp, self.lora, self.phase_tag = tp, setup.lora, phase
        self.s = tp.stream_bytes
        self._lower = not tp.autocast         # outside autocast every part runs at the one precision

    # --- where the precision changes under autocast --------------------------------------------------
    def add(self, **kw) -> None:
        kw.setdefault("dtype", self.tp.builder.stream if self._lower else self.tp.stream_dtype)
        kw.setdefault("phase", self.phase_tag)
        super().add(**kw)

    def _at_lower(self, emit) -> None:
        saved = (self.s, self._lower)
        self.s, self._lower = self.tp.lower_bytes, True
        try:
            emit()
        finally:
            self.s, self._lower = saved

    def cast(self, module: str, elems: float) -> None:
        """autocast's fp32 -> 16-bit copy of ``elems`` elements."""
        self.add(name=CAST, kind="elementwise", module=module, flops=0.0, bytes_read=4.0 * elems,
                 bytes_written=self.tp.lower_bytes * elems, dtype=self.tp.stream_dtype)

    # --- the builder's primitives, as a training step runs them -------------------------------------
    def linear(self, name: str, module: str, m: int, n: int, k: int, bias: bool = False,
               weight_bytes: float | None = None, kernels: int = 1, gemm_batch: int = 1,
               weight_count: float | None = None, flops_m: float | None = None) -> None:
        if gemm_batch != 1 or weight_count is not None or flops_m is not None:
            raise InputError("training from a config covers dense decoders (no mixture of experts, no "
                             "absorbed attention)")
        adapted = lora_targets(module, self.lora)
        if self.tp.autocast:
            if name not in LOWER_INPUT:
                self.cast(module, m * k)
            self.cast(module, n * k)
        self._at_lower(lambda: super(TrainingForward, self).linear(name, module, m, n, k, bias=bias,
                                                                    kernels=kernels))
        if adapted:
            self._at_lower(lambda: self._adapter(name, module, m, n, k))

    def _adapter(self, name: str, module: str, m: int, n: int, k: int) -> None:
        """peft's LoRA: base(x) + lora_B(lora_A(x)) * alpha / r (dropout 0: no operator)."""
        r = self.lora.rank
        if self.tp.autocast:   # A's own cast of x (unless x is a 16-bit product), and the adapters' weights
            for elems in ((m * k,) if name not in LOWER_INPUT else ()) + (r * k, n * r):
                self.cast(f"{module}.lora_A", elems)
        _Builder.linear(self, f"{name}.lora_A", f"{module}.lora_A", m, r, k)
        _Builder.linear(self, f"{name}.lora_B", f"{module}.lora_B", m, n, r)
        self.elementwise("lora_scale", f"{module}.lora", m * n, 1, 1, 1)
        self.elementwise("lora_add", f"{module}.lora", m * n, 2, 1, 1)

    def attention(self, mod: str, i: int, kv_heads: int, d_qk: int, d_v: int, kv_elems: int,
                  fresh: bool = False) -> None:
        if self.tp.autocast:   # the rotated q and k are fp32 (fp16 products times fp32 tables)
            self.cast(f"{mod}.self_attn.attn", self.t * self.rs.heads * d_qk)
            self.cast(f"{mod}.self_attn.attn", self.t * kv_heads * d_qk)
        self._at_lower(lambda: super(TrainingForward, self).attention(mod, i, kv_heads, d_qk, d_v, kv_elems,
                                                                       fresh))

    def mlp(self, mod: str, inter: int, where: str = "mlp") -> None:
        self._at_lower(lambda: super(TrainingForward, self).mlp(mod, inter, where))

    def norm(self, name: str, module: str, rows: float, width: int | None = None) -> None:
        start = len(self.ops)
        super().norm(name, module, rows, width)
        if self.s == 4:   # an fp32 stream: LlamaRMSNorm's two casts return their input, no kernel
            self.ops[start:] = [op for op in self.ops[start:] if not op.name.endswith((".to_fp32", ".to_dtype"))]

    def cache_write(self, mod: str, parts: tuple[str, ...], elems_per_part: float) -> None:
        """A training step keeps no KV cache."""

    def head(self) -> None:
        """The final norm and the output head over every token (the loss needs every logit)."""
        self.norm("norm", "norm", self.t)
        self.linear("lm_head", "lm_head", self.t, self.rs.vocab, self.cfg.hidden_size)


def check_trainable(cfg: LLMConfig) -> None:
    """Training from a config covers dense decoders; anything else gets one line."""
    if cfg.is_moe or cfg.is_mla:
        what = "a mixture of experts" if cfg.is_moe else "multi-head latent attention"
        raise InputError(f"{cfg.name}: training from a config covers dense decoders, not {what}",
                         hint="count the model itself: tops-advisor train hf:path/to/config.json")


def forward_ops(cfg: LLMConfig, tp: TrainPrecision, setup: TrainSetup, batch: int, seq: int) -> list[OpRecord]:
    """The forward of one step: embedding, every layer, the final norm and the head (the loss is added by
    the caller)."""
    b = TrainingForward(cfg, tp, setup, batch, seq)
    b.embed()
    for i in range(cfg.num_layers):
        b.layer(i)
    b.head()
    return b.ops


# Operators that save nothing for the backward (a residual add, a scalar add or scale, a cast, a mean, a
# negation, a cat): the recompute of a checkpointed layer ends before the last operator that saves something.
SAVES_NOTHING = ("residual_add", "add_eps", "mean", "to_fp32", "to_dtype", "neg", "cat", "lora_add", "lora_scale")


def recompute_ops(cfg: LLMConfig, tp: TrainPrecision, setup: TrainSetup, batch: int, seq: int,
                  layer: int) -> list[OpRecord]:
    """Gradient checkpointing's recompute of one decoder layer, in the backward. torch.utils.checkpoint
    (non-reentrant) stops recomputing as soon as the last tensor the backward needs is saved again, which
    autograd does before that operator runs: the layer's last saving operator (its output projection, or
    that layer's LoRA B) and what follows it are not run again."""
    b = TrainingForward(cfg, tp, setup, batch, seq, phase=Phase.BACKWARD)
    b.layer(layer)
    ops = b.ops
    last = len(ops) - 1
    while last >= 0 and (ops[last].name == CAST or ops[last].name.rsplit(".", 1)[-1] in SAVES_NOTHING):
        last -= 1
    return ops[:max(last, 0)]
