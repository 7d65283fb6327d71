"""The third blind held-out set (DenseNet-121, MLP-Mixer-B/16, the T5-small encoder): parameter counts and
operation counts, each counted through ``tops-advisor count --strict --json``.

Only building and counting is tested here: these files are never run through the predictor in tests, so
that docs/accuracy.md can use them as a set it was not tuned on."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from tests.blind_support import check_strict_count, count_strict, load_example, ops_by_kind

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
NAMES = ("densenet121", "mlp_mixer_b16", "t5_small_encoder")
BATCH = 2
MATRIX_KINDS = ("conv", "matmul", "attention")
SDPA = "aten.scaled_dot_product_attention"


def _densenet121_by_hand() -> tuple[int, int]:
    """(parameters, multiply-adds per image) of DenseNet-121, layer by layer. BatchNorm has 2 parameters per
    channel (its running statistics are buffers); convolutions have no bias."""
    params = 3 * 64 * 7 * 7 + 2 * 64                       # stem conv 7x7 and its BatchNorm
    macs = 112 * 112 * 64 * 3 * 7 * 7                      # stem at 112x112 = 118,013,952
    channels, size = 64, 56                                # after the 3x3 stride-2 max pool
    for i, layers in enumerate((6, 12, 24, 16)):
        for layer in range(layers):
            cin = channels + 32 * layer
            # BN(cin), conv 1x1 cin -> 128, BN(128), conv 3x3 128 -> 32
            params += 2 * cin + cin * 128 + 2 * 128 + 128 * 32 * 3 * 3
            macs += size * size * (cin * 128 + 128 * 32 * 3 * 3)
        channels += 32 * layers                            # 256, 512, 1024, 1024
        if i < 3:                                          # transition: BN, conv 1x1 c -> c/2, then pool
            params += 2 * channels + channels * (channels // 2)
            macs += size * size * channels * (channels // 2)
            channels, size = channels // 2, size // 2
    params += 2 * channels + channels * 1000 + 1000        # final BN, classifier 1024 -> 1000
    macs += channels * 1000
    return params, macs


DENSENET_PARAMS, DENSENET_MACS = _densenet121_by_hand()

PARAMS = {
    "densenet121": 7_978_856,                              # torchvision densenet121
    # Mixer-B/16: stem + 12 x (2 LayerNorms + token MLP 196-384-196 + channel MLP 768-3072-768) + LN + head
    "mlp_mixer_b16": (768 * 3 * 16 * 16 + 768)             # 590,592
                     + 12 * (2 * 2 * 768                   # 3,072
                             + 196 * 384 + 384 + 384 * 196 + 196     # 151,108
                             + 768 * 3072 + 3072 + 3072 * 768 + 768)  # 4,722,432 -> 4,876,612 per layer
                     + 2 * 768                             # 1,536
                     + 768 * 1000 + 1000,                  # 769,000 -> 59,880,472
    # T5-small encoder: shared embedding + 6 x (q, k, v, o + wi, wo + 2 RMS norms) + bias table + final norm
    "t5_small_encoder": 32128 * 512                        # 16,449,536
                        + 6 * (4 * 512 * 512 + 2 * 512 * 2048 + 2 * 512)  # 3,146,752 per block
                        + 32 * 8                           # relative attention bias, first block only
                        + 512,                             # final norm -> 35,330,816
}


def _module(name: str):
    return load_example(name, "blind3")


@pytest.fixture(scope="module")
def counted():
    return count_strict(NAMES, BATCH)


def _ops_by_kind(workload: dict) -> dict[str, float]:
    return ops_by_kind(workload, BATCH, MATRIX_KINDS)


def test_parameter_derivations():
    assert DENSENET_PARAMS == PARAMS["densenet121"] == 7_978_856
    assert PARAMS["mlp_mixer_b16"] == 59_880_472
    assert PARAMS["t5_small_encoder"] == 35_330_816
    assert PARAMS["t5_small_encoder"] - 32128 * 512 == 18_881_280   # the encoder without its embedding


@pytest.mark.parametrize("name", NAMES)
def test_parameter_counts_match_published(counted, name):
    assert counted[name]["params"] == PARAMS[name]


@pytest.mark.parametrize("name", NAMES)
def test_counts_strictly_with_no_unsupported_operator(counted, name):
    check_strict_count(counted[name], PARAMS[name], BATCH)


def test_densenet121_is_2_87_gmacs(counted):
    """timm lists densenet121 at 2.87 GMACs, torchvision at 2.83 (convolutions and classifier only): 224x224,
    ~5.7 G operations per image."""
    w = counted["densenet121"]
    assert DENSENET_MACS == 2_834_161_664
    assert w["flops"] / BATCH == pytest.approx(2 * 2.87e9, rel=0.03)
    assert _ops_by_kind(w) == {"conv": 2 * (DENSENET_MACS - 1024 * 1000), "matmul": 2 * 1024 * 1000,
                               "attention": 0}
    # One concatenation per dense layer (its input) and one per block (its output): 58 + 4.
    assert sum(op["name"] == "aten.cat" for op in w["ops"]) == 58 + 4


def test_densenet121_matches_flop_counter_mode(counted):
    """torch's FlopCounterMode on a real forward (2 per multiply-add, like us) agrees on conv and linear."""
    mod = _module("densenet121")
    model = mod.build_model().eval()
    mode = FlopCounterMode(display=False)
    with torch.no_grad(), mode:
        out = model(mod.example_inputs(1))
    assert out.shape == (1, 1000)
    theirs = {str(k): v for k, v in mode.get_flop_counts()["Global"].items()}
    ours = _ops_by_kind(counted["densenet121"])
    assert ours["conv"] + ours["matmul"] == theirs["aten.convolution"] + theirs["aten.addmm"] == 2 * DENSENET_MACS


def test_mlp_mixer_b16_is_12_6_gmacs(counted):
    """The paper (Table 1) gives parameters, not FLOPs; 12.6 G is timm's figure for mixer_b16_224 and it is
    multiply-adds: derived here, 12.60 GMACs = 25.2 G operations per image."""
    w = counted["mlp_mixer_b16"]
    stem_macs = 196 * 768 * (3 * 16 * 16)                                    # 115,605,504
    token_macs = 768 * (196 * 384 + 384 * 196)                               # 115,605,504 per layer
    channel_macs = 196 * (768 * 3072 + 3072 * 768)                           # 924,844,032 per layer
    linear_macs = 12 * (token_macs + channel_macs) + 768 * 1000              # 12,486,162,432
    assert stem_macs + linear_macs == 12_601_767_936
    assert _ops_by_kind(w) == {"conv": 2 * stem_macs, "matmul": 2 * linear_macs, "attention": 0}
    assert w["flops"] / BATCH == pytest.approx(2 * 12.6e9, rel=0.03)
    # Token mixing runs on the transposed (batch * 768 channels, 196 tokens) matrix: 196 -> 384 -> 196.
    token_fc1 = [op for op in w["ops"] if op["gemm"] and op["gemm"]["m"] == BATCH * 768
                 and op["gemm"]["n"] == 384 and op["gemm"]["k"] == 196]
    assert len(token_fc1) == 12


def test_t5_small_encoder_operations(counted):
    """No published figure: derived by hand, per sequence of 512 tokens."""
    w = counted["t5_small_encoder"]
    linear_macs = 6 * 512 * (4 * 512 * 512 + 2 * 512 * 2048)                 # 9,663,676,416
    attention_macs = 6 * 2 * 8 * 512 * 512 * 64                              # QK^T and PV: 1,610,612,736
    sdpa = [op for op in w["ops"] if op["name"] == SDPA]
    assert len(sdpa) == 6
    # With a float attn_mask (the position bias) PyTorch runs its math path (profiled on the H200); the
    # counter counts it kernel by kernel: a zero-cost attention marker per block, QK^T and PV as two fp32
    # bmm (the math path upcasts fp16), the mask add and the safe softmax.
    assert all(op["kind"] == "attention" and op["flops"] == 0 and op["kernels"] == 0 for op in sdpa)
    bmm = [op for op in w["ops"] if op["name"] == "aten.bmm"]
    assert len(bmm) == 12
    assert sum(op["flops"] for op in bmm) / BATCH == 2 * attention_macs
    ops = _ops_by_kind(w)
    assert ops["conv"] == 0
    assert ops["matmul"] == 2 * (linear_macs + attention_macs)
    assert 2 * (linear_macs + attention_macs) == 22_548_578_304               # ~22.5 G operations
    # The embedding is a gather: no arithmetic, and only the rows used are read.
    embeddings = [op for op in w["ops"] if op["kind"] == "embedding"]
    assert len(embeddings) == 2 and all(op["flops"] == 0 for op in embeddings)


def test_t5_relative_position_buckets():
    mod = _module("t5_small_encoder")
    offsets = torch.tensor([0, 1, -1, 7, -7, -8, -16, -32, -64, -127, -128, -1000, 1000])
    # Keys after the query (offset > 0) go to buckets 16..31; |offset| < 8 is exact; beyond it,
    # 8 + floor(log(|offset| / 8) / log(128 / 8) * 8), capped at 15: -16 -> 8 + 2, -32 -> 12, -64 -> 14.
    expected = [0, 17, 1, 23, 7, 8, 10, 12, 14, 15, 15, 15, 31]
    assert mod.relative_position_bucket(offsets).tolist() == expected
    assert 8 + math.floor(math.log(127 / 8) / math.log(16) * 8) == 15


def test_t5_bias_is_computed_once_and_norm_is_rms():
    mod = _module("t5_small_encoder")
    model = mod.build_model().eval()
    assert [block.attention.relative_attention_bias is not None for block in model.blocks] == [True] + [False] * 5
    bias = model.blocks[0].attention.compute_bias(16, torch.device("cpu"))
    assert bias.shape == (1, 8, 16, 16)
    assert torch.equal(bias[0, :, 3, 5], bias[0, :, 10, 12])     # same offset (+2), same bias
    norm = mod.T5LayerNorm(4)
    x = torch.tensor([[1.0, 1.0, 1.0, 5.0]])                       # mean 2, mean of squares 7
    assert torch.allclose(norm(x), x / math.sqrt(7 + 1e-6))       # no mean subtraction, no bias
    with torch.no_grad():
        out = model(mod.example_inputs(1)[:, :32])
    assert out.shape == (1, 32, 512)


def test_mixer_shapes():
    mod = _module("mlp_mixer_b16")
    model = mod.build_model().eval()
    layer = model.layers[0]
    assert (layer.token_mixing.fc1.in_features, layer.token_mixing.fc1.out_features) == (196, 384)
    assert (layer.channel_mixing.fc1.in_features, layer.channel_mixing.fc1.out_features) == (768, 3072)
    with torch.no_grad():
        assert model(mod.example_inputs(1)).shape == (1, 1000)
