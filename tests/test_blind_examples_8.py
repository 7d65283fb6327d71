"""The eighth blind held-out set (MobileNetV3-Large, ResNet-50-FPN, BART-base, DiT-S/2): parameter counts and
operation counts, each counted through ``tops-advisor count --strict --json``.

Only building and counting is tested here: these files are never run through the predictor in tests, so
that docs/accuracy.md can use them as a set it was not tuned on."""

from __future__ import annotations

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from tests.blind_support import check_strict_count, count_strict, load_example, ops_by_kind

NAMES = ("mobilenetv3_large", "resnet50_fpn", "bart_base", "dit_s2")
BATCH = 2
MATRIX_KINDS = ("conv", "matmul", "attention")
SDPA = "aten.scaled_dot_product_attention"


def _bn(channels: int) -> int:
    return 2 * channels                                    # BatchNorm weight + bias; running stats are buffers


# (input, kernel, expanded, output, squeeze-and-excitation width or 0, stride): torchvision's
# mobilenet_v3_large table; SE width = _make_divisible(expanded / 4, 8): 72/4 = 18 rounds to 16, which is
# more than 10% down, so 24; 120/4 = 30 -> 32; 480/4, 672/4, 960/4 are already multiples of 8.
MOBILENET_BLOCKS = ((16, 3, 16, 16, 0, 1), (16, 3, 64, 24, 0, 2), (24, 3, 72, 24, 0, 1), (24, 5, 72, 40, 24, 2),
                    (40, 5, 120, 40, 32, 1), (40, 5, 120, 40, 32, 1), (40, 3, 240, 80, 0, 2),
                    (80, 3, 200, 80, 0, 1), (80, 3, 184, 80, 0, 1), (80, 3, 184, 80, 0, 1),
                    (80, 3, 480, 112, 120, 1), (112, 3, 672, 112, 168, 1), (112, 5, 672, 160, 168, 2),
                    (160, 5, 960, 160, 240, 1), (160, 5, 960, 160, 240, 1))


def _mobilenetv3_by_hand() -> tuple[int, int, int]:
    """(parameters, multiply-adds of the convolutions per image, convolutions) of MobileNetV3-Large at 224."""
    size = 112                                             # stem Conv3x3 stride 2
    params, macs, convs = 3 * 16 * 9 + _bn(16), size * size * 3 * 16 * 9, 1
    for cin, k, e, cout, s, stride in MOBILENET_BLOCKS:
        out = size // stride                               # padding k // 2: 112 -> 56 -> 28 -> 14 -> 7
        if e != cin:                                       # 1x1 expansion (not in the first block)
            params += cin * e + _bn(e)
            macs += size * size * cin * e
            convs += 1
        params += e * k * k + _bn(e)                       # depthwise
        macs += out * out * e * k * k
        if s:                                              # SE: two 1x1 with bias on the pooled vector
            params += e * s + s + s * e + e
            macs += e * s + s * e
            convs += 2
        params += e * cout + _bn(cout)                     # 1x1 projection
        macs += out * out * e * cout
        convs += 2
        size = out
    assert size == 7
    params += 160 * 960 + _bn(960) + 960 * 1280 + 1280 + 1280 * 1000 + 1000   # head conv, two linears
    return params, macs + size * size * 160 * 960, convs + 1


def _resnet50_params() -> int:
    """ResNet-50 with its 2048 -> 1000 classifier (torchvision's published 25,557,032)."""
    params, cin = 3 * 64 * 49 + _bn(64), 64
    for width, blocks in ((64, 3), (128, 4), (256, 6), (512, 3)):
        out = 4 * width
        for i in range(blocks):
            c = cin if i == 0 else out
            params += c * width + _bn(width) + width * width * 9 + _bn(width) + width * out + _bn(out)
            if i == 0:
                params += c * out + _bn(out)               # projection shortcut
        cin = out
    return params + 2048 * 1000 + 1000


def _resnet50_fpn_by_hand(size: int) -> tuple[int, int, int, int]:
    """(parameters, backbone multiply-adds, FPN multiply-adds, convolutions) of ResNet-50-FPN at size x size
    (a multiple of 32), all convolutions."""
    params = _resnet50_params() - (2048 * 1000 + 1000)    # no classifier
    h = size // 2
    macs, convs = h * h * 3 * 64 * 49, 1                   # stem 7x7 stride 2
    h //= 2                                                # max pool
    cin, levels = 64, []
    for width, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
        out = 4 * width
        for i in range(blocks):
            c = cin if i == 0 else out
            h_out = h // stride if i == 0 else h
            macs += h * h * c * width + h_out * h_out * (width * width * 9 + width * out)
            convs += 3
            if i == 0:
                macs += h_out * h_out * c * out
                convs += 1
            h = h_out
        levels.append((out, h))
        cin = out
    params += sum(c * 256 + 256 + 256 * 256 * 9 + 256 for c, _ in levels)   # lateral 1x1 + output 3x3, biases
    fpn_macs = sum(h * h * (c * 256 + 256 * 256 * 9) for c, h in levels)
    return params, macs, fpn_macs, convs + 8


# BART-base: an attention block (q, k, v, out with biases + LayerNorm), a feed-forward block (+ LayerNorm).
BART_ATTN = 4 * (768 * 768 + 768) + 2 * 768
BART_FFN = 768 * 3072 + 3072 + 3072 * 768 + 768 + 2 * 768
BART_PARAMS = (50265 * 768 + 2 * 1026 * 768 + 2 * 2 * 768      # shared embedding, 2 positional, 2 embedding LNs
               + 6 * (BART_ATTN + BART_FFN) + 6 * (2 * BART_ATTN + BART_FFN))
SRC, TGT = 256, 64
BART_LAYER_MACS = 4 * 768 * 768 + 2 * 768 * 3072           # per token of a self-attention + FFN layer
BART_LINEAR_MACS = (SRC * 6 * BART_LAYER_MACS + TGT * 6 * BART_LAYER_MACS
                    + TGT * 6 * 2 * 768 * 768 + SRC * 6 * 2 * 768 * 768     # cross-attention q, out; k, v
                    + TGT * 768 * 50265)                                    # tied logits
BART_ATTENTION_MACS = (6 * 12 * 2 * SRC * SRC * 64          # encoder
                       + 6 * 12 * 2 * TGT * TGT * 64 // 2   # decoder self, causal: the counter takes half
                       + 6 * 12 * 2 * TGT * SRC * 64)       # cross

# DiT-S/2: per block qkv, proj, MLP, adaLN (6 x 384) with biases; LayerNorms have no affine parameters.
DIT_BLOCK = (384 * 1152 + 1152) + (384 * 384 + 384) + (384 * 1536 + 1536) + (1536 * 384 + 384) + (384 * 2304 + 2304)
DIT_PARAMS = (4 * 384 * 2 * 2 + 384                         # patch embedding
              + 256 * 384 + 384 + 384 * 384 + 384           # timestep MLP
              + 1001 * 384                                  # 1000 classes + the null class
              + 12 * DIT_BLOCK
              + 384 * 768 + 768 + 384 * 32 + 32)            # final adaLN, final linear 384 -> 2*2*8
TOKENS = 256
DIT_CONV_MACS = TOKENS * 4 * 384 * 2 * 2
DIT_LINEAR_MACS = (256 * 384 + 384 * 384                    # timestep MLP, once per sample
                   + TOKENS * 12 * (384 * 1152 + 384 * 384 + 2 * 384 * 1536)
                   + 12 * 384 * 2304 + 384 * 768            # adaLN, once per sample
                   + TOKENS * 384 * 32)
DIT_ATTENTION_MACS = 12 * 6 * 2 * TOKENS * TOKENS * 64

MOBILENET_PARAMS, MOBILENET_CONV_MACS, MOBILENET_CONVS = _mobilenetv3_by_hand()
FPN_PARAMS, FPN_BACKBONE_MACS, FPN_MACS, FPN_CONVS = _resnet50_fpn_by_hand(800)

PARAMS = {
    "mobilenetv3_large": 5_483_032,                        # torchvision mobilenet_v3_large
    # torchvision resnet_fpn_backbone('resnet50') is 26,799,296 with FrozenBatchNorm2d, whose weight and bias
    # are buffers; ordinary BatchNorm2d adds 2 x 26,560 channels
    "resnet50_fpn": 26_799_296 + 53_120,
    "bart_base": 139_420_416,                              # HF facebook/bart-base, shared embedding once
    "dit_s2": 32_865_056,                                  # DiT's 32,963,360 less the 256 x 384 pos_embed
}


def _module(name: str):
    return load_example(name, "blind8")


@pytest.fixture(scope="module")
def counted():
    return count_strict(NAMES, BATCH)


def _ops_by_kind(workload: dict) -> dict[str, float]:
    return ops_by_kind(workload, BATCH, MATRIX_KINDS)


def _flop_counter_mode(name: str, *input_args):
    """A real fp32 forward at batch 1 under torch's FlopCounterMode (2 per multiply-add, like us)."""
    mod = _module(name)
    torch.manual_seed(0)
    model = mod.build_model()
    assert not model.training
    inputs = mod.example_inputs(1, *input_args)
    inputs = inputs if isinstance(inputs, tuple) else (inputs,)
    mode = FlopCounterMode(display=False)
    with torch.no_grad(), mode:
        out = model(*inputs)
    for t in out if isinstance(out, tuple) else (out,):
        assert torch.isfinite(t).all()
    return out, {str(k): v for k, v in mode.get_flop_counts()["Global"].items()}


def test_parameter_derivations():
    assert MOBILENET_PARAMS == PARAMS["mobilenetv3_large"]
    assert _resnet50_params() == 25_557_032                # torchvision resnet50
    bn_channels = 64 + 3 * (64 + 64 + 256) + 256 + 4 * (128 + 128 + 512) + 512 \
        + 6 * (256 + 256 + 1024) + 1024 + 3 * (512 + 512 + 2048) + 2048
    assert bn_channels == 26_560
    assert FPN_PARAMS == PARAMS["resnet50_fpn"] == 26_852_416
    assert FPN_PARAMS - _bn(bn_channels) == 26_799_296     # torchvision, FrozenBatchNorm2d
    assert BART_PARAMS == PARAMS["bart_base"]              # the published ~139M
    assert DIT_PARAMS == PARAMS["dit_s2"]
    assert DIT_PARAMS + 256 * 384 == 32_963_360            # DiT's count with pos_embed as a Parameter
    assert round(DIT_PARAMS / 1e6) == 33                   # the paper's "33M"


@pytest.mark.parametrize("name", NAMES)
def test_parameter_counts(counted, name):
    assert counted[name]["params"] == PARAMS[name]


@pytest.mark.parametrize("name", NAMES)
def test_counts_strictly_with_no_unsupported_operator(counted, name):
    check_strict_count(counted[name], PARAMS[name], BATCH)


def test_mobilenetv3_large_is_0_22_gmacs(counted):
    """torchvision lists 0.22 GFLOPS (multiply-adds) for mobilenet_v3_large at 224x224."""
    w = counted["mobilenetv3_large"]
    linear_macs = 960 * 1280 + 1280 * 1000
    assert (MOBILENET_CONV_MACS, linear_macs) == (214_080_960, 2_508_800)
    assert round((MOBILENET_CONV_MACS + linear_macs) / 1e9, 2) == 0.22
    assert _ops_by_kind(w) == {"conv": 2 * MOBILENET_CONV_MACS, "matmul": 2 * linear_macs, "attention": 0}
    convs = [op for op in w["ops"] if op["name"] == "aten.convolution"]
    assert len(convs) == MOBILENET_CONVS == 1 + 2 + 14 * 3 + 8 * 2 + 1 == 62
    depthwise = sorted(op["gemm"]["batch"] for op in convs if op["gemm"]["batch"] > 1)   # one group per channel
    assert depthwise == sorted(cfg[2] for cfg in MOBILENET_BLOCKS)
    assert sum(op["name"] == "aten.hardsigmoid_" for op in w["ops"]) == 8             # one per SE
    # hardswish: stem, the 9 HS blocks (expansion and depthwise), head conv, classifier
    assert sum(op["name"] == "aten.hardswish_" for op in w["ops"]) == 1 + 9 * 2 + 1 + 1
    assert sum(op["name"] == "aten.native_batch_norm" for op in w["ops"]) == 1 + 2 + 14 * 3 + 1
    out, theirs = _flop_counter_mode("mobilenetv3_large")
    assert out.shape == (1, 1000)
    assert theirs == {"aten.convolution": 2 * MOBILENET_CONV_MACS, "aten.addmm": 2 * linear_macs}


def test_resnet50_fpn_is_88_4_gmacs(counted):
    """88.4 GMACs at 800x800, all convolutions: the backbone and the FPN (laterals on 200, 100, 50, 25, and a
    3x3 256 -> 256 output on each level)."""
    w = counted["resnet50_fpn"]
    assert (FPN_BACKBONE_MACS, FPN_MACS) == (52_131_840_000, 4_915_200_000 + 31_334_400_000)
    assert FPN_MACS == (200 * 200 * 256 + 100 * 100 * 512 + 50 * 50 * 1024 + 25 * 25 * 2048) * 256 \
        + (200 * 200 + 100 * 100 + 50 * 50 + 25 * 25) * 256 * 256 * 9
    assert _ops_by_kind(w) == {"conv": 2 * (FPN_BACKBONE_MACS + FPN_MACS), "matmul": 0, "attention": 0}
    assert sum(op["name"] == "aten.convolution" for op in w["ops"]) == FPN_CONVS == 1 + 16 * 3 + 4 + 8 == 61
    assert sum(op["name"] == "aten.upsample_nearest2d" for op in w["ops"]) == 3
    assert sum(op["kind"] == "pool" for op in w["ops"]) == 2                         # stem, the "pool" level
    assert sum(op["name"] == "aten.native_batch_norm" for op in w["ops"]) == 53
    # The forward at 800x800 takes ~8 s on this CPU: torch checks the same code at 256x256 (levels 64, 32,
    # 16, 8 and the pool level 4), where the count is the same formula.
    out, theirs = _flop_counter_mode("resnet50_fpn", 256)
    assert [tuple(t.shape) for t in out] == [(1, 256, s, s) for s in (64, 32, 16, 8, 4)]
    _, backbone, fpn, _ = _resnet50_fpn_by_hand(256)
    assert theirs == {"aten.convolution": 2 * (backbone + fpn)} == {"aten.convolution": 18_100_518_912}


def test_bart_base_operations(counted):
    """Per sample (256 source, 64 target tokens): 18.33 GMACs of linears (the tied logits 2.47 of them) and
    0.77 GMACs of attention, the causal decoder self-attention counted as half its square."""
    w = counted["bart_base"]
    assert (BART_LINEAR_MACS, BART_ATTENTION_MACS) == (18_325_094_400, 773_849_088)
    assert _ops_by_kind(w) == {"conv": 0, "matmul": 2 * BART_LINEAR_MACS, "attention": 2 * BART_ATTENTION_MACS}
    sdpa = [(op["gemm"]["m"], op["gemm"]["n"], op["gemm"]["k"], op["gemm"]["batch"])
            for op in w["ops"] if op["name"] == SDPA]
    assert sorted(sdpa) == sorted([(SRC, SRC, 64, BATCH * 12)] * 6 + [(TGT, TGT, 64, BATCH * 12)] * 6
                                  + [(TGT, SRC, 64, BATCH * 12)] * 6)
    assert sum(op["name"] == "aten.addmm" for op in w["ops"]) == 6 * 6 + 6 * 10   # encoder 6, decoder 10 linears
    assert sum(op["name"] == "aten.mm" for op in w["ops"]) == 1                    # tied logits, bias added apart
    assert sum(op["name"] == "aten.embedding" for op in w["ops"]) == 4            # 2 token, 2 positional lookups
    assert sum(op["name"] == "aten.native_layer_norm" for op in w["ops"]) == 2 + 6 * 2 + 6 * 3
    ids, dec = _module("bart_base").example_inputs(3)
    assert ids.dtype == dec.dtype == torch.int64 and ids.shape == (3, SRC) and dec.shape == (3, TGT)
    assert int(ids.max()) < 50265 and int(dec.max()) < 50265
    # A real forward: torch agrees on the linears; on the CPU it records no SDPA flops.
    out, theirs = _flop_counter_mode("bart_base")
    assert out.shape == (1, TGT, 50265)
    assert theirs == {"aten.addmm": 2 * (BART_LINEAR_MACS - TGT * 768 * 50265), "aten.mm": 2 * TGT * 768 * 50265}


def test_dit_s2_is_6_06_gmacs(counted):
    """The paper's Table 4 lists 6.06 Gflops (multiply-adds) for DiT-S/2 at 256x256."""
    w = counted["dit_s2"]
    assert (DIT_CONV_MACS, DIT_LINEAR_MACS, DIT_ATTENTION_MACS) == (1_572_864, 5_450_121_216, 603_979_776)
    assert round((DIT_CONV_MACS + DIT_LINEAR_MACS + DIT_ATTENTION_MACS) / 1e9, 2) == 6.06
    assert _ops_by_kind(w) == {"conv": 2 * DIT_CONV_MACS, "matmul": 2 * DIT_LINEAR_MACS,
                               "attention": 2 * DIT_ATTENTION_MACS}
    sdpa = [op for op in w["ops"] if op["name"] == SDPA]
    assert len(sdpa) == 12 and all((op["gemm"]["m"], op["gemm"]["n"], op["gemm"]["k"], op["gemm"]["batch"])
                                   == (TOKENS, TOKENS, 64, BATCH * 6) for op in sdpa)
    # per block qkv, proj, fc1, fc2, adaLN; the two timestep linears; final adaLN and linear
    assert sum(op["name"] == "aten.addmm" for op in w["ops"]) == 12 * 5 + 2 + 2
    assert sum(op["name"] == "aten.native_layer_norm" for op in w["ops"]) == 12 * 2 + 1
    model = _module("dit_s2").build_model()
    assert "pos_embed" not in dict(model.named_parameters()) and model.pos_embed.shape == (1, TOKENS, 384)
    x, t, y = _module("dit_s2").example_inputs(3)
    assert x.shape == (3, 4, 32, 32) and t.shape == y.shape == (3,) and y.dtype == torch.int64
    out, theirs = _flop_counter_mode("dit_s2")
    assert out.shape == (1, 8, 32, 32)
    assert theirs == {"aten.convolution": 2 * DIT_CONV_MACS, "aten.addmm": 2 * DIT_LINEAR_MACS}
