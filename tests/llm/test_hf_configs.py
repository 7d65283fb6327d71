"""Published config.json files read as their authors define them (tests/fixtures/hf_configs, sources in its
README): parameter counts and KV-cache bytes against the transformers model built on the meta device, the
defaults table against transformers' config classes, warnings, --strict and non-decoder configs.

Tests that need transformers skip without it (CI installs the [models] extra); the rest run anywhere.
"""

from __future__ import annotations

import json
import warnings

import pytest

from tests.paths import HF_CONFIGS
from tops_advisor.errors import LLMConfigError
from tops_advisor.llm import config_from_dict, kv_bytes_per_token, load_config, make_precision, weight_bytes
from tops_advisor.llm.families import DEFAULTS
from tops_advisor.llm.memory import kv_cache_bytes

BF16 = make_precision()
PUBLISHED = ["llama-3-8b", "qwen2-7b", "mixtral-8x7b", "deepseek-v2-lite", "deepseek-v3", "gemma-2-9b",
             "phi-3-mini-4k-instruct"]
# Tiny configs of the other checked families (their published sizes would add nothing the test needs).
TINY = {
    "qwen2_moe": {"model_type": "qwen2_moe", "hidden_size": 64, "num_hidden_layers": 4, "num_attention_heads": 4,
                  "num_key_value_heads": 2, "intermediate_size": 96, "vocab_size": 100, "num_experts": 8,
                  "num_experts_per_tok": 2, "moe_intermediate_size": 32, "shared_expert_intermediate_size": 48,
                  "decoder_sparse_step": 2, "mlp_only_layers": [3]},
    "qwen3": {"model_type": "qwen3", "hidden_size": 64, "num_hidden_layers": 3, "num_attention_heads": 4,
              "num_key_value_heads": 2, "head_dim": 32, "intermediate_size": 96, "vocab_size": 100,
              "tie_word_embeddings": True},
    "gemma3_text": {"model_type": "gemma3_text", "hidden_size": 64, "num_hidden_layers": 7,
                    "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 32, "intermediate_size": 96,
                    "vocab_size": 100, "sliding_window": 16},
    "gemma": {"model_type": "gemma", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
              "num_key_value_heads": 4, "intermediate_size": 96, "vocab_size": 100},
    "gpt2": {"model_type": "gpt2", "n_embd": 64, "n_layer": 2, "n_head": 4, "vocab_size": 100, "n_positions": 32},
    "deepseek_v2_q_lora": {"model_type": "deepseek_v2", "hidden_size": 64, "num_hidden_layers": 3,
                           "num_attention_heads": 4, "intermediate_size": 96, "vocab_size": 100,
                           "n_routed_experts": 4, "num_experts_per_tok": 2, "n_shared_experts": 1,
                           "moe_intermediate_size": 16, "first_k_dense_replace": 1, "q_lora_rank": 24,
                           "kv_lora_rank": 16, "qk_rope_head_dim": 8, "qk_nope_head_dim": 16, "v_head_dim": 16,
                           "attention_bias": True},
}


def _raw(name: str) -> dict:
    return json.loads((HF_CONFIGS / f"{name}.json").read_text())


def _configs() -> list[tuple[str, dict]]:
    out = [(n, _raw(n)) for n in PUBLISHED] + [("gemma-3-4b-it", _raw("gemma-3-4b-it"))]
    # DeepSeek-V3 shrunk to 5 layers (3 dense-first, 2 with experts): its 61 add nothing but time
    return [(n, {**r, "num_hidden_layers": 5} if n == "deepseek-v3" else r) for n, r in out] + list(TINY.items())


def _meta_model(raw: dict):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    hf = transformers.AutoConfig.for_model(**raw.get("text_config", raw))  # a multimodal file: its decoder
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.device("meta"):
            return hf, transformers.AutoModelForCausalLM.from_config(hf)


def _hf_kv_elems_per_token(model, hf) -> int:
    """Cache elements per token over all layers, from the modules transformers built: k and v projections'
    outputs, Phi-3's fused qkv less the queries, or MLA's compressed latent (kv_a_proj_with_mqa)."""
    total = 0
    layers = model.transformer.h if hasattr(model, "transformer") else model.model.layers
    for layer in layers:
        a = layer.self_attn if hasattr(layer, "self_attn") else layer.attn
        if hasattr(a, "kv_a_proj_with_mqa"):
            total += a.kv_a_proj_with_mqa.out_features
        elif hasattr(a, "qkv_proj"):
            total += a.qkv_proj.out_features - hf.num_attention_heads * a.head_dim
        elif hasattr(a, "c_attn"):  # GPT-2: one fused qkv of 3 x hidden
            total += 2 * hf.n_embd
        else:
            total += a.k_proj.out_features + a.v_proj.out_features
    return total


@pytest.mark.parametrize("name, raw", _configs(), ids=[n for n, _ in _configs()])
def test_params_and_kv_match_the_transformers_model_on_the_meta_device(name, raw):
    hf, model = _meta_model(raw)
    cfg = config_from_dict(raw, name=name)
    assert cfg.params == sum(p.numel() for p in model.parameters()), name
    assert kv_bytes_per_token(cfg, BF16) == 2 * _hf_kv_elems_per_token(model, hf), name
    types = getattr(hf, "layer_types", None)
    if types and cfg.sliding_window:  # the same layers are local
        assert [cfg.window(i) is not None for i in range(cfg.num_layers)] == [
            t == "sliding_attention" for t in types]


@pytest.mark.parametrize("name, raw", _configs(), ids=[n for n, _ in _configs()])
def test_the_defaults_table_reads_like_transformers(name, raw):
    """Without transformers the table completes the file; with it, the class does: the same config."""
    pytest.importorskip("transformers")
    assert config_from_dict(raw, use_transformers=False) == config_from_dict(raw, use_transformers=True)


@pytest.mark.parametrize("model_type", sorted(DEFAULTS))
def test_a_file_naming_only_the_required_keys_reads_like_transformers(model_type):
    """Every other key from the class defaults: the table must hold each one this tool reads."""
    pytest.importorskip("transformers")
    names = (("n_embd", "n_layer", "n_head") if model_type == "gpt2"
             else ("hidden_size", "num_hidden_layers", "num_attention_heads"))
    raw = {"model_type": model_type, **dict(zip(names, (256, 4, 128), strict=True)),
           "intermediate_size": 512,
           "vocab_size": 1000}
    if model_type == "deepseek_v2":  # its class leaves num_experts_per_tok unset (None): top-k must be given
        raw["num_experts_per_tok"] = 6
    outcomes = []
    for use in (False, True):
        try:
            outcomes.append(config_from_dict(raw, name="minimal", use_transformers=use))
        except LLMConfigError as exc:
            outcomes.append(str(exc))
    assert outcomes[0] == outcomes[1]


@pytest.mark.parametrize("model_type", sorted(DEFAULTS))
def test_defaults_table_matches_the_config_classes(model_type):
    transformers = pytest.importorskip("transformers")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cls_cfg = transformers.CONFIG_MAPPING[model_type]()
    for key, value in DEFAULTS[model_type].items():
        assert getattr(cls_cfg, key) == value, (model_type, key)


# --- without transformers -------------------------------------------------------------------------------
def test_deepseek_v2_lite_weights_and_latent_kv_cache():
    cfg = load_config(HF_CONFIGS / "deepseek-v2-lite.json")
    # published: 15.7B parameters; 15,706,484,224 x 2 bytes = 31.4 GB in bf16
    assert cfg.params == 15_706_484_224
    assert weight_bytes(cfg, BF16) / 1e9 == pytest.approx(31.41, abs=0.01)
    # MLA caches kv_lora_rank + qk_rope_head_dim per layer: 27 x (512 + 64) x 2 bytes
    assert kv_bytes_per_token(cfg, BF16) == 27 * 576 * 2 == 31_104
    assert cfg.dense_layers == (0,) and cfg.moe_layer_count == 26 and cfg.shared_intermediate_size == 2 * 1408
    assert cfg.q_lora_rank == 0 and cfg.head_dim == 192 and not cfg.warnings


def test_deepseek_v3_size_and_its_warnings():
    cfg = load_config(HF_CONFIGS / "deepseek-v3.json")
    assert cfg.params / 1e9 == pytest.approx(671.0, abs=0.1)          # model card: 671B (without MTP)
    assert cfg.active_params / 1e9 == pytest.approx(37.5, abs=0.1)    # model card: 37B activated
    text = " ".join(cfg.warnings)
    assert "quantization_config" in text and "num_nextn_predict_layers" in text
    with pytest.raises(LLMConfigError, match="refused under --strict, 2 warnings"):
        load_config(HF_CONFIGS / "deepseek-v3.json", strict=True)


def test_gemma2_ties_embeddings_and_alternates_local_and_global_layers():
    cfg = load_config(HF_CONFIGS / "gemma-2-9b.json")   # the file does not say tie_word_embeddings
    assert cfg.tie_word_embeddings and cfg.norms_per_layer == 4
    assert weight_bytes(cfg, BF16) / 1e9 == pytest.approx(18.48, abs=0.01)  # 9,241,705,984 x 2
    assert cfg.full_attention_layers == tuple(range(1, 42, 2))  # layers 0, 2, ... are local
    per_layer = 2 * 8 * 256 * 2  # K and V x 8 KV heads x 256 x 2 bytes
    # at 10,000 tokens: 21 global layers keep 10,000, 21 local ones 4096
    assert kv_cache_bytes(cfg, BF16, 1, 10_000) == per_layer * (21 * 10_000 + 21 * 4096)
    assert not cfg.warnings


def test_phi3_window_caps_every_layer_and_says_so():
    from tops_advisor.catalog import load_catalog
    from tops_advisor.llm import analyze_llm

    cfg = load_config(HF_CONFIGS / "phi-3-mini-4k-instruct.json")
    assert cfg.sliding_window == 2047 and cfg.windowed_layers == 32
    hw = load_catalog().get("h200-sxm")
    short = analyze_llm(cfg, hw, context=1000, find_crossover=False)
    long = analyze_llm(cfg, hw, context=3000, find_crossover=False)
    assert not any("sliding window" in n for n in short.notes)
    assert any("sliding window of 2047 tokens on every layer" in n for n in long.notes)
    assert long.memory.kv_cache_bytes == 2047 * kv_bytes_per_token(cfg, BF16)


def test_recommend_llm_puts_deepseek_v2_lite_on_one_h200():
    from tops_advisor.catalog import load_catalog
    from tops_advisor.recommend import plan_llm

    plan = plan_llm(load_config(HF_CONFIGS / "deepseek-v2-lite.json"), load_catalog().get("h200-sxm"))
    assert plan.devices == 1 and plan.meets_targets


@pytest.mark.parametrize("raw, kind", [
    (_raw("bert-large-uncased"), "bert is an encoder model"),
    ({"model_type": "t5", "d_model": 512, "num_layers": 6, "num_heads": 8, "vocab_size": 32128},
     "t5 is an encoder-decoder model"),
    ({"model_type": "whisper", "d_model": 768, "is_encoder_decoder": True}, "whisper is an encoder-decoder"),
])
def test_non_decoder_configs_get_one_line(raw, kind):
    with pytest.raises(LLMConfigError) as exc:
        config_from_dict(raw, name="x")
    assert kind in str(exc.value) and "tops-advisor analyze hf:PATH" in str(exc.value)
    assert "\n" not in str(exc.value)


def test_unknown_keys_warn_known_ones_do_not():
    base = {**_raw("llama-3-8b")}
    assert not config_from_dict(base).warnings
    cfg = config_from_dict({**base, "parallel_residual": True, "_comment": "mine"})
    assert cfg.warnings == ("parallel_residual = True is not modelled and may change the cost",)
    other = config_from_dict({**base, "model_type": "olmo2"}, use_transformers=False)
    assert "model_type 'olmo2' is read as a LLaMA-style decoder" in other.warnings[0]
    act = config_from_dict({**base, "hidden_act": "squared_relu"})
    assert any("activation 'squared_relu' has no formula" in w for w in act.warnings)


def test_warnings_reach_the_json_and_strict_refuses_on_the_command_line(tmp_path):
    from click.testing import CliRunner

    from tops_advisor.cli import cli

    path = tmp_path / "config.json"
    path.write_text(json.dumps({**_raw("llama-3-8b"), "parallel_residual": True}))
    ok = CliRunner().invoke(cli, ["llm", str(path), "-H", "h200-sxm", "--json"])
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.stdout)["warnings"] == ["parallel_residual = True is not modelled and may change the cost"]
    refused = CliRunner().invoke(cli, ["llm", str(path), "-H", "h200-sxm", "--strict"])
    assert refused.exit_code != 0 and "refused under --strict" in refused.output


def test_recommend_llm_json_carries_the_config_warnings(tmp_path):
    from click.testing import CliRunner

    from tops_advisor.cli import cli

    path = tmp_path / "config.json"
    path.write_text(json.dumps({**_raw("llama-3-8b"), "quantization_config": {"quant_method": "fp8"}}))
    r = CliRunner().invoke(cli, ["recommend", "--llm", str(path), "--hardware", "h200-sxm", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["warnings"] == [
        "quantization_config: the weights' quantization (fp8) is not read: weights are costed at the precision "
        "asked for (llm --weight-dtype)"]


def test_a_multimodal_file_is_read_for_its_text_decoder():
    """Gemma-3-4B's config.json nests its decoder under text_config and leaves most sizes to the class."""
    cfg = load_config(HF_CONFIGS / "gemma-3-4b-it.json")
    assert (cfg.num_heads, cfg.num_kv_heads, cfg.head_dim, cfg.vocab_size) == (8, 4, 256, 262208)
    assert cfg.full_attention_layers == (5, 11, 17, 23, 29) and cfg.sliding_window == 1024  # 1 global in 6
    assert cfg.tie_word_embeddings and cfg.qk_norm and cfg.norms_per_layer == 4
    assert cfg.warnings == ("multimodal config: only its text decoder (text_config) is counted, not vision_config",)
