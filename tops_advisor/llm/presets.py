"""Published configurations of well-known models, written as their Hugging Face ``config.json`` would be.

Each preset goes through the same parser as a user's file. Sources: the ``config.json`` of each model's
Hugging Face repository (meta-llama/Llama-2-7b-hf, Llama-2-13b-hf, Llama-2-70b-hf, Meta-Llama-3-8B,
Meta-Llama-3-70B, mistralai/Mistral-7B-v0.1, mistralai/Mixtral-8x7B-v0.1), and for GPT-3 175B Table 2.1 of
Brown et al., "Language Models are Few-Shot Learners" (2020): 96 layers, d_model 12288, 96 heads of 128,
context 2048, the GPT-2 byte-pair vocabulary (50257), d_ff = 4 x d_model. GPT-3's alternating locally
banded sparse attention layers are modelled as dense attention.

``PUBLISHED_PARAMS`` holds the sizes the model cards or papers state (used by the tests).
"""

from __future__ import annotations

from ..errors import LLMConfigError
from ..suggest import did_you_mean
from .config import LLMConfig, config_from_dict

_LLAMA = {"model_type": "llama", "hidden_act": "silu", "tie_word_embeddings": False, "rms_norm_eps": 1e-5}

PRESETS: dict[str, dict] = {
    "llama2-7b": {**_LLAMA, "_name_or_path": "meta-llama/Llama-2-7b-hf", "hidden_size": 4096,
                  "intermediate_size": 11008, "num_attention_heads": 32, "num_hidden_layers": 32,
                  "num_key_value_heads": 32, "max_position_embeddings": 4096, "vocab_size": 32000},
    "llama2-13b": {**_LLAMA, "_name_or_path": "meta-llama/Llama-2-13b-hf", "hidden_size": 5120,
                   "intermediate_size": 13824, "num_attention_heads": 40, "num_hidden_layers": 40,
                   "num_key_value_heads": 40, "max_position_embeddings": 4096, "vocab_size": 32000},
    "llama2-70b": {**_LLAMA, "_name_or_path": "meta-llama/Llama-2-70b-hf", "hidden_size": 8192,
                   "intermediate_size": 28672, "num_attention_heads": 64, "num_hidden_layers": 80,
                   "num_key_value_heads": 8, "max_position_embeddings": 4096, "vocab_size": 32000},
    "llama3-8b": {**_LLAMA, "_name_or_path": "meta-llama/Meta-Llama-3-8B", "hidden_size": 4096,
                  "intermediate_size": 14336, "num_attention_heads": 32, "num_hidden_layers": 32,
                  "num_key_value_heads": 8, "max_position_embeddings": 8192, "vocab_size": 128256,
                  "rope_theta": 500000.0},
    "llama3-70b": {**_LLAMA, "_name_or_path": "meta-llama/Meta-Llama-3-70B", "hidden_size": 8192,
                   "intermediate_size": 28672, "num_attention_heads": 64, "num_hidden_layers": 80,
                   "num_key_value_heads": 8, "max_position_embeddings": 8192, "vocab_size": 128256,
                   "rope_theta": 500000.0},
    "mistral-7b": {"model_type": "mistral", "_name_or_path": "mistralai/Mistral-7B-v0.1", "hidden_act": "silu",
                   "hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32,
                   "num_hidden_layers": 32, "num_key_value_heads": 8, "max_position_embeddings": 32768,
                   "sliding_window": 4096, "vocab_size": 32000, "tie_word_embeddings": False},
    "mixtral-8x7b": {"model_type": "mixtral", "_name_or_path": "mistralai/Mixtral-8x7B-v0.1",
                     "hidden_act": "silu", "hidden_size": 4096, "intermediate_size": 14336,
                     "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
                     "max_position_embeddings": 32768, "sliding_window": None, "vocab_size": 32000,
                     "num_local_experts": 8, "num_experts_per_tok": 2, "tie_word_embeddings": False},
    "gpt3-175b": {"model_type": "gpt2", "_name_or_path": "gpt3-175b (Brown et al. 2020)", "n_embd": 12288,
                  "n_layer": 96, "n_head": 96, "n_positions": 2048, "n_inner": None, "vocab_size": 50257,
                  "activation_function": "gelu", "tie_word_embeddings": True},
}

# Parameter counts as published (model cards, Hugging Face safetensors metadata, the GPT-3 paper).
PUBLISHED_PARAMS: dict[str, float] = {
    "llama2-7b": 6.74e9, "llama2-13b": 13.0e9, "llama2-70b": 69.0e9, "llama3-8b": 8.03e9,
    "llama3-70b": 70.6e9, "mistral-7b": 7.24e9, "mixtral-8x7b": 46.7e9, "gpt3-175b": 175e9,
}


def preset_config(name: str) -> LLMConfig:
    """The LLMConfig of a preset; an unknown name suggests the closest ones."""
    key = name.strip().lower()
    if key not in PRESETS:
        raise LLMConfigError(f"unknown model {name!r}: not a config file and not a preset",
                             hint=did_you_mean(name, PRESETS) or f"presets: {', '.join(PRESETS)}")
    # complete dicts: read through the defaults table, not transformers (no torch import, same on every host)
    cfg = config_from_dict(PRESETS[key], name=key, source=f"preset {key} ({PRESETS[key]['_name_or_path']})",
                           use_transformers=False)
    return cfg.model_copy(update={"name": key})
