"""LLM memory: weights, KV cache by hand, the fit/no-fit boundary, largest batch/context, devices needed."""

from __future__ import annotations

import pytest

from tests.conftest import make_hardware
from tests.paths import HF_CONFIGS
from tops_advisor.llm import kv_bytes_per_token, load_config, make_precision, memory_breakdown, weight_bytes
from tops_advisor.llm.memory import (
    RUNTIME_RESERVE_BYTES,
    activation_bytes,
    devices_needed,
    kv_cache_bytes,
    max_batch,
    max_context,
)

BF16 = make_precision()


def test_kv_bytes_per_token_by_hand():
    # K and V x layers x KV heads x head_dim x bytes
    assert kv_bytes_per_token(load_config("llama2-7b"), BF16) == 2 * 32 * 32 * 128 * 2 == 524_288
    assert kv_bytes_per_token(load_config("llama3-70b"), BF16) == 2 * 80 * 8 * 128 * 2 == 327_680
    assert kv_bytes_per_token(load_config("llama3-8b"), make_precision(kv="fp8")) == 2 * 32 * 8 * 128 * 1
    assert kv_bytes_per_token(load_config("gpt3-175b"), BF16) == 2 * 96 * 96 * 128 * 2


def test_kv_cache_total_and_sliding_window():
    assert kv_cache_bytes(load_config("llama2-7b"), BF16, batch=4, tokens=1000) == 4 * 1000 * 524_288
    # Mistral's rolling buffer keeps 4096 tokens: 4096 x 2 x 32 x 8 x 128 x 2
    assert kv_cache_bytes(load_config("mistral-7b"), BF16, batch=1, tokens=10_000) == 4096 * 131_072


def test_weight_bytes():
    cfg = load_config("llama2-7b")
    assert weight_bytes(cfg, BF16) == 2 * cfg.params
    # int8 weights: linear layers 1 byte, embeddings + head + norms stay bf16
    linear = 32 * (4 * 4096 ** 2 + 3 * 4096 * 11008)
    assert weight_bytes(cfg, make_precision("int8")) == linear + 2 * (cfg.params - linear)


def test_fit_boundary_by_hand():
    cfg = load_config("llama2-7b")
    hw = make_hardware(memory_gb=16)
    # decode with 1000 cached tokens: per sequence KV 1000 x 524,288 = 524,288,000 bytes, activations
    # 2 x 4096 x 2 (stream) + 3 x 11008 x 2 (MLP, the largest block) + 32000 x 4 (fp32 logits) = 210,432 bytes
    per_seq = 524_288_000 + 210_432
    assert activation_bytes(cfg, BF16, 1, 1) == 210_432
    free = 16e9 - 2 * 6_738_415_616 - RUNTIME_RESERVE_BYTES   # 1,523,168,768 bytes
    expected = int(free // per_seq)                          # 2.9 -> 2
    assert expected == 2
    assert max_batch(cfg, BF16, hw, kv_tokens=1000, prefill_len=1) == expected
    assert memory_breakdown(cfg, BF16, hw, batch=2, kv_tokens=1000, q_len=1).fits
    assert not memory_breakdown(cfg, BF16, hw, batch=3, kv_tokens=1000, q_len=1).fits


def test_max_context_is_the_boundary_and_capped_at_the_model_maximum():
    cfg = load_config("llama2-7b")
    hw = make_hardware(memory_gb=16)
    n = max_context(cfg, BF16, hw, batch=1, prefill=False)
    assert memory_breakdown(cfg, BF16, hw, batch=1, kv_tokens=n, q_len=1).fits
    assert not memory_breakdown(cfg, BF16, hw, batch=1, kv_tokens=n + 1, q_len=1).fits
    assert max_context(cfg, BF16, make_hardware(memory_gb=1000), batch=1, prefill=True) == 4096


def test_nothing_fits_gives_zero():
    hw = make_hardware(memory_gb=8)
    cfg = load_config("llama2-7b")  # 13.5 GB of bf16 weights
    assert max_batch(cfg, BF16, hw, kv_tokens=10, prefill_len=1) == 0
    assert max_context(cfg, BF16, hw, batch=1, prefill=False) == 0


def test_devices_needed():
    cfg = load_config("llama2-70b")  # 137.95 GB of bf16 weights
    hw = make_hardware(memory_gb=80)
    # 1 device: 138 GB > 80; 2 devices: 69 GB each + KV + 1 GB runtime < 80
    assert devices_needed(cfg, BF16, hw, batch=1, kv_tokens=1000, q_len=1) == 2
    # GPT-3 175B, int8 weights, 24 GB cards: 4 ranks hold 43.8 GB each, 6 hold 29.2 GB, 8 hold 21.9 GB
    gpt3 = load_config("gpt3-175b")
    assert devices_needed(gpt3, make_precision("int8"), make_hardware(memory_gb=24), batch=1, kv_tokens=512,
                          q_len=1) == 8


def test_tensor_parallel_splits_weights_and_kv():
    cfg = load_config("llama2-7b")
    norms = (2 * 32 + 1) * 4096 * 2  # replicated on every rank
    assert weight_bytes(cfg, BF16, tp=4) == pytest.approx((weight_bytes(cfg, BF16) - norms) / 4 + norms)
    assert kv_bytes_per_token(cfg, BF16, tp=4) == 524_288 / 4


def test_latent_cache_is_whole_on_every_rank_and_expert_widths_split():

    from tops_advisor.llm.parallel import valid_tp_degrees

    cfg = load_config(HF_CONFIGS / "deepseek-v2-lite.json")
    # MLA's latent is one shared "KV head": every rank keeps all 27 x 576 elements per token
    assert kv_bytes_per_token(cfg, BF16, tp=2) == kv_bytes_per_token(cfg, BF16) == 31_104
    # heads 16, dense 10944 = 2^6 x 171, experts 1408 = 2^7 x 11, shared 2816: 1, 2, 4, 8, 16 divide all
    assert valid_tp_degrees(cfg, 16) == [1, 2, 4, 8, 16]
    # replicated on every rank: kv_a_proj_with_mqa (2048 x 576), the norms and the routers: a little over half
    half = weight_bytes(cfg, BF16, tp=2)
    assert weight_bytes(cfg, BF16) / 2 < half < weight_bytes(cfg, BF16) / 2 * 1.01
