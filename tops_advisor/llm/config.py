"""A decoder-only language model's shape, read from a Hugging Face ``config.json`` or a preset name.

The file is read the way its authors define it (``families.py``): completed by its transformers config class
when transformers is installed, else by a tested table of the same class defaults. Then the keys are read into
a frozen ``LLMConfig``: sizes (Llama/Mistral names such as ``hidden_size`` and GPT-2 names such as ``n_embd``),
mixtures of experts (routed experts of their own size, shared experts, dense-first layers), multi-head latent
attention (DeepSeek-V2/V3), per-layer attention (sliding windows on all or on alternate layers), tied
embeddings and biases. A key that may change cost but is not modelled becomes a warning carried with the
config (``LLMConfig.warnings``); every bad input raises ``LLMConfigError`` with one line that names it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, computed_field

from .. import opcosts
from ..errors import LLMConfigError
from . import families as F

# Model types whose MLP is gated (act(gate(x)) * up(x)); others are plain (act(fc(x))) unless hidden_act is silu.
_GATED_MODEL_TYPES = {"llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "gemma", "gemma2",
                      "gemma3_text", "phi3", "olmo", "olmo2", "deepseek", "deepseek_v2", "deepseek_v3",
                      "internlm2", "yi", "granite"}
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
    "hidden_act": ("hidden_activation", "hidden_act", "activation_function"),
    "num_experts": ("num_local_experts", "num_experts", "n_routed_experts"),
    "experts_per_token": ("num_experts_per_tok", "moe_top_k", "top_k_experts"),
    "head_dim": ("head_dim",),
}
_REQUIRED = ("hidden_size", "num_layers", "num_heads", "vocab_size")
# Every other key this parser reads; a key neither here, in _KEYS nor in families.IGNORABLE_KEYS warns
# (except private keys, named with a leading underscore: "_comment", transformers' "_attn_implementation").
_READ_KEYS = frozenset({
    "tie_word_embeddings", "attention_bias", "mlp_bias", "qkv_bias", "sliding_window", "use_sliding_window",
    "max_window_layers", "layer_types", "sliding_window_pattern", "_sliding_window_pattern",
    "moe_intermediate_size", "n_shared_experts", "shared_expert_intermediate_size", "first_k_dense_replace",
    "moe_layer_freq", "decoder_sparse_step", "mlp_only_layers", "kv_lora_rank", "q_lora_rank",
    "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim", "qk_head_dim", "is_encoder_decoder",
}) | {k for keys in _KEYS.values() for k in keys}


@dataclass(frozen=True)
class RankShape:
    """What one of ``tp`` tensor-parallel ranks holds (tp=1: the whole model)."""

    tp: int
    heads: int
    kv_heads: int
    intermediate: int          # dense MLP
    moe_intermediate: int      # each routed expert
    shared_intermediate: int   # the shared experts together
    vocab: int


class LLMConfig(BaseModel):
    """The shape of a decoder-only transformer. Sizes are elements, not bytes. Hashable: workloads built
    from it are cached by it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    model_type: str = ""
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int                    # query/key head size (MLA: qk_nope_head_dim + qk_rope_head_dim)
    intermediate_size: int           # the dense MLP's
    vocab_size: int
    hidden_act: str = "silu"
    gated_mlp: bool = True           # act(gate(x)) * up(x) (LLaMA) or act(fc(x)) (GPT)
    tie_word_embeddings: bool = False
    max_position_embeddings: int | None = None
    # mixture of experts
    num_experts: int = 1             # routed experts; 1 = dense MLP
    experts_per_token: int = 1
    moe_intermediate_size: int = 0   # each routed expert's; 0 = intermediate_size (Mixtral)
    shared_intermediate_size: int = 0  # the always-on shared experts together (DeepSeek, Qwen2-MoE)
    shared_expert_gate: bool = False   # Qwen2-MoE: sigmoid(x @ w) scales the shared expert (hidden x 1)
    dense_layers: tuple[int, ...] = ()  # layers of a mixture of experts that run the dense MLP instead
    # multi-head latent attention (DeepSeek-V2/V3); kv_lora_rank 0 = ordinary attention
    kv_lora_rank: int = 0
    q_lora_rank: int = 0             # 0 = queries are not compressed
    qk_rope_head_dim: int = 0
    v_head_dim: int = 0
    norm: Literal["rmsnorm", "layernorm"] = "rmsnorm"  # LLaMA's RMSNorm, or GPT's LayerNorm (with bias)
    norms_per_layer: int = 2         # Gemma-2/3: 4 (post-attention and pre/post-feedforward)
    qk_norm: bool = False            # RMSNorm over head_dim on q and k (Qwen3, Gemma-3)
    position: Literal["rotary", "learned"] = "rotary"  # rotary, or a learned table added to the input
    qkv_bias: bool = False           # biases on q/k/v (MLA: on q_a and kv_a)
    o_bias: bool = False             # bias on the output projection
    mlp_bias: bool = False
    fused_qkv: bool = False          # the reference implementation runs one qkv linear (GPT-2's c_attn)
    sliding_window: int | None = None  # attention span and rolling KV cache of the windowed layers
    full_attention_layers: tuple[int, ...] = ()  # layers the window does not apply to (Gemma-2: odd ones)
    warnings: tuple[str, ...] = ()   # keys that may change cost but are not modelled
    source: str = ""

    # --- structure ---------------------------------------------------------------------------------------
    @property
    def is_moe(self) -> bool:
        return self.num_experts > 1

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank > 0

    @property
    def routed_intermediate(self) -> int:
        return self.moe_intermediate_size or self.intermediate_size

    def is_moe_layer(self, layer: int) -> bool:
        return self.is_moe and layer not in self.dense_layers

    @property
    def moe_layer_count(self) -> int:
        return sum(self.is_moe_layer(i) for i in range(self.num_layers)) if self.is_moe else 0

    def window(self, layer: int) -> int | None:
        """The sliding window of ``layer``, or None where it attends over everything."""
        return None if not self.sliding_window or layer in self.full_attention_layers else self.sliding_window

    @property
    def windowed_layers(self) -> int:
        return sum(self.window(i) is not None for i in range(self.num_layers))

    @property
    def q_size(self) -> int:
        return self.num_heads * self.head_dim

    @property
    def kv_size(self) -> int:
        return self.num_kv_heads * self.head_dim

    def full_shape(self) -> RankShape:
        return RankShape(1, self.num_heads, self.num_kv_heads, self.intermediate_size, self.routed_intermediate,
                         self.shared_intermediate_size, self.vocab_size)

    # --- parameters (elements) ---------------------------------------------------------------------------
    def expert_params(self) -> int:
        """One routed expert's MLP (the dense MLP for a dense model)."""
        return sum(mlp_params(self, self.routed_intermediate if self.is_moe else self.intermediate_size))

    def norm_params(self) -> int:
        return self.hidden_size * (2 if self.norm == "layernorm" else 1)

    @computed_field
    @property
    def params(self) -> int:
        """Total parameters (elements), embeddings and output head included."""
        linear, other = param_counts(self, self.full_shape())
        return round(linear + other)

    @computed_field
    @property
    def active_params(self) -> int:
        """Parameters one token touches (a mixture of experts uses experts_per_token of its routed experts)."""
        idle = (self.num_experts - self.experts_per_token) * self.expert_params() if self.is_moe else 0
        return self.params - self.moe_layer_count * idle


# --- parameters per rank: (linear weights, everything else) --------------------------------------------------
def mlp_params(cfg: LLMConfig, inter: int) -> tuple[int, int]:
    """One MLP of width ``inter``: (weights, biases)."""
    h = cfg.hidden_size
    weights = (3 if cfg.gated_mlp else 2) * h * inter
    return weights, ((2 if cfg.gated_mlp else 1) * inter + h) if cfg.mlp_bias else 0


def attention_params(cfg: LLMConfig, rs: RankShape) -> tuple[int, int]:
    """One layer's attention on one rank: (linear weights, biases and norms)."""
    h = cfg.hidden_size
    if cfg.is_mla:
        return _mla_params(cfg, rs)
    q_n, kv_n = rs.heads * cfg.head_dim, rs.kv_heads * cfg.head_dim
    other = (q_n + 2 * kv_n if cfg.qkv_bias else 0) + (h if cfg.o_bias else 0)
    return 2 * h * q_n + 2 * h * kv_n, other + (2 * cfg.head_dim if cfg.qk_norm else 0)


def _mla_params(cfg: LLMConfig, rs: RankShape) -> tuple[int, int]:
    """DeepSeek's attention (transformers' DeepseekV2Attention): q_a (replicated) and q_b, or q_proj;
    kv_a_proj_with_mqa (replicated) to the latent and the shared rotary key; kv_b to every head's
    non-rotary key and value; o_proj. ``attention_bias`` biases q_a, kv_a and o only."""
    h, qh, heads = cfg.hidden_size, cfg.head_dim, rs.heads
    latent = cfg.kv_lora_rank + cfg.qk_rope_head_dim
    nope = cfg.head_dim - cfg.qk_rope_head_dim
    q_lin = h * cfg.q_lora_rank + cfg.q_lora_rank * heads * qh if cfg.q_lora_rank else h * heads * qh
    linear = q_lin + h * latent + cfg.kv_lora_rank * heads * (nope + cfg.v_head_dim) + heads * cfg.v_head_dim * h
    other = cfg.q_lora_rank + cfg.kv_lora_rank  # q_a_layernorm, kv_a_layernorm
    if cfg.qkv_bias:
        other += cfg.q_lora_rank + latent
    return linear, other + (h if cfg.o_bias else 0)


def layer_params(cfg: LLMConfig, rs: RankShape, layer: int) -> tuple[int, int]:
    """Layer ``layer`` on one rank: (linear weights, everything else)."""
    linear, other = attention_params(cfg, rs)
    if cfg.is_moe_layer(layer):
        w, b = mlp_params(cfg, rs.moe_intermediate)
        linear, other = linear + cfg.num_experts * w, other + cfg.num_experts * b
        other += cfg.hidden_size * cfg.num_experts  # router (replicated)
        if rs.shared_intermediate:
            w, b = mlp_params(cfg, rs.shared_intermediate)
            linear, other = linear + w, other + b + (cfg.hidden_size if cfg.shared_expert_gate else 0)
    else:
        w, b = mlp_params(cfg, rs.intermediate)
        linear, other = linear + w, other + b
    return linear, other + cfg.norms_per_layer * cfg.norm_params()


def param_counts(cfg: LLMConfig, rs: RankShape) -> tuple[int, int]:
    """The parameters one rank holds: (the transformer blocks' linear weights, everything else: biases,
    norms, routers, embeddings and the output head). The first is what weight quantization shrinks."""
    linear = other = 0
    for i in range(cfg.num_layers):
        lin, oth = layer_params(cfg, rs, i)
        linear, other = linear + lin, other + oth
    h = cfg.hidden_size
    other += rs.vocab * h + cfg.norm_params()  # embedding and final norm
    if cfg.position == "learned" and cfg.max_position_embeddings:
        other += cfg.max_position_embeddings * h
    if not cfg.tie_word_embeddings:
        other += rs.vocab * h
    return linear, other


# --- the KV cache -----------------------------------------------------------------------------------------
def kv_elems_per_token_layer(cfg: LLMConfig, kv_heads: int) -> int:
    """Elements one token adds to one layer's cache on a rank holding ``kv_heads`` KV heads. MLA caches its
    compressed latent and the shared rotary key (kv_lora_rank + qk_rope_head_dim), as vLLM and SGLang serve
    DeepSeek and as the DeepSeek-V2 paper (section 2.1.2) counts it; every rank keeps the whole latent."""
    if cfg.is_mla:
        return cfg.kv_lora_rank + cfg.qk_rope_head_dim
    return 2 * kv_heads * cfg.head_dim


def attended_tokens(cfg: LLMConfig, tokens: int, layer: int) -> int:
    """Tokens one query of ``layer`` attends over (and its cache keeps): all of them, or the window."""
    w = cfg.window(layer)
    return min(tokens, w) if w else tokens


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


def _opt_int(d: dict, where: str, key: str, default: int = 0, minimum: int = 0) -> int:
    return default if d.get(key) is None else _int(where, key, d[key], minimum)


def _is_gpt_style(raw: dict) -> bool:
    return "n_embd" in raw or str(raw.get("model_type", "")).lower() in _GPT_MODEL_TYPES


def _check_required(raw: dict, where: str, gpt_style: bool, nested: bool = False) -> None:
    missing = [_KEYS[f][0] for f in _REQUIRED if _first(raw, f)[0] is None]
    if not gpt_style and _first(raw, "intermediate_size")[0] is None:
        missing.append("intermediate_size")
    if missing:
        raise LLMConfigError(f"{where}: missing required key{'s' if len(missing) > 1 else ''} "
                             f"{', '.join(missing)}" + (" in its text_config" if nested else ""),
                             hint="its text_config leaves them to the model's class: install transformers (the "
                                  "[models] extra) to read them" if nested else
                                  "a Hugging Face config.json names them hidden_size, num_hidden_layers, "
                                  "num_attention_heads, intermediate_size, vocab_size")
    for field in _REQUIRED:  # validated before any config class sees them
        key, value = _first(raw, field)
        _int(where, key, value)


def _optional_int(raw: dict, where: str, field: str, default):
    key, value = _first(raw, field)
    return default if key is None else _int(where, key, value)


def _sizes(d: dict, where: str, given=()) -> dict:
    """The integer sizes: hidden, layers, heads, KV heads, head_dim, intermediate, vocabulary, positions.
    ``given``: the keys the file itself holds (an error says when a size is its class's default)."""
    vals: dict[str, int | None] = {}
    for field in ("hidden_size", "num_layers", "num_heads", "vocab_size"):
        key, value = _first(d, field)
        vals[field] = _int(where, key, value)
    h, heads = vals["hidden_size"], vals["num_heads"]
    kv_heads = _optional_int(d, where, "num_kv_heads", heads)
    if kv_heads > heads or heads % kv_heads:
        default = "" if _first(d, "num_kv_heads")[0] in given else " (not in the file: its class's default)"
        raise LLMConfigError(f"{where}: num_attention_heads {heads} is not a multiple of "
                             f"num_key_value_heads {kv_heads}{default}")
    if _first(d, "head_dim")[0] is None and h % heads and not d.get("kv_lora_rank"):
        raise LLMConfigError(f"{where}: hidden size {h} is not divisible by {heads} attention heads "
                             f"({h} / {heads} = {h / heads:.3g})",
                             hint="hidden_size must be num_attention_heads x head_dim")
    vals["num_kv_heads"] = kv_heads
    vals["head_dim"] = _optional_int(d, where, "head_dim", h // heads)
    vals["intermediate_size"] = _optional_int(d, where, "intermediate_size", 4 * h)
    vals["max_position_embeddings"] = _optional_int(d, where, "max_position_embeddings", None)
    return vals


def _mla(d: dict, where: str) -> dict:
    """Multi-head latent attention sizes; head_dim becomes the query/key head (nope + rope)."""
    if not d.get("kv_lora_rank"):
        return {}
    rope = _opt_int(d, where, "qk_rope_head_dim", minimum=1)
    nope = _opt_int(d, where, "qk_nope_head_dim", minimum=1)
    return {"kv_lora_rank": _int(where, "kv_lora_rank", d["kv_lora_rank"]),
            "q_lora_rank": _opt_int(d, where, "q_lora_rank"), "qk_rope_head_dim": rope,
            "v_head_dim": _opt_int(d, where, "v_head_dim", minimum=1), "head_dim": nope + rope}


def _mlp(d: dict, gpt_style: bool, model_type: str) -> dict:
    """The activation and whether the MLP is gated (by model type, else GPT style, else by activation)."""
    act = str(_first(d, "hidden_act")[1] or ("gelu" if gpt_style else "silu")).lower()
    if model_type in _GATED_MODEL_TYPES:
        gated = True
    elif gpt_style:
        gated = False
    else:
        gated = act in ("silu", "swish", "swiglu")
    return {"hidden_act": act, "gated_mlp": gated}


def _experts(d: dict, where: str, model_type: str, layers: int) -> dict:
    """Routed experts (their number, size and top-k), the shared experts, and which layers stay dense."""
    experts = _optional_int(d, where, "num_experts", 1)
    if experts <= 1:
        return {"num_experts": 1, "experts_per_token": 1}
    per_tok = _optional_int(d, where, "experts_per_token", 2)
    if per_tok > experts:
        raise LLMConfigError(f"{where}: num_experts_per_tok {per_tok} exceeds the {experts} experts")
    moe_inter = _opt_int(d, where, "moe_intermediate_size")
    if d.get("shared_expert_intermediate_size"):  # Qwen2-MoE: one gated shared expert of its own size
        shared = _int(where, "shared_expert_intermediate_size", d["shared_expert_intermediate_size"])
    else:  # DeepSeek: n_shared_experts experts of moe_intermediate_size, run as one MLP
        shared = _opt_int(d, where, "n_shared_experts") * moe_inter
    dense = F.dense_layers(d, model_type, layers)
    if len(dense) == layers:
        raise LLMConfigError(f"{where}: no layer runs the experts (first_k_dense_replace / mlp_only_layers "
                             f"cover all {layers} layers)")
    return {"num_experts": experts, "experts_per_token": per_tok, "moe_intermediate_size": moe_inter,
            "shared_intermediate_size": shared, "dense_layers": dense,
            "shared_expert_gate": model_type == "qwen2_moe" and shared > 0}


def _attention_options(d: dict, where: str, model_type: str, layers: int, gpt_style: bool) -> dict:
    """Biases, per-head q/k norms and the sliding window with the layers it spares."""
    window = None if d.get("use_sliding_window") is False else d.get("sliding_window")
    window = _int(where, "sliding_window", window) if window else None
    full = F.full_attention_layers(d, model_type, layers) if window else None
    if full is None or len(full) == layers:
        window, full = None, ()
    bias = bool(d.get("attention_bias", gpt_style))
    qkv_bias = bool(d.get("qkv_bias", bias)) or model_type in F.QKV_BIAS_ALWAYS
    return {"sliding_window": window, "full_attention_layers": full, "qkv_bias": qkv_bias,
            "o_bias": bias and "qkv_bias" not in d, "qk_norm": model_type in F.QK_NORM_FAMILIES,
            "norms_per_layer": 4 if model_type in F.FOUR_NORM_FAMILIES else 2}


def _options(d: dict, where: str, gpt_style: bool, model_type: str = "") -> dict:
    """Tied embeddings, the MLP bias, and the GPT-style layout (LayerNorm, learned positions, fused qkv; Phi-3
    also runs one qkv_proj)."""
    tie = d.get("tie_word_embeddings", gpt_style)
    if not isinstance(tie, bool):
        raise LLMConfigError(f"{where}: tie_word_embeddings must be true or false, got {tie!r}")
    return {"tie_word_embeddings": tie, "mlp_bias": bool(d.get("mlp_bias", gpt_style)),
            "norm": "layernorm" if gpt_style else "rmsnorm", "position": "learned" if gpt_style else "rotary",
            "fused_qkv": gpt_style or model_type == "phi3"}


def _neutral(value) -> bool:
    return value is None or value is False or value == 0 or value == {} or value == []


def config_warnings(raw: dict, model_type: str, act: str) -> tuple[str, ...]:
    """One line per key of the user's file that may change cost but is not modelled, for a family whose
    layout is not checked against transformers, and for an activation without a formula."""
    out = []
    if act not in opcosts.ACTIVATIONS:
        out.append(f"activation {act!r} has no formula: costed as one operation per element")
    if model_type and model_type not in F.CHECKED_FAMILIES:
        out.append(f"model_type {model_type!r} is read as a LLaMA-style decoder; its layout is not checked "
                   f"against transformers (checked: {', '.join(F.CHECKED_FAMILIES)})")
    elif not model_type and "n_embd" not in raw:
        out.append("no model_type: read as a LLaMA-style decoder")
    for key, value in raw.items():
        if key in F.COST_KEYS:
            if not _neutral(value):
                out.append(f"{key}: " + F.COST_KEYS[key].format(value=_short(value)))
        elif key not in _READ_KEYS and key not in F.IGNORABLE_KEYS and not key.startswith("_"):
            out.append(f"{key} = {_short(value)} is not modelled and may change the cost")
    return tuple(out)


def _short(value) -> str:
    if isinstance(value, dict) and "quant_method" in value:  # a quantization_config: its method and width
        return " ".join(str(value[k]) for k in ("quant_method", "fmt", "bits") if k in value)
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def config_from_dict(raw: dict, name: str = "model", source: str = "",
                     use_transformers: bool | None = None) -> LLMConfig:
    """Validate a Hugging Face style config dict into an LLMConfig (one LLMConfigError line per problem).
    ``use_transformers``: complete it with transformers' config class (None: when installed)."""
    where = source or name
    if not isinstance(raw, dict):
        raise LLMConfigError(f"{where}: a config must be a JSON object, got {type(raw).__name__}")
    raw, nested = _text_decoder(raw)
    model_type = str(raw.get("model_type") or "").lower()
    F.decoder_check(raw, where, model_type)
    gpt_style = _is_gpt_style(raw)
    if nested:  # a nested text_config leaves its class's defaults out: complete it, then check
        d = F.complete(raw, model_type, where, use_transformers)
        _check_required(d, where, gpt_style, nested=True)
    else:
        _check_required(raw, where, gpt_style)
        d = F.complete(raw, model_type, where, use_transformers)
    sizes = _sizes(d, where, given=set(raw))
    layers = sizes["num_layers"]
    sizes.update(_mla(d, where))
    mlp = _mlp(d, gpt_style, model_type)
    return LLMConfig(name=str(raw.get("_name_or_path") or name), model_type=model_type, **sizes, **mlp,
                     **_experts(d, where, model_type, layers),
                     **_attention_options(d, where, model_type, layers, gpt_style), **_options(d, where, gpt_style, model_type),
                     warnings=nested + config_warnings(raw, model_type, mlp["hidden_act"]), source=source or name)


def _text_decoder(raw: dict) -> tuple[dict, tuple[str, ...]]:
    """A multimodal file (Gemma-3, LLaVA, Mistral-3) holds its language model under ``text_config``: that is
    what is read, with one warning naming the towers left out."""
    inner = raw.get("text_config")
    if not isinstance(inner, dict) or _first(raw, "hidden_size")[0] is not None:
        return raw, ()
    others = sorted(k for k in raw if k.endswith("_config") and k not in ("text_config", "quantization_config")
                    and raw[k])
    note = "multimodal config: only its text decoder (text_config) is counted" + (
        f", not {', '.join(others)}" if others else "")
    return {k: v for k, v in {"_name_or_path": raw.get("_name_or_path"), **inner}.items() if v is not None}, (note,)
