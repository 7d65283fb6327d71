"""The analytic LLM workload: FLOPs, bytes and GEMM shapes by hand, per phase, precision and layout."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.paths import HF_CONFIGS
from tops_advisor.errors import InputError, LLMConfigError
from tops_advisor.llm import build_workload, load_config, make_precision
from tops_advisor.llm.builder import expected_experts_touched
from tops_advisor.workload import OP_KINDS


def _ops(w, name):
    return [op for op in w.ops if op.name == name]


def test_decode_linear_flops_are_two_per_weight():
    cfg = load_config("llama2-7b")
    w = build_workload(cfg, phase="decode", batch=3, context=100)
    mm = sum(op.flops for op in w.ops if op.kind == "matmul")
    # per layer 4 x 4096^2 + 3 x 4096 x 11008 = 202,375,168 weights; 32 layers + head 32000 x 4096
    weights = 32 * 202_375_168 + 32000 * 4096
    assert mm == 2 * 3 * weights


def test_gemm_m_is_batch_times_tokens():
    cfg = load_config("llama3-8b")
    pre = build_workload(cfg, phase="prefill", batch=2, context=300)
    dec = build_workload(cfg, phase="decode", batch=2, context=300)
    assert _ops(pre, "q_proj")[0].gemm.m == 600 and _ops(dec, "q_proj")[0].gemm.m == 2
    assert _ops(pre, "k_proj")[0].gemm.n == 8 * 128  # grouped-query attention: 8 KV heads of 128
    assert _ops(pre, "lm_head")[0].gemm.m == 2       # last token of each sequence only


def test_decode_attention_flops_and_kv_bytes_by_hand():
    cfg = load_config("llama3-8b")
    w = build_workload(cfg, phase="decode", batch=4, context=1000)
    att = _ops(w, "scaled_dot_product_attention")
    assert len(att) == 32
    # QK^T and PV over 1001 keys: 4 x 128 x 1001 x 32 heads x 4 sequences
    assert att[0].flops == 4 * 128 * 1001 * 32 * 4
    # K and V of 1001 tokens x 8 KV heads x 128 x 2 bytes x 4 sequences = 16,400,384 bytes, plus q in
    q_bytes = 4 * 32 * 128 * 2
    assert att[0].bytes_read == 2 * 1001 * 8 * 128 * 2 * 4 + q_bytes
    assert att[0].gemm.m == 4  # the 4 query heads sharing a KV head are packed into the rows


def test_prefill_attention_is_causal():
    cfg = load_config("llama2-7b")
    w = build_workload(cfg, phase="prefill", batch=1, context=64)
    # 64 x 65 / 2 = 2080 query-key pairs per head; 4 x 128 operations each; 32 heads
    assert _ops(w, "scaled_dot_product_attention")[0].flops == 4 * 128 * 2080 * 32


def test_sliding_window_caps_attention():
    cfg = load_config("mistral-7b")  # window 4096
    w = build_workload(cfg, phase="decode", batch=1, context=8000)
    att = _ops(w, "scaled_dot_product_attention")[0]
    assert att.flops == 4 * 128 * 4096 * 32 and att.gemm.n == 4096


def test_weight_bytes_follow_weight_dtype_and_compute_follows_activations():
    cfg = load_config("llama2-7b")
    q_bf16 = _ops(build_workload(cfg, context=10), "q_proj")[0]
    q_int4 = _ops(build_workload(cfg, context=10, precision=make_precision("int4")), "q_proj")[0]
    q_w8a8 = _ops(build_workload(cfg, context=10, precision=make_precision("int8", "int8")), "q_proj")[0]
    assert q_bf16.param_bytes == 4096 * 4096 * 2
    assert q_int4.param_bytes == 4096 * 4096 * (0.5 + 2 / 128)  # fp16 scale per group of 128
    assert q_int4.dtype == "bf16"          # weight-only: computes at the activation precision
    assert q_w8a8.dtype == "int8" and q_w8a8.param_bytes == 4096 * 4096
    w = build_workload(cfg, context=10, precision=make_precision("int4"))
    assert any("weight-only" in n for n in w.notes)


def test_kv_cache_dtype_changes_attention_bytes():
    cfg = load_config("llama3-8b")
    bf = _ops(build_workload(cfg, context=1000), "scaled_dot_product_attention")[0]
    f8 = _ops(build_workload(cfg, context=1000, precision=make_precision(kv="fp8")), "scaled_dot_product_attention")[0]
    q = 32 * 128 * 2
    assert (bf.bytes_read - q) == 2 * (f8.bytes_read - q)


def test_moe_touches_k_experts_for_one_token_and_nearly_all_for_many():
    cfg = load_config("mixtral-8x7b")
    assert expected_experts_touched(cfg, 1) == pytest.approx(2.0)
    # 8 (1 - (6/8)^64) = 7.99999...
    assert expected_experts_touched(cfg, 64) == pytest.approx(8 * (1 - 0.75 ** 64))
    w = build_workload(cfg, phase="decode", batch=1, context=10)
    expert_w = sum(op.param_bytes for op in w.ops if op.kind == "matmul" and ".moe.experts." in op.module)
    # 2 experts x 3 x 4096 x 14336 x 2 bytes per layer, 32 layers
    assert expert_w == pytest.approx(32 * 2 * 3 * 4096 * 14336 * 2)
    flops = sum(op.flops for op in w.ops if op.kind == "matmul" and ".moe.experts." in op.module)
    assert flops == pytest.approx(32 * 2 * 3 * 2 * 4096 * 14336)


def test_kernel_layouts():
    cfg = load_config("llama2-7b")
    torch_w = build_workload(cfg, context=10)
    fused_w = build_workload(cfg, context=10, layout="fused")
    layer0 = [op for op in torch_w.ops if op.module.startswith("layers.0.")]
    # 2 RMSNorms x 8, q/k/v 3, rotary 2 x 5, k and v cache copies 2, attention 1, o_proj 1, 2 residual adds,
    # gate/up/down 3, silu and mul 2 = 40 kernels
    assert sum(op.kernels for op in layer0) == 40
    assert fused_w.kernels < torch_w.kernels / 3
    assert fused_w.flops == pytest.approx(torch_w.flops, rel=0.01)
    assert {op.kind for op in torch_w.ops} <= set(OP_KINDS)


def test_tensor_parallel_rank_holds_a_share():
    cfg = load_config("llama3-70b")
    w = build_workload(cfg, context=10, tp=8)
    assert _ops(w, "q_proj")[0].gemm.n == 64 * 128 // 8
    assert _ops(w, "k_proj")[0].gemm.n == 128           # 8 KV heads / 8 ranks = 1
    assert _ops(w, "down_proj")[0].gemm.k == 28672 // 8
    w16 = build_workload(cfg, context=10, tp=16)
    assert _ops(w16, "k_proj")[0].gemm.n == 128          # fewer KV heads than ranks: replicated


@pytest.mark.parametrize("kwargs, exc, message", [
    (dict(phase="decode", context=4096), LLMConfigError, "context 4096 + 1 new token exceeds"),
    (dict(phase="prefill", context=5000), LLMConfigError, "context 5000 exceeds"),
    (dict(batch=0), InputError, "batch must be a positive whole number, got 0"),
    (dict(context=-3), InputError, "context must be a positive whole number"),
    (dict(phase="train"), InputError, "unknown phase"),
    (dict(tp=3), LLMConfigError, "does not divide"),
])
def test_bad_sizes(kwargs, exc, message):
    with pytest.raises(exc, match=re.escape(message)):
        build_workload(load_config("llama2-7b"), **kwargs)


def test_module_imports_without_torch():
    code = ("import sys; import tops_advisor.llm, tops_advisor.llm.analysis, tops_advisor.cli.llm; "
            "from tops_advisor.llm import build_workload, load_config; build_workload(load_config('llama3-8b')); "
            "assert 'torch' not in sys.modules, 'torch was imported'")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_workload_predicts_on_the_roofline():
    from tops_advisor.catalog import load_catalog
    from tops_advisor.roofline import predict

    hw = load_catalog().get("h200-sxm")
    w = build_workload(load_config("llama3-8b"), phase="decode", batch=1, context=1024)
    pred = predict(w, hw, mode="graph")
    # floor: every weight byte read once at the datasheet bandwidth (16.06 GB / 4.8 TB/s = 3.3 ms)
    assert pred.latency_s > w.param_bytes / hw.memory_bandwidth_bytes_per_s
    assert pred.bound in ("memory", "overhead")


# --- multi-head latent attention, per-layer windows, shared experts ------------------------------------------
def _v2_lite():

    return load_config(HF_CONFIGS / "deepseek-v2-lite.json")


def test_mla_decode_attends_in_the_absorbed_form_over_the_latent_cache():
    cfg = _v2_lite()  # 16 heads; kv_lora_rank 512, qk_rope 64, qk_nope 128, v_head 128
    w = build_workload(cfg, phase="decode", batch=2, context=100)
    att = _ops(w, "scaled_dot_product_attention")[0]
    # QK over 512 + 64 and PV over 512, per pair; 101 keys, 16 heads, 2 sequences
    assert att.flops == 2 * (576 + 512) * 101 * 16 * 2
    # the cache read: 2 sequences x 101 tokens x 576 x 2 bytes, plus the absorbed queries in (16 x 576 x 2 each)
    assert att.bytes_read == 2 * 101 * 576 * 2 + 2 * 16 * 576 * 2
    assert att.gemm.m == 16 and att.gemm.k == 576  # all 16 heads share the one latent: packed as rows
    q_abs = _ops(w, "q_absorb")[0]
    assert (q_abs.gemm.m, q_abs.gemm.n, q_abs.gemm.k, q_abs.gemm.batch) == (2, 512, 128, 16)
    # per layer the attention's weights are read once: q 2048 x 16 x 192, kv_a 2048 x 576, kv_b's two halves
    # 16 x 128 x 512 each (W_UK, W_UV), o 16 x 128 x 2048
    layer0 = [op for op in w.ops if op.module.startswith("layers.0.self_attn") and op.kind == "matmul"]
    weights = 2048 * 16 * 192 + 2048 * 576 + 2 * 16 * 128 * 512 + 16 * 128 * 2048
    assert sum(op.param_bytes for op in layer0) == 2 * weights
    assert _ops(w, "latent_cache_write")[0].bytes_written == 2 * 576 * 2
    assert not _ops(w, "kv_b_proj")


def test_mla_prefill_expands_the_latent():
    cfg = _v2_lite()
    w = build_workload(cfg, phase="prefill", batch=1, context=64)
    kv_b = _ops(w, "kv_b_proj")[0]
    assert (kv_b.gemm.m, kv_b.gemm.n, kv_b.gemm.k) == (64, 16 * (128 + 128), 512)
    # causal: 64 x 65 / 2 pairs; QK over 192, PV over 128
    assert _ops(w, "scaled_dot_product_attention")[0].flops == 2 * (192 + 128) * 2080 * 16


def test_dense_first_layer_and_shared_experts():
    cfg = _v2_lite()  # first_k_dense_replace 1: layer 0 dense (10944), layers 1-26 experts + 2 shared
    w = build_workload(cfg, phase="decode", batch=1, context=10)
    down = [op for op in w.ops if op.name == "down_proj"]
    assert down[0].module == "layers.0.mlp.down_proj" and down[0].gemm.k == 10944
    shared = [op for op in down if ".moe.shared_experts." in op.module]
    assert len(shared) == 26 and shared[0].gemm.k == 2 * 1408
    assert not any(op.module.startswith("layers.0.moe") for op in w.ops)


def test_alternating_windows_cap_only_the_local_layers():

    cfg = load_config(HF_CONFIGS / "gemma-2-9b.json")
    w = build_workload(cfg, phase="decode", batch=1, context=6000)
    spans = [op.gemm.n for op in _ops(w, "scaled_dot_product_attention")]
    assert spans[:4] == [4096, 6001, 4096, 6001]
    assert any("sliding window of 4096 tokens on 21 of 42 layers" in n for n in w.notes)
    # four norms per layer (input, post-attention, pre- and post-feedforward)
    assert {op.module.split(".")[2] for op in w.ops if op.module.startswith("layers.0.") and "layernorm" in
            op.module} == {"input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                           "post_feedforward_layernorm"}


def test_qwen2_moe_gates_its_shared_expert_and_keeps_mlp_only_layers_dense():
    from tops_advisor.llm import config_from_dict

    cfg = config_from_dict({"model_type": "qwen2_moe", "hidden_size": 64, "num_hidden_layers": 4,
                            "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 96,
                            "vocab_size": 100, "num_experts": 8, "num_experts_per_tok": 2,
                            "moe_intermediate_size": 32, "shared_expert_intermediate_size": 48,
                            "decoder_sparse_step": 2, "mlp_only_layers": [3]}, use_transformers=False)
    assert cfg.dense_layers == (0, 2, 3)  # experts where (i + 1) % 2 == 0 and i not in mlp_only_layers
    for layout in ("torch", "fused"):
        w = build_workload(cfg, phase="decode", batch=1, context=10, layout=layout)
        gates = [op for op in w.ops if op.name == "shared_expert_gate"]
        assert [op.module for op in gates] == ["layers.1.moe.shared_expert_gate"] and gates[0].gemm.n == 1
        shared = [op for op in w.ops if ".moe.shared_experts." in op.module and op.kind == "matmul"]
        assert sum(op.param_bytes for op in shared) == 3 * 64 * 48 * 2  # gate, up, down of 48, bf16
