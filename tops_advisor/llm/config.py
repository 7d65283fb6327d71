"""A decoder-only language model's shape, read from a Hugging Face style ``config.json`` or a preset name.

No ``transformers`` dependency and no download: the standard keys are read directly (Llama/Mistral/Mixtral
names such as ``hidden_size`` and GPT-2 names such as ``n_embd``). The result is a frozen ``LLMConfig``;
every bad input raises ``LLMConfigError`` with one line that names what is wrong.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, computed_field

from ..errors import LLMConfigError

# Model types whose MLP is gated (act(gate(x)) * up(x)); others are plain (act(fc(x))) unless hidden_act is silu.
_GATED_MODEL_TYPES = {"llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "gemma", "gemma2", "phi3",
                      "olmo", "olmo2", "deepseek", "internlm2", "yi", "granite"}
_GPT_MODEL_TYPES = {"gpt2", "gpt3", "gpt_neox", "gptj", "opt", "bloom", "falcon", "gpt_bigcode"}

# Each field: the keys that may hold it, first found wins (Llama style, then GPT-2 style, then others).
_KEYS = {
    "hidden_size": ("hidden_size", "n_embd", "d_model"),
    "num_layers": ("num_hidden_layers", "n_layer", "num_layers"),
    "num_heads": ("num_attention_heads", "n_head", "num_heads"),
    "num_kv_heads": ("num_key_value_heads", "num_kv_heads", "multi_query_group_num"),
    "intermediate_size": ("intermediate_size", "n_inner", "ffn_dim", "ffn_hidden_size"),
    "vocab_size": ("vocab_size", "padded_vocab_size"),
    "max_position_embeddings": ("max_position_embeddings", "n_positions", "n_ctx", "max_sequence_length"),
    "hidden_act": ("hidden_act", "activation_function"),
    "num_experts": ("num_local_experts", "num_experts", "n_routed_experts"),
    "experts_per_token": ("num_experts_per_tok", "moe_top_k", "top_k_experts"),
    "head_dim": ("head_dim",),
}
_REQUIRED = ("hidden_size", "num_layers", "num_heads", "vocab_size")


class LLMConfig(BaseModel):
    """The shape of a decoder-only transformer. Sizes are elements, not bytes. Hashable: workloads built
    from it are cached by it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int           # per expert for a mixture of experts
    vocab_size: int
    hidden_act: str = "silu"
    gated_mlp: bool = True           # act(gate(x)) * up(x) (LLaMA) or act(fc(x)) (GPT)
    tie_word_embeddings: bool = False
    max_position_embeddings: int | None = None
    num_experts: int = 1             # 1 = dense MLP
    experts_per_token: int = 1
    norm: Literal["rmsnorm", "layernorm"] = "rmsnorm"  # LLaMA's RMSNorm, or GPT's LayerNorm (with bias)
    position: Literal["rotary", "learned"] = "rotary"  # rotary, or a learned table added to the input
    attention_bias: bool = False     # biases on q/k/v/o
    mlp_bias: bool = False
    fused_qkv: bool = False          # the reference implementation runs one qkv linear (GPT-2's c_attn)
    sliding_window: int | None = None  # attention span and rolling KV cache (Mistral 7B v0.1: 4096)
    source: str = ""

    # --- derived sizes -------------------------------------------------------------------------------
    @property
    def is_moe(self) -> bool:
        return self.num_experts > 1

    @property
    def q_size(self) -> int:
        return self.num_heads * self.head_dim

    @property
    def kv_size(self) -> int:
        return self.num_kv_heads * self.head_dim

    def attention_params(self) -> int:
        h = self.hidden_size
        n = h * self.q_size + 2 * h * self.kv_size + self.q_size * h
        if self.attention_bias:
            n += self.q_size + 2 * self.kv_size + h
        return n

    def expert_params(self) -> int:
        """One MLP (one expert for a mixture of experts)."""
        h, i = self.hidden_size, self.intermediate_size
        n = (3 if self.gated_mlp else 2) * h * i
        if self.mlp_bias:
            n += (2 if self.gated_mlp else 1) * i + h
        return n

    def norm_params(self) -> int:
        return self.hidden_size * (2 if self.norm == "layernorm" else 1)

    def layer_params(self) -> int:
        router = self.hidden_size * self.num_experts if self.is_moe else 0
        return self.attention_params() + self.num_experts * self.expert_params() + router + 2 * self.norm_params()

    def embedding_params(self) -> int:
        n = self.vocab_size * self.hidden_size
        if self.position == "learned" and self.max_position_embeddings:
            n += self.max_position_embeddings * self.hidden_size
        return n

    def lm_head_params(self) -> int:
        return 0 if self.tie_word_embeddings else self.vocab_size * self.hidden_size

    @computed_field
    @property
    def params(self) -> int:
        """Total parameters (elements), embeddings and output head included."""
        return (self.num_layers * self.layer_params() + self.embedding_params() + self.lm_head_params()
                + self.norm_params())

    @computed_field
    @property
    def active_params(self) -> int:
        """Parameters one token touches (a mixture of experts uses experts_per_token of its experts)."""
        inactive = (self.num_experts - self.experts_per_token) * self.expert_params() if self.is_moe else 0
        return self.params - self.num_layers * inactive


def attended_tokens(cfg: LLMConfig, tokens: int) -> int:
    """Tokens one query attends over (and the cache keeps): all of them, or the sliding window."""
    return min(tokens, cfg.sliding_window) if cfg.sliding_window else tokens


# --- parsing ---------------------------------------------------------------------------------------------
def _first(raw: dict, field: str):
    for key in _KEYS[field]:
        if raw.get(key) is not None:
            return key, raw[key]
    return None, None


def _int(where: str, key: str, value, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or int(value) != value:
        raise LLMConfigError(f"{where}: {key} must be a whole number, got {value!r}")
    if value < minimum:
        raise LLMConfigError(f"{where}: {key} must be at least {minimum}, got {value}")
    return int(value)


def _is_gpt_style(raw: dict) -> bool:
    return "n_embd" in raw or str(raw.get("model_type", "")).lower() in _GPT_MODEL_TYPES


def _check_required(raw: dict, where: str, gpt_style: bool) -> None:
    missing = [_KEYS[f][0] for f in _REQUIRED if _first(raw, f)[0] is None]
    if not gpt_style and _first(raw, "intermediate_size")[0] is None:
        missing.append("intermediate_size")
    if missing:
        raise LLMConfigError(f"{where}: missing required key{'s' if len(missing) > 1 else ''} "
                             f"{', '.join(missing)}",
                             hint="a Hugging Face config.json names them hidden_size, num_hidden_layers, "
                                  "num_attention_heads, intermediate_size, vocab_size")


def _optional_int(raw: dict, where: str, field: str, default):
    key, value = _first(raw, field)
    return default if key is None else _int(where, key, value)


def _sizes(raw: dict, where: str) -> dict:
    """The integer sizes: hidden, layers, heads, KV heads, head_dim, intermediate, vocabulary, positions."""
    vals: dict[str, int | None] = {}
    for field in ("hidden_size", "num_layers", "num_heads", "vocab_size"):
        key, value = _first(raw, field)
        vals[field] = _int(where, key, value)
    h, heads = vals["hidden_size"], vals["num_heads"]
    kv_heads = _optional_int(raw, where, "num_kv_heads", heads)
    if kv_heads > heads or heads % kv_heads:
        raise LLMConfigError(f"{where}: num_attention_heads {heads} is not a multiple of "
                             f"num_key_value_heads {kv_heads}")
    if _first(raw, "head_dim")[0] is None and h % heads:
        raise LLMConfigError(f"{where}: hidden size {h} is not divisible by {heads} attention heads "
                             f"({h} / {heads} = {h / heads:.3g})",
                             hint="hidden_size must be num_attention_heads x head_dim")
    vals["num_kv_heads"] = kv_heads
    vals["head_dim"] = _optional_int(raw, where, "head_dim", h // heads)
    vals["intermediate_size"] = _optional_int(raw, where, "intermediate_size", 4 * h)
    vals["max_position_embeddings"] = _optional_int(raw, where, "max_position_embeddings", None)
    return vals


def _mlp(raw: dict, gpt_style: bool) -> dict:
    """The activation and whether the MLP is gated (by model type, else GPT style, else by activation)."""
    model_type = str(raw.get("model_type", "gpt2" if gpt_style else "")).lower()
    act = str(_first(raw, "hidden_act")[1] or ("gelu" if gpt_style else "silu")).lower()
    if model_type in _GATED_MODEL_TYPES:
        gated = True
    elif gpt_style:
        gated = False
    else:
        gated = act in ("silu", "swish", "swiglu")
    return {"hidden_act": act, "gated_mlp": gated}


def _experts(raw: dict, where: str) -> dict:
    experts = _optional_int(raw, where, "num_experts", 1)
    per_tok = _optional_int(raw, where, "experts_per_token", 2 if experts > 1 else 1)
    if experts > 1 and per_tok > experts:
        raise LLMConfigError(f"{where}: num_experts_per_tok {per_tok} exceeds the {experts} experts")
    return {"num_experts": experts, "experts_per_token": per_tok if experts > 1 else 1}


def _options(raw: dict, where: str, gpt_style: bool) -> dict:
    """Sliding window, tied embeddings, biases, and the GPT-style layout (LayerNorm, learned positions)."""
    window = None if raw.get("use_sliding_window") is False else raw.get("sliding_window")
    tie = raw.get("tie_word_embeddings", gpt_style)
    if not isinstance(tie, bool):
        raise LLMConfigError(f"{where}: tie_word_embeddings must be true or false, got {tie!r}")
    return {"sliding_window": None if window is None else _int(where, "sliding_window", window),
            "tie_word_embeddings": tie, "attention_bias": bool(raw.get("attention_bias", gpt_style)),
            "mlp_bias": bool(raw.get("mlp_bias", gpt_style)), "norm": "layernorm" if gpt_style else "rmsnorm",
            "position": "learned" if gpt_style else "rotary", "fused_qkv": gpt_style}


def config_from_dict(raw: dict, name: str = "model", source: str = "") -> LLMConfig:
    """Validate a Hugging Face style config dict into an LLMConfig (one LLMConfigError line per problem)."""
    where = source or name
    if not isinstance(raw, dict):
        raise LLMConfigError(f"{where}: a config must be a JSON object, got {type(raw).__name__}")
    gpt_style = _is_gpt_style(raw)
    _check_required(raw, where, gpt_style)
    return LLMConfig(name=str(raw.get("_name_or_path") or name), **_sizes(raw, where), **_mlp(raw, gpt_style),
                     **_experts(raw, where), **_options(raw, where, gpt_style), source=source or name)
