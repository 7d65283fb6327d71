"""Precisions of an LLM run: weights, activations (what the matrix products compute in) and the KV cache.

Weight-only quantization (int8/int4/fp8 weights with bf16 activations) stores and moves fewer weight bytes
but the matrix products still compute at the activation precision: the weights are dequantized inside the
kernel (Marlin/AWQ/GPTQ style). Only with matching activations (``--act-dtype fp8`` or ``int8``, "W8A8") do
the device's fp8/int8 peaks apply.

Storage: int4 weights carry one fp16 scale per group of 128 (the common GPTQ/AWQ layout), so 0.5 + 2/128
bytes per parameter; int8 and fp8 per-channel scales are negligible. Embeddings, the output head, norms and
the MoE router stay at the activation storage precision (bf16 by default), as in common quantized releases.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InputError
from ..units import BYTES_PER_ELEMENT, parse_precision

WEIGHT_DTYPES: tuple[str, ...] = ("fp32", "bf16", "fp16", "fp8", "int8", "int4")
ACT_DTYPES: tuple[str, ...] = ("fp32", "bf16", "fp16", "fp8", "int8")
KV_DTYPES: tuple[str, ...] = ("fp32", "bf16", "fp16", "fp8", "int8", "int4")
INT4_GROUP_SIZE = 128
_SCALE_BYTES = 2  # one fp16 scale per group


@dataclass(frozen=True)
class Precision:
    weight: str = "bf16"     # storage of the transformer blocks' linear weights
    act: str = "bf16"        # what the matrix products compute in (and their input activations)
    kv: str = "bf16"         # KV cache storage

    @property
    def stream(self) -> str:
        """The residual stream and elementwise ops: the activation dtype, or bf16 under fp8/int8 GEMMs."""
        return self.act if self.act in ("fp32", "fp16", "bf16") else "bf16"

    @property
    def weight_bytes_per_param(self) -> float:
        b = BYTES_PER_ELEMENT[self.weight]
        if self.weight == "int4":
            b += _SCALE_BYTES / INT4_GROUP_SIZE
        return b

    @property
    def act_bytes(self) -> float:
        return BYTES_PER_ELEMENT[self.act]

    @property
    def stream_bytes(self) -> float:
        return BYTES_PER_ELEMENT[self.stream]

    @property
    def kv_bytes(self) -> float:
        return BYTES_PER_ELEMENT[self.kv]

    @property
    def weight_only(self) -> bool:
        return BYTES_PER_ELEMENT[self.weight] < BYTES_PER_ELEMENT[self.act]

    def describe(self) -> str:
        if self.weight_only:
            return (f"weights {self.weight} (weight-only quantization: the matrix products dequantize and "
                    f"compute at {self.act}), KV cache {self.kv}")
        return f"weights {self.weight}, activations {self.act}, KV cache {self.kv}"


def make_precision(weight: str = "bf16", act: str | None = None, kv: str | None = None) -> Precision:
    """Parse and check a combination. act defaults to bf16 (fp32 for fp32 weights); kv to the stream dtype."""
    w = parse_precision(weight, WEIGHT_DTYPES)
    if act is None:
        a = "fp32" if w == "fp32" else ("fp16" if w == "fp16" else "bf16")
    else:
        a = parse_precision(act, ACT_DTYPES)
    if BYTES_PER_ELEMENT[w] > BYTES_PER_ELEMENT[a]:
        raise InputError(f"weights {w} with activations {a}: weights wider than the activations are not a "
                         f"quantization scheme", hint=f"use --weight-dtype {a} or a wider --act-dtype")
    if a in ("fp8", "int8") and w not in (a, "int4"):
        raise InputError(f"activations {a} need weights {a} (W8A8) or int4 (W4A8), got weights {w}")
    p = Precision(weight=w, act=a, kv="bf16")
    k = p.stream if kv is None else parse_precision(kv, KV_DTYPES)
    return Precision(weight=w, act=a, kv=k)
