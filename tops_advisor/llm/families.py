"""What each model family's ``config.json`` means, as its authors define it.

A ``config.json`` lists only what differs from its class's defaults: Gemma's ``tie_word_embeddings`` is true
unless the file says otherwise, a Mistral file without ``sliding_window`` has a window of 4096. With
``transformers`` installed the file is completed by the model's own config class
(``transformers.CONFIG_MAPPING[model_type](**raw).to_dict()``), which also adds the derived ``layer_types``.
Without it, ``DEFAULTS`` below holds the same class defaults for the families this tool models, copied from
transformers 5.24 ``models/<family>/configuration_<family>.py``; ``tests/llm/test_hf_configs.py`` compares
every entry with the classes whenever transformers is installed, so the table cannot drift silently.

Also here: which model types are encoders or encoder-decoders (refused with one line), which keys change
nothing this tool costs (``IGNORABLE_KEYS``), and the per-layer rules (local/global attention, dense-first
layers) that the classes derive and the table path must derive the same way.
"""

from __future__ import annotations

import logging
import warnings

from ..errors import LLMConfigError

# Families whose parameter count is checked against the transformers model built on the meta device
# (tests/llm/test_hf_configs.py). Other model types are read as LLaMA-style decoders, with a warning.
CHECKED_FAMILIES = ("llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "gemma", "gemma2",
                    "gemma3_text", "phi3", "deepseek_v2", "deepseek_v3", "gpt2")

_GEMMA = {"tie_word_embeddings": True, "head_dim": 256, "attention_bias": False, "max_position_embeddings": 8192}
_QWEN = {"tie_word_embeddings": False, "use_sliding_window": False, "max_window_layers": 28,
         "max_position_embeddings": 32768, "hidden_act": "silu"}
_DEEPSEEK = {"tie_word_embeddings": False, "attention_bias": False, "kv_lora_rank": 512, "q_lora_rank": 1536,
             "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128, "hidden_act": "silu"}
# Class defaults of the keys this tool reads, per model type (transformers 5.24 configuration classes). Some
# are literal numbers where one might expect a derived one: Mistral's 8 KV heads, Gemma's 16, Qwen3's head_dim
# of 128 whatever the hidden size.
DEFAULTS: dict[str, dict] = {
    "llama": {"tie_word_embeddings": False, "attention_bias": False, "mlp_bias": False, "hidden_act": "silu",
              "max_position_embeddings": 2048},
    "mistral": {"tie_word_embeddings": False, "sliding_window": 4096, "hidden_act": "silu",
                "num_key_value_heads": 8, "max_position_embeddings": 131072},
    "mixtral": {"tie_word_embeddings": False, "sliding_window": None, "num_local_experts": 8,
                "num_experts_per_tok": 2, "hidden_act": "silu", "num_key_value_heads": 8,
                "max_position_embeddings": 131072},
    "qwen2": {**_QWEN, "sliding_window": None, "num_key_value_heads": 32},
    "qwen3": {**_QWEN, "sliding_window": None, "attention_bias": False, "num_key_value_heads": 32, "head_dim": 128},
    "qwen2_moe": {**_QWEN, "sliding_window": 0, "num_experts": 60, "num_experts_per_tok": 4,
                  "moe_intermediate_size": 1408, "shared_expert_intermediate_size": 5632,
                  "decoder_sparse_step": 1, "mlp_only_layers": [], "qkv_bias": True, "num_key_value_heads": 16},
    "gemma": {**_GEMMA, "hidden_act": "gelu_pytorch_tanh", "num_key_value_heads": 16},
    "gemma2": {**_GEMMA, "sliding_window": 4096, "hidden_activation": "gelu_pytorch_tanh",
               "num_key_value_heads": 4},
    "gemma3_text": {**_GEMMA, "sliding_window": 4096, "hidden_activation": "gelu_pytorch_tanh",
                    "_sliding_window_pattern": 6, "num_key_value_heads": 4, "max_position_embeddings": 131072,
                    # Gemma-3's multimodal files leave these to the class in their text_config
                    "num_attention_heads": 8, "vocab_size": 262208, "hidden_size": 2304, "intermediate_size": 9216,
                    "num_hidden_layers": 26},
    "phi3": {"tie_word_embeddings": False, "sliding_window": None, "hidden_act": "silu",
             "max_position_embeddings": 4096},
    "deepseek_v2": {**_DEEPSEEK, "mlp_bias": False, "first_k_dense_replace": 0, "n_routed_experts": 64,
                    "n_shared_experts": 2, "num_experts_per_tok": None, "moe_intermediate_size": 1407,
                    "max_position_embeddings": 2048},
    "deepseek_v3": {**_DEEPSEEK, "first_k_dense_replace": 3, "n_routed_experts": 256, "n_shared_experts": 1,
                    "num_experts_per_tok": 8, "moe_intermediate_size": 2048, "num_key_value_heads": 128,
                    "max_position_embeddings": 4096},
    "gpt2": {"tie_word_embeddings": True, "activation_function": "gelu_new", "n_inner": None, "n_positions": 1024},
}

# Families whose layers carry four norms (Gemma-2/3: post-attention and pre/post-feedforward) and per-head
# q/k RMSNorms (Qwen3, Gemma-3: q_norm and k_norm over head_dim).
FOUR_NORM_FAMILIES = {"gemma2", "gemma3_text"}
QK_NORM_FAMILIES = {"qwen3", "gemma3_text"}
# Qwen2 always biases q, k and v (modeling_qwen2.py: bias=True), never o; Qwen2-MoE reads ``qkv_bias``.
QKV_BIAS_ALWAYS = {"qwen2"}

ENCODER_TYPES = {"bert", "roberta", "xlm-roberta", "distilbert", "albert", "electra", "deberta", "deberta-v2",
                 "mpnet", "camembert", "longformer", "big_bird", "funnel", "ernie", "modernbert", "vit", "deit",
                 "beit", "swin", "convnext", "clip", "clip_vision_model", "clip_text_model", "siglip",
                 "wav2vec2", "hubert", "dinov2", "xlm", "flaubert"}
ENCODER_DECODER_TYPES = {"t5", "mt5", "umt5", "longt5", "bart", "mbart", "pegasus", "pegasus_x", "marian",
                         "whisper", "blenderbot", "blenderbot-small", "led", "prophetnet", "fsmt", "m2m_100",
                         "nllb-moe", "switch_transformers", "speech_to_text", "encoder-decoder"}

# Keys that change nothing this tool costs. Grouped by why.
IGNORABLE_KEYS = frozenset({
    # identities, token ids, bookkeeping
    "_name_or_path", "name_or_path", "transformers_version", "architectures", "auto_map", "model_type",
    "bos_token_id", "eos_token_id", "pad_token_id", "sep_token_id", "decoder_start_token_id", "id2label",
    "label2id", "tokenizer_class", "prefix", "task_specific_params", "problem_type", "finetuning_task",
    # storage and runtime switches (the precision is chosen with --weight-dtype; the cache is always on)
    "torch_dtype", "dtype", "use_cache", "return_dict", "output_attentions", "output_hidden_states",
    "output_router_logits", "chunk_size_feed_forward", "_attn_implementation", "attn_implementation",
    "torchscript", "tie_encoder_decoder", "is_decoder", "add_cross_attention", "pretraining_tp",
    "cache_implementation",  # which cache class generate() uses; the windows it follows are modelled
    "sliding_window_size",   # an early duplicate of sliding_window in Gemma-2 files; no class reads it
    # training only: initialisation, dropout, auxiliary losses
    "initializer_range", "initializer_factor", "attention_dropout", "hidden_dropout", "dropout", "resid_pdrop",
    "embd_pdrop", "attn_pdrop", "hidden_dropout_prob", "attention_probs_dropout_prob", "router_aux_loss_coef",
    "router_z_loss_coef", "router_jitter_noise", "aux_loss_alpha", "seq_aux", "summary_type", "summary_use_proj",
    "summary_activation", "summary_proj_to_labels", "summary_first_dropout", "gradient_checkpointing",
    # numerics that cost no extra operator: epsilons, rotary frequencies and scaling, logit caps and scales,
    # routing rules that pick the same number of experts
    "rms_norm_eps", "layer_norm_eps", "layer_norm_epsilon", "rope_theta", "rope_scaling", "rope_parameters",
    "rope_interleave", "original_max_position_embeddings", "partial_rotary_factor", "attn_logit_softcapping",
    "final_logit_softcapping", "query_pre_attn_scalar", "scale_attn_weights", "scale_attn_by_inverse_layer_idx",
    "reorder_and_upcast_attn", "routed_scaling_factor", "norm_topk_prob", "topk_method", "n_group",
    "topk_group", "scoring_func", "ep_size", "rope_local_base_freq",
})
# Keys that change cost when set to anything but null, 0 or false, and what this tool does instead (a warning).
COST_KEYS = {
    "quantization_config": "the weights' quantization ({value}) is not read: weights are costed at the "
                           "precision asked for (llm --weight-dtype)",
    "num_nextn_predict_layers": "{value} multi-token-prediction layer(s) are not counted (plain decoding "
                                "does not run them)",
    "vision_config": "the vision tower is not counted (text decoder only)",
    "audio_config": "the audio tower is not counted (text decoder only)",
    "use_bidirectional_attention": "bidirectional attention is costed as causal",
}


def decoder_check(raw: dict, where: str, model_type: str) -> None:
    """One line for an encoder or encoder-decoder config: it is the library-model path's job."""
    arch = " ".join(str(a) for a in raw.get("architectures") or ())
    kind = None
    if model_type in ENCODER_DECODER_TYPES or raw.get("is_encoder_decoder") is True:
        kind = "encoder-decoder"
    elif model_type in ENCODER_TYPES or "ForMaskedLM" in arch:
        kind = "encoder"
    if kind:
        raise LLMConfigError(f"{where}: {model_type or 'this'} is an {kind} model, not a decoder-only LLM: use "
                             f"`tops-advisor analyze hf:PATH` (the library-model path)")


def _quiet_class(model_type: str):
    """transformers' config class for ``model_type``, or None (not installed, or a type it does not know)."""
    try:
        from transformers import CONFIG_MAPPING
    except ImportError:
        return None
    return CONFIG_MAPPING[model_type] if model_type in CONFIG_MAPPING else None


def complete(raw: dict, model_type: str, where: str, use_transformers: bool | None) -> dict:
    """The config with its class defaults filled in: by transformers' class for ``model_type`` when
    ``use_transformers`` is not False and transformers knows the type, else by ``DEFAULTS``."""
    cls = _quiet_class(model_type) if use_transformers is not False and model_type else None
    if cls is None:
        return {**DEFAULTS.get(model_type, {}), **raw}
    kwargs = {k: v for k, v in raw.items() if k != "model_type"}
    logger = logging.getLogger("transformers")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            d = cls(**kwargs).to_dict()
    except Exception as exc:  # noqa: BLE001 - the class's own validation: one line, not a traceback
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise LLMConfigError(f"{where}: transformers' {cls.__name__} rejects it: {first}") from None
    finally:
        logger.setLevel(level)
    return {**raw, **d}


def full_attention_layers(d: dict, model_type: str, layers: int) -> tuple[int, ...] | None:
    """Layers that attend over the whole context when the model has a sliding window; None: no layer is
    windowed. From ``layer_types`` when present, else the rule each class derives it with."""
    types = d.get("layer_types")
    if isinstance(types, list) and len(types) == layers:
        full = tuple(i for i, t in enumerate(types) if t != "sliding_attention")
        return None if len(full) == layers else full
    if model_type == "gemma2":  # Gemma2Config: sliding if (i + 1) % 2, so even layers are local
        return tuple(i for i in range(layers) if (i + 1) % 2 == 0)
    if model_type == "gemma3_text":  # Gemma3TextConfig: every sliding_window_pattern-th layer is global
        pattern = d.get("sliding_window_pattern") or d.get("_sliding_window_pattern") or 6
        return tuple(i for i in range(layers) if (i + 1) % pattern == 0)
    if model_type in ("qwen2", "qwen2_moe", "qwen3"):  # Qwen2Config: sliding if i >= max_window_layers
        return tuple(range(min(layers, int(d.get("max_window_layers") or 0))))
    return ()


def dense_layers(d: dict, model_type: str, layers: int) -> tuple[int, ...]:
    """Layers of a mixture-of-experts model that run the dense MLP instead of the experts."""
    if model_type == "qwen2_moe":  # Qwen2MoeDecoderLayer: experts unless in mlp_only_layers or off-step
        only, step = set(d.get("mlp_only_layers") or ()), int(d.get("decoder_sparse_step") or 1)
        return tuple(i for i in range(layers) if i in only or (i + 1) % step)
    # DeepSeek: experts in layer i when i >= first_k_dense_replace and i % moe_layer_freq == 0 (DeepSeek's
    # modeling_deepseek.py; transformers' port has no moe_layer_freq, every published config sets it to 1)
    first, freq = int(d.get("first_k_dense_replace") or 0), int(d.get("moe_layer_freq") or 1)
    return tuple(i for i in range(layers) if i < first or i % freq)
