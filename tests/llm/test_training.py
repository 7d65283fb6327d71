"""A training step built from an LLM config: operators of the forward, the backward (GEMM shapes, what is
skipped for frozen weights), the optimizer, and the step's memory, derived by hand on a tiny made-up config."""

from __future__ import annotations

import pytest

from tests.conftest import make_hardware
from tops_advisor.errors import InputError, LLMConfigError
from tops_advisor.kinds import Phase
from tops_advisor.llm import build_training, config_from_dict, is_llm_spec, load_config, training_workload
from tops_advisor.train import LoraSpec, TrainSetup
from tops_advisor.train.predict import predict_training

# A made-up LLaMA-style decoder: h 64, 4 heads of 16, 2 KV heads, SwiGLU 176, vocabulary 512, 2 layers.
TINY = {"model_type": "llama", "hidden_size": 64, "intermediate_size": 176, "num_attention_heads": 4,
        "num_key_value_heads": 2, "num_hidden_layers": 2, "vocab_size": 512, "max_position_embeddings": 256,
        "tie_word_embeddings": False}
H, Q, KV, INTER, HEADS, D, V, L = 64, 64, 32, 176, 4, 16, 512, 2
B, S = 2, 64
T = B * S
LINEARS = {"q_proj": (Q, H), "k_proj": (KV, H), "v_proj": (KV, H), "o_proj": (H, Q), "gate_proj": (INTER, H),
           "up_proj": (INTER, H), "down_proj": (H, INTER)}   # name: (out, in)


def tiny(**changes):
    return config_from_dict({**TINY, **changes}, name="tiny", use_transformers=False)


def _ops(tw, phase=None, name=None):
    return [op for op in tw.workload.ops if (phase is None or op.phase == phase)
            and (name is None or op.name == name or op.module.endswith(name))]


def test_parameters_match_the_config_and_full_fine_tuning_trains_them_all():
    cfg = tiny()
    tw = build_training(cfg, B, S, TrainSetup(precision="bf16"))
    assert tw.workload.params == cfg.params == tw.trainable_params and tw.frozen_params == 0
    assert tw.memory.weights == cfg.params * 2
    assert tw.memory.optimizer_state == 2 * cfg.params * 2      # AdamW: two moments at the parameter dtype
    assert tw.optimizer_tensors == 1 + L * 9 + 2                # embedding, 7 linears + 2 norms a layer, norm, head
    assert tw.tokens == T and tw.loss == "cross-entropy over 512 classes per token"


def test_every_linear_gets_its_dgrad_and_wgrad_gemms():
    tw = build_training(tiny(), B, S)
    for i in range(L):
        for name, (n, k) in LINEARS.items():
            where = "self_attn" if name in ("q_proj", "k_proj", "v_proj", "o_proj") else "mlp"
            mod = f"layers.{i}.{where}.{name}"
            fwd = [op for op in tw.workload.ops if op.module == mod and op.phase == Phase.FORWARD]
            dgrad = [op for op in tw.workload.ops if op.module == f"{mod}.dgrad"]
            wgrad = [op for op in tw.workload.ops if op.module == f"{mod}.wgrad"]
            assert fwd[0].gemm.m == T and (fwd[0].gemm.n, fwd[0].gemm.k) == (n, k)
            assert (dgrad[0].gemm.m, dgrad[0].gemm.n, dgrad[0].gemm.k) == (T, k, n)   # dX = dY (T x n) W (n x k)
            assert (wgrad[0].gemm.m, wgrad[0].gemm.n, wgrad[0].gemm.k) == (n, k, T)   # dW = dY^T (n x T) X (T x k)
            assert dgrad[0].flops == wgrad[0].flops == fwd[0].flops == 2 * T * n * k
    head = [op for op in tw.workload.ops if op.module.startswith("lm_head")]
    assert [op.gemm.m for op in head] == [T, V, T]               # the head runs on every token in training
    fwd_mm = sum(op.flops for op in _ops(tw, Phase.FORWARD) if op.kind == "matmul")
    bwd_mm = sum(op.flops for op in _ops(tw, Phase.BACKWARD) if op.kind == "matmul")
    assert bwd_mm == 2 * fwd_mm


def test_attention_backward_is_one_fused_kernel_at_two_and_a_half_times_the_forward():
    tw = build_training(tiny(), B, S, TrainSetup(precision="bf16"))
    fwd = [op for op in tw.workload.ops if op.kind == "attention" and op.phase == Phase.FORWARD]
    bwd = [op for op in tw.workload.ops if op.kind == "attention" and op.phase == Phase.BACKWARD]
    # causal: S (S + 1) / 2 query-key pairs per head, QK^T and PV at 2 x 16 operations per pair each
    assert fwd[0].flops == 2 * (D + D) * (S * (S + 1) / 2) * B * HEADS
    assert [op.name for op in bwd] == ["aten._scaled_dot_product_flash_attention_backward"] * L
    assert bwd[0].flops == 2.5 * fwd[0].flops and bwd[0].gemm == fwd[0].gemm
    fp32 = build_training(tiny(), B, S)
    assert {op.name for op in fp32.workload.ops if op.kind == "attention" and op.phase == Phase.BACKWARD} == {
        "aten._scaled_dot_product_efficient_attention_backward"}   # flash takes 16-bit inputs only


def test_saved_activations_by_hand_bf16():
    """Peak at the loss's backward: every saved tensor, the log-probabilities, and two gradients of the logits'
    size. Per layer in bf16 (HF's LlamaRMSNorm: fp32 input 4th, rstd 4t, normalised rows 2th, output 2th; q and
    k rotated, v, the attention output 2 bytes each, the log-sum-exp 4 per head; gate, act, up, product)."""
    tw = build_training(tiny(), B, S, TrainSetup(precision="bf16"))
    norm = T * (4 * H + 4 + 2 * H + 2 * H)
    layer = 2 * norm + T * (2 * Q + 2 * KV + 2 * KV + 2 * Q + 4 * HEADS) + 4 * 2 * T * INTER
    tables = 2 * S * D * 2                        # cos and sin, (1, seq, head_dim), shared by every layer
    logp = T * V * 2
    m = tw.memory
    assert m.activations == L * layer + norm + tables + logp
    assert m.temporaries == 2 * T * V * 2 + 4     # NLL's and log-softmax's gradients, the seed
    assert m.gradients == 0 and m.peak_phase == Phase.BACKWARD
    assert tw.workload.ops[m.peak_op].name == "aten._log_softmax_backward_data"
    assert m.inputs == 2 * T * 8                  # token ids and labels


def test_fp32_also_keeps_the_residual_stream():
    """In fp32 LlamaRMSNorm's to(fp32) returns its input: pow and mul save the residual tensor itself (one per
    norm) instead of an fp32 copy, and the normalised rows are fp32."""
    tw = build_training(tiny(), B, S, TrainSetup(precision="fp32"))
    norm = T * (4 * H + 4 + 4 * H + 4 * H)
    layer = 2 * norm + T * 4 * (2 * Q + 2 * KV) + T * 4 * HEADS + 4 * 4 * T * INTER
    assert tw.memory.activations == L * layer + norm + 2 * S * D * 4 + T * V * 4
    assert not [op for op in _ops(tw, Phase.FORWARD) if op.name.endswith((".to_fp32", ".to_dtype"))]


def test_lora_trains_adapters_only():
    r = 8
    tw = build_training(tiny(), B, S, TrainSetup(precision="bf16", lora=LoraSpec(r)))
    adapters = L * sum(r * (n + k) for n, k in LINEARS.values())
    assert tw.trainable_params == adapters and tw.frozen_params == tiny().params
    assert tw.memory.optimizer_state == 2 * adapters * 2 and tw.memory.all_gradients == adapters * 2
    names = {op.module for op in tw.workload.ops}
    assert not any(m.endswith("proj.wgrad") or m == "lm_head.wgrad" for m in names)   # frozen: no wgrad
    assert "layers.1.self_attn.q_proj.lora_A.wgrad" in names and "layers.1.self_attn.q_proj.dgrad" in names
    # the embedding is frozen: nothing upstream of layer 0's q/k/v needs their input's gradient
    assert "layers.0.self_attn.q_proj.dgrad" not in names and "layers.0.self_attn.q_proj.lora_A.dgrad" not in names
    assert not _ops(tw, Phase.BACKWARD, "embed_tokens")
    assert tw.workload.params == tiny().params + adapters


def test_a_weight_bound_step_peaks_in_the_optimizer():
    """Few tokens: the high-water mark is foreach AdamW's sqrt(v) list, beside every gradient."""
    m = build_training(tiny(), 1, 8, TrainSetup(precision="bf16")).memory
    params = tiny().params
    assert m.peak_phase == Phase.OPTIMIZER and m.gradients == params * 2 and m.temporaries == params * 2
    assert m.activations == 0
    fused = build_training(tiny(), 1, 8, TrainSetup(precision="bf16", optimizer="adamw-fused")).memory
    # fused AdamW makes no temporary: its high-water mark is the end of the backward, every gradient made
    assert fused.gradients == params * 2 and fused.temporaries < 0.01 * params * 2


def test_lora_targets():
    tw = build_training(tiny(), B, S, TrainSetup(lora=LoraSpec(4, targets=("q_proj", "v_proj"))))
    assert tw.trainable_params == L * (4 * (Q + H) + 4 * (KV + H))
    with pytest.raises(InputError, match="found no linear layer matching nope"):
        build_training(tiny(), B, S, TrainSetup(lora=LoraSpec(4, targets=("nope",))))


def test_checkpointing_keeps_layer_inputs_and_recomputes_up_to_the_last_saving_operator():
    tw = build_training(tiny(), B, S, TrainSetup(precision="bf16", checkpointing=True))
    plain = build_training(tiny(), B, S, TrainSetup(precision="bf16"))
    recomputed = [op.name for op in _ops(tw, Phase.BACKWARD) if op.kind == "matmul" and not op.module.endswith(
        ("grad",))]
    # each layer's forward again, but not down_proj: its saved input is the last the backward needs
    assert sorted(recomputed) == sorted(["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj"] * L)
    assert len([op for op in _ops(tw, Phase.BACKWARD) if op.name == "scaled_dot_product_attention"]) == L
    assert tw.memory.peak_bytes < plain.memory.peak_bytes
    # transformers makes the embedding's output require grad under checkpointing: layer 0's inputs get theirs
    lora = build_training(tiny(), B, S, TrainSetup(lora=LoraSpec(4), checkpointing=True))
    assert any(op.module == "layers.0.self_attn.q_proj.dgrad" for op in lora.workload.ops)


def test_precisions():
    amp = build_training(tiny(), B, S, TrainSetup(precision="amp"))
    assert amp.workload.dtype == "amp" and amp.memory.weights == tiny().params * 4
    assert {op.dtype for op in amp.workload.ops if op.kind == "matmul"} == {"fp16"}
    casts = [op for op in _ops(amp, Phase.FORWARD) if op.name == "aten._to_copy"]
    # autocast casts each product's fp32 input (not o_proj's or down_proj's) and weight, attention's q and k;
    # the head its input and weight, cross-entropy the logits (it is on autocast's fp32 list)
    assert len(casts) == L * (5 + 7 + 2) + 2 + 1
    assert amp.sync_op > 0 and amp.workload.ops[amp.sync_op - 1].name.startswith("aten._amp_foreach")
    tf32 = build_training(tiny(), B, S, TrainSetup(precision="tf32"))
    assert {op.dtype for op in tf32.workload.ops if op.kind == "matmul"} == {"tf32"}
    bf16 = build_training(tiny(), B, S, TrainSetup(precision="amp-bf16"))
    assert {op.dtype for op in bf16.workload.ops if op.kind == "matmul"} == {"bf16"} and bf16.host_syncs == 0


def test_phases_are_in_order_and_the_optimizer_passes_follow():
    tw = build_training(tiny(), B, S, TrainSetup(optimizer="adamw-fused"))
    phases = [op.phase for op in tw.workload.ops]
    assert phases == sorted(phases, key=[Phase.FORWARD, Phase.BACKWARD, Phase.OPTIMIZER].index)
    assert [op.name for op in _ops(tw, Phase.OPTIMIZER)] == ["aten._foreach_add_", "aten._fused_adamw_"]


def test_gpt_style_configs_train_with_a_tied_head():
    cfg = config_from_dict({"model_type": "gpt2", "n_embd": 64, "n_layer": 2, "n_head": 4, "n_positions": 128,
                            "vocab_size": 512}, name="tiny-gpt", use_transformers=False)
    tw = build_training(cfg, B, S)
    assert tw.workload.params == cfg.params
    # the head's weight gradient is the embedding's: made by the head, added to by the embedding's backward
    assert [op.name for op in _ops(tw, Phase.BACKWARD, "embed_tokens")] == ["aten.embedding_dense_backward",
                                                                            "aten.add_"]


def test_bad_input():
    with pytest.raises(LLMConfigError, match="exceeds"):
        build_training(tiny(), 1, 300)
    with pytest.raises(InputError, match="batch must be a positive"):
        build_training(tiny(), 0, 16)
    moe = tiny(num_local_experts=4, num_experts_per_tok=2)
    with pytest.raises(InputError, match="not a mixture of experts"):
        build_training(moe, 1, 16)


def test_llm_specs_are_presets_and_configs():
    assert is_llm_spec("llama3-8b") and is_llm_spec("Llama3-8B") and is_llm_spec("missing/config.json")
    assert is_llm_spec("examples/llm/llama3-8b-config.json")
    assert not is_llm_spec("hf:examples/llm/llama3-8b-config.json") and not is_llm_spec("examples/resnet50.py")
    assert not is_llm_spec("timm:resnet50") and not is_llm_spec("resnet50")
    tw = training_workload("llama3-8b", 1, 512, TrainSetup(precision="bf16", lora=LoraSpec(16)))
    assert tw.frozen_params == load_config("llama3-8b").params
    # LoRA r=16 on q, k, v, o, gate, up, down of 32 layers: 16 x (in + out) each
    per_layer = 16 * ((4096 + 4096) * 2 + (4096 + 1024) * 2 + (4096 + 14336) * 3)
    assert tw.trainable_params == 32 * per_layer


def test_the_step_predicts_on_a_device():
    tw = build_training(tiny(), B, S, TrainSetup(precision="bf16"))
    p = predict_training(tw, make_hardware())
    assert p.step_s > 0 and p.forward_s > 0 and p.backward_s > 0 and p.optimizer_s > 0
    assert p.memory.peak_bytes == tw.memory.peak_bytes and p.tokens == T
