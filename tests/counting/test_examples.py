"""The shipped examples: published parameter counts, FlopCounterMode cross-checks, published GMACs,
and counting a 70B-parameter transformer on the meta device."""

from __future__ import annotations

import importlib.util

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from tests.paths import EXAMPLES
from tops_advisor.counting import count, load_model_file

# Published parameter counts: torchvision resnet50 25,557,032; Hugging Face bert-large-uncased BertModel
# 335,141,888; gpt2 124,439,808; torchvision vit_b_16 86,567,656; torchvision mobilenet_v2 3,504,872;
# LLaMA-2-70B 68,976,648,192 (Touvron et al. 2023 "70B"; HF config shapes).
PARAMS = {
    "resnet50": 25_557_032, "bert_large": 335_141_888, "gpt2": 124_439_808, "vit_b16": 86_567_656,
    "mobilenet_v2": 3_504_872,
    # small_cnn, by hand: five 3x3 convs without bias, BN weight + bias per conv, a 128 -> 10 head
    "small_cnn": (3 * 32 + 32 * 32 + 32 * 64 + 64 * 64 + 64 * 128) * 9     # conv weights 139,104
                 + 2 * (32 + 32 + 64 + 64 + 128)                            # BN weight + bias 640
                 + 128 * 10 + 10,                                           # head 1,290 -> 141,034
}
SMALL = ["resnet50", "bert_large", "gpt2", "vit_b16", "mobilenet_v2", "small_cnn"]


@pytest.fixture(scope="module")
def counted():
    return {name: count(EXAMPLES / f"{name}.py", batch=2) for name in SMALL}


@pytest.mark.parametrize("name", SMALL)
def test_parameter_counts_match_published(counted, name):
    assert counted[name].params == PARAMS[name]


@pytest.mark.parametrize("name", SMALL)
def test_every_operator_has_a_formula(counted, name):
    w = counted[name]
    assert w.unsupported_ops == {}
    assert w.batch == 2 and w.dtype == "fp32" and w.flops > 0 and w.bytes > 0
    assert w.param_bytes == 4 * w.params
    assert 0 < w.activation_peak_bytes < w.bytes


@pytest.mark.parametrize("name", SMALL)
def test_matches_flop_counter_mode(counted, name):
    """torch's FlopCounterMode counts mm/addmm/bmm/convolution at 2 per multiply-add, like us. On meta tensors
    it sees SDPA's math path (two bmm per call, masked positions included); causal attention keeps the
    L (L + 1) / 2 of L^2 pairs below the diagonal (gpt2: L = 128, 129/256 of them)."""
    mf = load_model_file(EXAMPLES / f"{name}.py")
    model = mf.build().eval()
    inputs = mf.inputs(2)
    mode = FlopCounterMode(display=False)
    with torch.no_grad(), mode:
        model(inputs)
    theirs = {str(k): v for k, v in mode.get_flop_counts()["Global"].items()}
    w = counted[name]
    matrix = sum(op.flops for op in w.ops if op.kind in ("matmul", "conv"))
    assert matrix == pytest.approx(theirs.get("aten.mm", 0) + theirs.get("aten.addmm", 0)
                                   + theirs.get("aten.convolution", 0), rel=0.01)
    causal = name == "gpt2"
    attention = sum(op.flops for op in w.ops if op.kind == "attention")
    assert attention == pytest.approx(theirs.get("aten.bmm", 0) * (129 / 256 if causal else 1.0), rel=0.01)


def test_resnet50_is_4_1_gmacs(counted):
    """Published: 4.1 GMACs at 224x224 (torchvision lists 4.09 'GFLOPS', i.e. multiply-adds)."""
    w = counted["resnet50"]
    macs_per_image = sum(op.flops for op in w.ops if op.kind in ("conv", "matmul")) / 2 / w.batch
    assert macs_per_image == pytest.approx(4.1e9, rel=0.01)
    assert macs_per_image == 4_089_184_256  # our exact figure: conv 4,087,136,256 + fc 2048*1000


def test_mobilenet_v2_is_300_mmacs(counted):
    """Sandler et al. 2018, Table 4: 300M multiply-adds at 224x224."""
    w = counted["mobilenet_v2"]
    assert sum(op.flops for op in w.ops if op.kind in ("conv", "matmul")) / 2 / w.batch == pytest.approx(
        300e6, rel=0.01)


def test_attention_is_one_op_per_layer(counted):
    bert = counted["bert_large"]
    assert sum(op.kind == "attention" for op in bert.ops) == 24
    assert not any(op.kind == "softmax" or op.name == "aten.bmm" for op in bert.ops)
    # BERT-Large, batch 2, sequence 128, per layer: QK^T and PV, each 2 * (2*16) * 128 * 128 * 64 operations:
    # 2 * 2 * 32 * 128 * 128 * 64 = 134,217,728
    assert sum(op.flops for op in bert.ops if op.kind == "attention") == 24 * 134_217_728


def test_fp16_halves_bytes_not_operations(counted):
    w16 = count(EXAMPLES / "gpt2.py", batch=2, dtype="fp16")
    w32 = counted["gpt2"]
    assert w16.flops == w32.flops
    float_ops = [(a, b) for a, b in zip(w16.ops, w32.ops, strict=True) if a.kind in ("matmul", "norm")]
    assert all(a.bytes * 2 == b.bytes for a, b in float_ops)


def _llama():
    spec = importlib.util.spec_from_file_location("llama_example", EXAMPLES / "llama2_70b.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_70b_transformer_counts_on_the_meta_device():
    # fp32 weights of 69B parameters would be 276 GB: this only passes because nothing is materialised.
    w = count(EXAMPLES / "llama2_70b.py", batch=1, dtype="fp16")
    assert w.params == 68_976_648_192
    assert w.unsupported_ops == {}
    # Linear weights: all parameters minus the embedding (32000*8192) and 161 RMSNorm weights of 8192.
    linear = 68_976_648_192 - 32_000 * 8192 - 161 * 8192
    assert sum(op.flops for op in w.ops if op.kind == "matmul") == 2 * 128 * linear
    # Causal attention, 80 layers: 2 matmuls of 2 * 64 heads * head dim 128 per query-key pair kept,
    # 128 * 129 / 2 = 8256 pairs (query i sees keys 0..i).
    assert sum(op.flops for op in w.ops if op.kind == "attention") == 80 * 2 * 2 * 64 * 128 * (128 * 129 // 2)
    assert w.param_bytes == 2 * 68_976_648_192


def test_small_llama_config_counts_on_real_tensors():
    """The same decoder, built small and for real, counted through fake tensors: GQA attention once per layer."""
    mod = _llama()
    cfg = mod.LlamaConfig(hidden=64, layers=2, heads=4, kv_heads=2, ffn=128, vocab=100, sequence=16)
    from tops_advisor.counting import count_module

    w = count_module(mod.build_model(cfg), mod.example_inputs(3, cfg))
    assert w.unsupported_ops == {} and w.batch == 3
    attention = [op for op in w.ops if op.kind == "attention"]
    assert len(attention) == 2
    # q (3, 4, 16, 16), k/v (3, 2, 16, 16): 2 matmuls of 2 * (3*4) * head dim 16 per causal pair,
    # 16 * 17 / 2 = 136 pairs
    assert attention[0].flops == 2 * 2 * 3 * 4 * 16 * 136
    assert attention[0].bytes_read == (3 * 4 * 16 * 16 + 2 * 3 * 2 * 16 * 16) * 4


def test_convnext_tiny_parameter_count_matches_the_paper():
    model = load_model_file("examples/convnext_tiny.py").build(meta=True)
    params = sum(p.numel() for p in model.parameters())
    # by hand, widths (96, 192, 384, 768), depths (3, 3, 9, 3):
    #   block(d) = dw 7x7 (49d + d) + LN (2d) + d->4d (4d^2 + 4d) + 4d->d (4d^2 + d) + gamma (d) = 8d^2 + 58d
    #   stem = 3*96*16 + 96 (conv 4x4) + 2*96 (LN) = 4896
    #   downsample(a->b) = LN (2a) + conv 2x2 (4ab + b)
    #   head = LN (2*768) + 768*1000 + 1000
    def block(d):
        return 8 * d * d + 58 * d

    expected = (4896 + 3 * block(96) + (2 * 96 + 4 * 96 * 192 + 192) + 3 * block(192)
                + (2 * 192 + 4 * 192 * 384 + 384) + 9 * block(384) + (2 * 384 + 4 * 384 * 768 + 768)
                + 3 * block(768) + 2 * 768 + 768 * 1000 + 1000)
    assert params == expected == 28_589_128
    # published: 28.6M (Liu et al. 2022, Table 1; torchvision lists 28,589,128): within 2%
    assert abs(params - 28.6e6) / 28.6e6 < 0.02
