"""LLM configs: presets against published sizes, Hugging Face and GPT-2 key names, every bad input."""

from __future__ import annotations

import json

import pytest

from tests.paths import EXAMPLES, HF_CONFIGS
from tops_advisor.errors import LLMConfigError
from tops_advisor.llm import PRESETS, config_from_dict, load_config
from tops_advisor.llm.presets import PUBLISHED_PARAMS

LLAMA = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 128,
         "vocab_size": 100}


@pytest.mark.parametrize("name", sorted(PUBLISHED_PARAMS))
def test_preset_params_match_published_within_1_percent(name):
    cfg = load_config(name)
    assert abs(cfg.params / PUBLISHED_PARAMS[name] - 1) < 0.01, (name, cfg.params)


def test_every_preset_has_a_published_size():
    assert set(PRESETS) == set(PUBLISHED_PARAMS)


def test_llama2_7b_params_by_hand():
    # embeddings + untied head: 2 x 32000 x 4096 = 262,144,000
    # per layer: attention 4 x 4096^2 = 67,108,864; MLP 3 x 4096 x 11008 = 135,266,304; 2 norms 8,192
    # 32 layers: 32 x 202,383,360 = 6,476,267,520; final norm 4,096  -> 6,738,415,616 (Hugging Face's count)
    assert load_config("llama2-7b").params == 6_738_415_616


def test_mixtral_active_params():
    cfg = load_config("mixtral-8x7b")
    # 6 of 8 experts idle per token: 32 layers x 6 x 3 x 4096 x 14336 = 33,822,867,456 fewer than 46.70B
    assert cfg.active_params == cfg.params - 33_822_867_456
    assert cfg.active_params == pytest.approx(12.9e9, rel=0.01)  # Mistral's "12.9B active"


def test_gpt_style_keys():
    cfg = load_config("gpt3-175b")
    assert (cfg.hidden_size, cfg.num_layers, cfg.num_heads, cfg.head_dim) == (12288, 96, 96, 128)
    assert cfg.intermediate_size == 4 * 12288 and not cfg.gated_mlp
    assert cfg.tie_word_embeddings and cfg.position == "learned" and cfg.norm == "layernorm" and cfg.fused_qkv


def test_gqa_and_defaults():
    cfg = config_from_dict(LLAMA)
    assert cfg.num_kv_heads == 4 and cfg.head_dim == 16 and cfg.gated_mlp and not cfg.tie_word_embeddings
    assert config_from_dict({**LLAMA, "num_key_value_heads": 2}).kv_size == 32


def test_example_file_matches_preset(tmp_path):

    example = EXAMPLES / "llm" / "llama3-8b-config.json"
    assert load_config(example).params == load_config("llama3-8b").params
    d = tmp_path / "my-model"
    d.mkdir()
    (d / "config.json").write_text(example.read_text())
    cfg = load_config(d)  # a directory holding config.json
    assert cfg.name == "my-model" and cfg.num_kv_heads == 8


@pytest.mark.parametrize("raw, message", [
    ({"hidden_size": 64, "num_attention_heads": 4}, "missing required keys num_hidden_layers, vocab_size, "
                                                    "intermediate_size"),
    ({**LLAMA, "hidden_size": 65}, "hidden size 65 is not divisible by 4 attention heads"),
    ({**LLAMA, "num_key_value_heads": 3}, "num_attention_heads 4 is not a multiple of num_key_value_heads 3"),
    ({**LLAMA, "num_hidden_layers": 0}, "num_hidden_layers must be at least 1, got 0"),
    ({**LLAMA, "vocab_size": -5}, "vocab_size must be at least 1, got -5"),
    ({**LLAMA, "intermediate_size": 12.5}, "intermediate_size must be a whole number"),
    ({**LLAMA, "hidden_size": "4096"}, "hidden_size must be a whole number"),
    ({**LLAMA, "num_local_experts": 4, "num_experts_per_tok": 5}, "num_experts_per_tok 5 exceeds the 4 experts"),
    ({**LLAMA, "tie_word_embeddings": "yes"}, "tie_word_embeddings must be true or false"),
    ([1, 2], "a config must be a JSON object"),
])
def test_bad_configs_raise_one_clear_error(raw, message):
    with pytest.raises(LLMConfigError) as exc:
        config_from_dict(raw, name="bad")
    assert message in str(exc.value)
    assert "\n" not in str(exc.value)


def test_unknown_preset_suggests_closest():
    with pytest.raises(LLMConfigError) as exc:
        load_config("llama3-8")
    assert "unknown model 'llama3-8'" in str(exc.value)
    assert "llama3-8b" in exc.value.hint


def test_missing_and_invalid_files(tmp_path):
    with pytest.raises(LLMConfigError, match="does not exist"):
        load_config(tmp_path / "nope.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(LLMConfigError, match="not valid JSON"):
        load_config(bad)
    ok = tmp_path / "ok.json"
    ok.write_text(json.dumps(LLAMA))
    assert load_config(ok).name == "ok"


def test_config_is_a_frozen_hashable_model_whose_dump_adds_the_counts():
    from pydantic import ValidationError

    a, b = load_config("llama2-7b"), load_config("llama2-7b")
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1  # workloads are cached by it
    with pytest.raises(ValidationError):
        a.hidden_size = 1
    d = a.model_dump()
    assert d["params"] == 6_738_415_616 and d["active_params"] == d["params"] and d["norm"] == "rmsnorm"


# --- families read as their authors define them (the table path: no transformers needed) -----------------------
def test_class_defaults_apply_to_keys_a_file_leaves_out():
    gemma = config_from_dict({**LLAMA, "model_type": "gemma", "num_key_value_heads": 4}, use_transformers=False)
    assert gemma.tie_word_embeddings and gemma.head_dim == 256  # GemmaConfig: tied, head_dim 256
    mistral = config_from_dict({**LLAMA, "model_type": "mistral", "num_key_value_heads": 4},
                               use_transformers=False)
    assert mistral.sliding_window == 4096 and mistral.windowed_layers == 2  # MistralConfig: 4096, every layer
    qwen = config_from_dict({**LLAMA, "model_type": "qwen2", "num_key_value_heads": 4}, use_transformers=False)
    assert qwen.sliding_window is None  # use_sliding_window false by default
    with pytest.raises(LLMConfigError, match=r"num_key_value_heads 32 \(not in the file: its class's default\)"):
        config_from_dict({**LLAMA, "model_type": "qwen2"}, use_transformers=False)  # Qwen2Config: 32


def test_qwen2_biases_q_k_v_but_not_o():
    cfg = config_from_dict({**LLAMA, "model_type": "qwen2", "num_key_value_heads": 4}, use_transformers=False)
    assert cfg.qkv_bias and not cfg.o_bias
    llama = config_from_dict({**LLAMA, "model_type": "llama"})
    # 64 + 2 x (4 KV heads x 16) = 192 bias elements per layer, 2 layers
    assert cfg.params - llama.params == 2 * (64 + 2 * 64)
    biased = config_from_dict({**LLAMA, "model_type": "llama", "attention_bias": True})
    assert biased.qkv_bias and biased.o_bias and biased.params - llama.params == 2 * (64 + 2 * 64 + 64)


def test_deepseek_v2_lite_params_by_hand():

    cfg = load_config(HF_CONFIGS / "deepseek-v2-lite.json")
    h, heads = 2048, 16
    attn = (h * heads * 192                 # q_proj (q_lora_rank null): 16 heads x (128 nope + 64 rope)
            + h * 576 + 512                 # kv_a_proj_with_mqa to 512 latent + 64 rotary key; its norm
            + 512 * heads * (128 + 128)     # kv_b_proj to the heads' non-rotary keys and values
            + heads * 128 * h)              # o_proj
    dense = 3 * h * 10944
    moe = 64 * 3 * h * 1408 + 64 * h + 3 * h * 2 * 1408  # routed experts, router, 2 shared as one MLP
    total = 27 * (attn + 2 * h) + dense + 26 * moe + 2 * 102400 * h + h
    assert cfg.params == total == 15_706_484_224


def test_latent_query_compression_by_hand():
    raw = {"model_type": "deepseek_v2", "hidden_size": 64, "num_hidden_layers": 1, "num_attention_heads": 4,
           "intermediate_size": 96, "vocab_size": 100, "n_routed_experts": 1, "q_lora_rank": 24,
           "kv_lora_rank": 16, "qk_rope_head_dim": 8, "qk_nope_head_dim": 16, "v_head_dim": 16}
    cfg = config_from_dict(raw, use_transformers=False)
    # q_a 64 x 24 + its norm 24 + q_b 24 x 4 x 24; kv_a 64 x 24 + norm 16; kv_b 16 x 4 x 32; o 4 x 16 x 64
    attn = 64 * 24 + 24 + 24 * 96 + 64 * 24 + 16 + 16 * 128 + 64 * 64
    assert cfg.params == attn + 3 * 64 * 96 + 2 * 64 + 2 * 100 * 64 + 64
