"""The fourth blind held-out set (ResNeXt-50 32x4d, DistilBERT-base with a padding mask, the wav2vec 2.0 base
encoder): parameter counts and operation counts, each counted through ``tops-advisor count --strict --json``.

Only building and counting is tested here: these files are never run through the predictor in tests, so
that docs/accuracy.md can use them as a set it was not tuned on."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from tests.blind_support import check_strict_count, count_strict, load_example

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
NAMES = ("resnext50", "distilbert_masked", "wav2vec2_base")
BATCH = 2
MATRIX_KINDS = ("conv", "matmul", "attention")
SDPA = "aten.scaled_dot_product_attention"


def _resnext50_by_hand() -> tuple[int, int]:
    """(parameters, multiply-adds per image) of ResNeXt-50 32x4d, block by block. BatchNorm has 2 parameters
    per channel (its running statistics are buffers); convolutions have no bias."""
    params = 3 * 64 * 7 * 7 + 2 * 64                       # stem conv 7x7 and its BatchNorm
    macs = 112 * 112 * 64 * 3 * 7 * 7                      # stem at 112x112 = 118,013,952
    cin, size = 64, 56                                     # after the 3x3 stride-2 max pool
    for stage, (blocks, width) in enumerate(zip((3, 4, 6, 3), (128, 256, 512, 1024), strict=True)):
        out = 2 * width                                    # 256, 512, 1024, 2048
        for block in range(blocks):
            size_in = size
            if block == 0 and stage > 0:
                size //= 2                                 # stride 2 on the 3x3 conv and the shortcut
            # conv 1x1 cin -> w, BN(w), grouped conv 3x3 (32 groups of w/32), BN(w), conv 1x1 w -> 2w, BN(2w)
            params += cin * width + 2 * width + width * (width // 32) * 9 + 2 * width + width * out + 2 * out
            macs += size_in * size_in * cin * width + size * size * (width * (width // 32) * 9 + width * out)
            if block == 0:                                 # projection shortcut: conv 1x1 cin -> 2w, BN(2w)
                params += cin * out + 2 * out
                macs += size * size * cin * out
            cin = out
    params += 2048 * 1000 + 1000                           # classifier
    macs += 2048 * 1000
    return params, macs


RESNEXT_PARAMS, RESNEXT_MACS = _resnext50_by_hand()

PARAMS = {
    "resnext50": 25_028_904,                               # torchvision resnext50_32x4d
    # DistilBERT: word + position embeddings + LN, 6 x (q, k, v, out + FFN 768-3072-768 + 2 LNs)
    "distilbert_masked": 30522 * 768 + 512 * 768 + 2 * 768          # 23,835,648
                         + 6 * (4 * (768 * 768 + 768)               # 2,362,368
                                + 768 * 3072 + 3072 + 3072 * 768 + 768  # 4,722,432
                                + 2 * 2 * 768),                     # 3,072 -> 7,087,872 per layer
    # wav2vec 2.0 base: conv feature encoder (no bias) + GroupNorm, projection LN + Linear, positional conv
    # (16 groups, with bias), encoder LN, 12 x the DistilBERT-sized layer above
    "wav2vec2_base": 512 * 10 + 2 * 512 + 4 * 512 * 512 * 3 + 2 * 512 * 512 * 2   # 4,200,448
                     + 2 * 512 + 512 * 768 + 768                                   # 395,008
                     + 768 * (768 // 16) * 128 + 768                               # 4,719,360
                     + 2 * 768                                                     # 1,536
                     + 12 * 7_087_872,                                             # 85,054,464
}


def _module(name: str):
    return load_example(name, "blind4")


@pytest.fixture(scope="module")
def counted():
    return count_strict(NAMES, BATCH)


def _ops_by_kind(workload: dict) -> dict[str, float]:
    """Operations per item of each matrix kind."""
    return {kind: sum(op["flops"] for op in workload["ops"] if op["kind"] == kind) / BATCH
            for kind in MATRIX_KINDS}


def test_parameter_derivations():
    assert RESNEXT_PARAMS == PARAMS["resnext50"] == 25_028_904
    assert PARAMS["distilbert_masked"] == 66_362_880                 # "66M"; Hugging Face 66.36M
    assert PARAMS["wav2vec2_base"] == 94_370_816
    # Hugging Face's Wav2Vec2Model adds the weight norm's magnitude (1, 1, 128) and masked_spec_embed (768).
    assert PARAMS["wav2vec2_base"] + 128 + 768 == 94_371_712


@pytest.mark.parametrize("name", NAMES)
def test_parameter_counts_match_published(counted, name):
    assert counted[name]["params"] == PARAMS[name]


@pytest.mark.parametrize("name", NAMES)
def test_counts_strictly_with_no_unsupported_operator(counted, name):
    check_strict_count(counted[name], PARAMS[name], BATCH)


def test_resnext50_is_4_26_gmacs(counted):
    """The paper (Table 1) and torchvision give 4.2 / 4.26 GFLOPS, which are multiply-adds: ~8.5 G operations
    per image at 224x224."""
    w = counted["resnext50"]
    assert RESNEXT_MACS == 4_230_479_872
    assert w["flops"] / BATCH == pytest.approx(2 * 4.26e9, rel=0.03)
    assert _ops_by_kind(w) == {"conv": 2 * (RESNEXT_MACS - 2048 * 1000), "matmul": 2 * 2048 * 1000,
                               "attention": 0}
    # 53 convolutions: the stem, 3 per block x 16 blocks and 4 projection shortcuts; the 16 3x3 convolutions
    # are grouped (32 groups each).
    convs = [op for op in w["ops"] if op["name"] == "aten.convolution"]
    assert len(convs) == 1 + 3 * 16 + 4
    assert sum(op["gemm"]["batch"] == 32 for op in convs) == 16


def test_resnext50_matches_flop_counter_mode(counted):
    """torch's FlopCounterMode on a real forward (2 per multiply-add, like us) agrees on conv and linear."""
    mod = _module("resnext50")
    model = mod.build_model().eval()
    mode = FlopCounterMode(display=False)
    with torch.no_grad(), mode:
        out = model(mod.example_inputs(1))
    assert out.shape == (1, 1000)
    theirs = {str(k): v for k, v in mode.get_flop_counts()["Global"].items()}
    ours = _ops_by_kind(counted["resnext50"])
    assert ours["conv"] + ours["matmul"] == theirs["aten.convolution"] + theirs["aten.addmm"] == 2 * RESNEXT_MACS


def test_distilbert_operations_and_mask(counted):
    """No published figure: derived by hand, per sequence of 128 tokens (padded positions are computed too)."""
    w = counted["distilbert_masked"]
    linear_macs = 6 * 128 * (4 * 768 * 768 + 2 * 768 * 3072)                # 5,435,817,984
    attention_macs = 6 * 2 * 12 * 128 * 128 * 64                            # QK^T and PV: 150,994,944
    assert linear_macs + attention_macs == 5_586_812_928                     # ~11.2 G operations
    sdpa = [op for op in w["ops"] if op["name"] == SDPA]
    assert len(sdpa) == 6
    # With a mask, the counter either counts PyTorch's math path kernel by kernel (bmm, mask add, safe softmax,
    # bmm) beside a zero-cost SDPA marker, or one matmul-kind SDPA record that adds 5 operations per score for
    # the mask and softmax, or one fused attention-kind record (QK^T and PV only).
    sdpa_flops = sum(op["flops"] for op in sdpa) / BATCH
    one_record_math_path = any(op["kind"] == "matmul" and op["flops"] > 0 for op in sdpa)
    score_ops = 6 * 5 * 12 * 128 * 128 if one_record_math_path else 0        # 5,898,240
    ops = _ops_by_kind(w)
    assert ops["conv"] == 0
    assert ops["matmul"] + ops["attention"] == 2 * (linear_macs + attention_macs) + score_ops
    if sdpa_flops == 0:                                                      # decomposed: 2 bmm per layer
        bmm = [op for op in w["ops"] if op["name"] == "aten.bmm"]
        assert len(bmm) == 12 and all(op["gemm"]["batch"] == BATCH * 12 for op in bmm)
        assert sum(op["flops"] for op in bmm) / BATCH == 2 * attention_macs
    else:
        assert sdpa_flops == 2 * attention_macs + score_ops
    # The mask is (batch, 1, 1, seq), not a (batch, heads, seq, seq) tensor: no op writes more than that from
    # the boolean mask, and the attention mask's bytes stay tiny beside the scores.
    masks = [op for op in w["ops"] if op["name"] == "aten.ne"]
    assert len(masks) == 1 and masks[0]["bytes_written"] == BATCH * 128   # one bool per (item, key)
    embeddings = [op for op in w["ops"] if op["kind"] == "embedding"]
    assert len(embeddings) == 2 and all(op["flops"] == 0 for op in embeddings)


def test_distilbert_padding_is_ignored():
    """Every second sequence has 32 padded keys; changing their tokens leaves the real positions unchanged,
    and the unpadded sequences are untouched by the mask."""
    mod = _module("distilbert_masked")
    torch.manual_seed(0)
    model = mod.build_model().eval()
    input_ids, attention_mask = mod.example_inputs(4)
    assert attention_mask.sum(dim=1).tolist() == [128, 96, 128, 96]
    other = input_ids.clone()
    other[1::2, 96:] = (other[1::2, 96:] + 1) % mod.VOCAB
    with torch.no_grad():
        a = model(input_ids, attention_mask)
        b = model(other, attention_mask)
    assert a.shape == (4, 128, 768)
    assert torch.allclose(a[1::2, :96], b[1::2, :96], atol=1e-5)
    assert torch.allclose(a[0::2], b[0::2], atol=1e-6)
    assert not torch.allclose(a[1::2, 96:], b[1::2, 96:])       # padded positions still computed


def test_wav2vec2_base_operations(counted):
    """No published figure: derived by hand, per 1 s of 16 kHz audio (49 frames)."""
    w = counted["wav2vec2_base"]
    # Frames after each conv: (L - kernel) // stride + 1, from 16000 samples.
    frames = [16000]
    for kernel, stride in zip((10, 3, 3, 3, 3, 2, 2), (5, 2, 2, 2, 2, 2, 2), strict=True):
        frames.append((frames[-1] - kernel) // stride + 1)
    assert frames[1:] == [3199, 1599, 799, 399, 199, 99, 49]
    feature_macs = 3199 * 512 * 10 + (1599 + 799 + 399 + 199) * 512 * 512 * 3 + (99 + 49) * 512 * 512 * 2
    assert feature_macs == 2_450_123_776
    position_macs = 50 * 768 * 48 * 128          # 49 + 2*64 - 128 + 1 = 50 frames before the last is dropped
    linear_macs = 49 * 512 * 768 + 12 * 49 * (4 * 768 * 768 + 2 * 768 * 3072)   # 4,181,065,728
    attention_macs = 12 * 2 * 12 * 49 * 49 * 64                                  # 44,255,232
    ops = _ops_by_kind(w)
    assert ops["conv"] == 2 * (feature_macs + position_macs)                     # 5.37 G operations
    assert ops["matmul"] + ops["attention"] == 2 * (linear_macs + attention_macs)
    sdpa = [op for op in w["ops"] if op["name"] == SDPA]
    assert len(sdpa) == 12 and sum(op["flops"] for op in sdpa) / BATCH == 2 * attention_macs
    total_macs = feature_macs + position_macs + linear_macs + attention_macs
    assert total_macs == 6_911_374_336                                           # ~13.8 G operations
    assert w["flops"] / BATCH == pytest.approx(2 * total_macs, rel=0.01)         # + norms, GELU, adds
    assert sum(op["name"] == "aten.native_group_norm" for op in w["ops"]) == 1


def test_wav2vec2_shapes():
    mod = _module("wav2vec2_base")
    model = mod.build_model().eval()
    conv = model.pos_conv_embed.conv
    assert (conv.kernel_size, conv.padding, conv.groups, conv.weight.shape) == ((128,), (64,), 16, (768, 48, 128))
    assert all(c.bias is None for c in model.feature_extractor.convs)
    with torch.no_grad():
        assert model(mod.example_inputs(1)).shape == (1, 49, 768)
