"""Device memory of an LLM run, per device: weights, KV cache, activations and a runtime reserve.

* Weights: every parameter at its storage precision (``precision.py``); with tensor parallelism each rank
  holds its share (``parallel.py``: heads, KV heads, intermediate and vocabulary split; norms and the MoE
  router replicated).
* KV cache: 2 (K and V) x layers x KV heads x head_dim x KV bytes per token, for every token the sequences
  will hold; a layer with a sliding window keeps only the window (Mistral's rolling buffer on every layer,
  Gemma-2's on alternate layers). Llama-2-7B in bf16: 2 x 32 x 32 x 128 x 2 = 524,288 bytes per token.
  Multi-head latent attention (DeepSeek-V2/V3) caches its compressed latent and shared rotary key,
  (kv_lora_rank + qk_rope_head_dim) per layer: DeepSeek-V2-Lite 27 x 576 x 2 = 31,104 bytes per token.
* Activations: an estimate of the largest set alive at once in one forward pass: the residual stream and its
  normed copy, plus the larger of the attention block's tensors (q, k, v, rotary temporaries, output) and the
  MLP's (gate, up, activation), plus fp32 logits of the last tokens.
* Reserve: an assumed 1 GB per device for the CUDA context, library workspaces and allocator slack.

Capacity is the catalog's ``memory_gb`` (decimal GB as the vendor states it; for HBM parts the usable
capacity reported by the driver is usually a little larger, e.g. 141 GB H200 shows ~150.7e9 bytes).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, computed_field

from ..catalog import Hardware
from ..roofline.defaults import RUNTIME_MEMORY_BYTES
from ..search import first_true
from ..units import BYTES_PER_ELEMENT
from .config import LLMConfig, attended_tokens, kv_elems_per_token_layer, param_counts
from .parallel import MAX_TP, rank_shape, valid_tp_degrees
from .precision import Precision

MLA_NOTE = ("multi-head latent attention: the KV cache holds the compressed latent and rotary key "
            "(kv_lora_rank + qk_rope_head_dim per layer), as vLLM and SGLang serve it; decode attends in the "
            "absorbed form (transformers' eager code caches the expanded keys and values instead)")
RUNTIME_RESERVE_BYTES = RUNTIME_MEMORY_BYTES.value  # one runtime reserve for models and LLMs
_SEARCH_LIMIT = 1 << 24  # bound of the batch and context bisections (16.8M): past any device's memory


def weight_bytes(cfg: LLMConfig, p: Precision, tp: int = 1) -> float:
    """Bytes of parameters one rank holds: the blocks' linear weights at the weight precision, the rest
    (biases, norms, routers, embeddings, output head) at the activation storage precision."""
    linear, other = param_counts(cfg, rank_shape(cfg, tp))
    return float(linear * p.weight_bytes_per_param + other * p.stream_bytes)


def kv_bytes_per_token(cfg: LLMConfig, p: Precision, tp: int = 1) -> float:
    """KV-cache bytes one token takes on one rank, over all layers (before any sliding window)."""
    rs = rank_shape(cfg, tp)
    return float(cfg.num_layers * kv_elems_per_token_layer(cfg, rs.kv_heads) * p.kv_bytes)


def kv_cache_bytes(cfg: LLMConfig, p: Precision, batch: int, tokens: int, tp: int = 1) -> float:
    """The cache of ``batch`` sequences of ``tokens`` tokens: each layer keeps its window's worth."""
    per_layer = kv_elems_per_token_layer(cfg, rank_shape(cfg, tp).kv_heads) * p.kv_bytes
    kept = sum(attended_tokens(cfg, tokens, i) for i in range(cfg.num_layers))
    return float(batch * kept * per_layer)


def window_caps(cfg: LLMConfig, tokens: int) -> str | None:
    """A note when a sliding window caps the cache (and attention) at ``tokens`` tokens, else None."""
    if not cfg.sliding_window or tokens <= cfg.sliding_window:
        return None
    n, layers = cfg.windowed_layers, cfg.num_layers
    which = "every layer" if n == layers else f"{n} of {layers} layers (the others attend over all tokens)"
    return (f"sliding window of {cfg.sliding_window} tokens on {which}: those layers attend over and cache "
            f"only the last {cfg.sliding_window} tokens")


def activation_bytes(cfg: LLMConfig, p: Precision, batch: int, q_len: int, tp: int = 1) -> float:
    """Estimated peak of live activations in one forward pass of ``batch`` x ``q_len`` tokens."""
    rs = rank_shape(cfg, tp)
    t, h, s = batch * q_len, cfg.hidden_size, p.stream_bytes
    if cfg.is_mla:  # q, the expanded k and v, the output (prefill's expanded form; decode's is smaller)
        qh, v = rs.heads * cfg.head_dim, rs.heads * cfg.v_head_dim
        attn = t * (qh + (qh + v) + 2 * qh + v) * s
    else:
        q_n, kv_n = rs.heads * cfg.head_dim, rs.kv_heads * cfg.head_dim
        attn = t * (q_n + 2 * kv_n + 2 * q_n + q_n) * s
    mlp = 0.0
    if not cfg.is_moe or cfg.dense_layers:
        mlp = t * 3 * rs.intermediate * s
    if cfg.is_moe:
        rows = t * cfg.experts_per_token
        mlp = max(mlp, rows * 3 * rs.moe_intermediate * s + rows * h * s + t * 3 * rs.shared_intermediate * s)
    fp32 = float(BYTES_PER_ELEMENT["fp32"])  # norms' temporaries and the logits are fp32
    norm_tmp = 2 * t * h * fp32
    logits = batch * rs.vocab * fp32
    return float(2 * t * h * s + max(attn, mlp, norm_tmp) + logits)


class MemoryBreakdown(BaseModel):
    """Per device (per rank under tensor parallelism). Bytes."""

    model_config = ConfigDict(frozen=True)

    weights_bytes: float
    kv_cache_bytes: float
    kv_bytes_per_token: float
    activation_bytes: float
    reserve_bytes: float
    capacity_bytes: float

    @computed_field
    @property
    def total_bytes(self) -> float:
        return self.weights_bytes + self.kv_cache_bytes + self.activation_bytes + self.reserve_bytes

    @computed_field
    @property
    def fits(self) -> bool:
        return self.total_bytes <= self.capacity_bytes


def memory_breakdown(cfg: LLMConfig, p: Precision, hw: Hardware, *, batch: int, kv_tokens: int, q_len: int,
                     tp: int = 1) -> MemoryBreakdown:
    """Memory one device needs to hold ``batch`` sequences of ``kv_tokens`` cached tokens, running a pass
    of ``q_len`` new tokens per sequence."""
    return MemoryBreakdown(
        weights_bytes=weight_bytes(cfg, p, tp), kv_cache_bytes=kv_cache_bytes(cfg, p, batch, kv_tokens, tp),
        kv_bytes_per_token=kv_bytes_per_token(cfg, p, tp),
        activation_bytes=activation_bytes(cfg, p, batch, q_len, tp), reserve_bytes=RUNTIME_RESERVE_BYTES,
        capacity_bytes=hw.memory_bytes)


def _largest(fits, hi: int) -> int:
    """Largest n in [1, hi] with fits(n) (fits is monotone decreasing); 0 when fits(1) is false."""
    if not fits(1):
        return 0
    if fits(hi):
        return hi
    return first_true(lambda n: not fits(n), 1, hi) - 1


def max_batch(cfg: LLMConfig, p: Precision, hw: Hardware, *, kv_tokens: int, prefill_len: int,
              tp: int = 1) -> int:
    """Largest batch whose KV cache (kv_tokens per sequence) and prefill activations fit; 0 if none."""
    return _largest(lambda b: memory_breakdown(cfg, p, hw, batch=b, kv_tokens=kv_tokens,
                                               q_len=prefill_len, tp=tp).fits, _SEARCH_LIMIT)


def max_context(cfg: LLMConfig, p: Precision, hw: Hardware, *, batch: int, prefill: bool,
                tp: int = 1) -> int:
    """Largest number of tokens per sequence that fits at this batch (capped at the model's maximum)."""
    limit = cfg.max_position_embeddings or _SEARCH_LIMIT
    return _largest(lambda n: memory_breakdown(cfg, p, hw, batch=batch, kv_tokens=n,
                                               q_len=n if prefill else 1, tp=tp).fits, limit)


def devices_needed(cfg: LLMConfig, p: Precision, hw: Hardware, *, batch: int, kv_tokens: int, q_len: int,
                   max_devices: int = MAX_TP) -> int | None:
    """Fewest tensor-parallel devices (a valid split of the heads) on which each rank fits; None if none."""
    for n in valid_tp_degrees(cfg, max_devices):
        if memory_breakdown(cfg, p, hw, batch=batch, kv_tokens=kv_tokens, q_len=q_len, tp=n).fits:
            return n
    return None
