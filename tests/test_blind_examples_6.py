"""The sixth blind held-out set (QuartzNet 5x5, RegNetY-800MF, VGG-16-BN, a TinyLlama-1.1B prefill of 256
tokens): parameter counts and operation counts, each counted through ``tops-advisor count --strict --json``.

Only building and counting is tested here: these files are never run through the predictor in tests, so
that docs/accuracy.md can use them as a set it was not tuned on."""

from __future__ import annotations

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from tests.blind_support import check_strict_count, count_strict, load_example, ops_by_kind

NAMES = ("quartznet_5x5", "regnety_800mf", "vgg16_bn", "tinyllama_prefill")
BATCH = 2
MATRIX_KINDS = ("conv", "matmul", "attention")
SDPA = "aten.scaled_dot_product_attention"


def _quartznet_by_hand() -> tuple[int, int, int]:
    """(parameters, multiply-adds per 16 s utterance, convolutions) of QuartzNet 5x5 at 800 frames after C1."""
    frames = (1600 + 2 * 16 - 33) // 2 + 1                 # C1: kernel 33, padding 16, stride 2
    assert frames == 800
    params = macs = convs = 0

    def separable(cin: int, cout: int, k: int) -> None:    # depthwise + pointwise + BatchNorm (2 per channel)
        nonlocal params, macs, convs
        params += cin * k + cin * cout + 2 * cout
        macs += frames * (cin * k + cin * cout)
        convs += 2

    separable(64, 256, 33)                                 # C1 (its depthwise runs at stride 2: 800 outputs)
    cin = 256
    for k, cout in ((33, 256), (39, 256), (51, 512), (63, 512), (75, 512)):
        separable(cin, cout, k)
        for _ in range(4):
            separable(cout, cout, k)
        params += cin * cout + 2 * cout                    # residual: pointwise conv + BatchNorm
        macs += frames * cin * cout
        convs += 1
        cin = cout
    separable(512, 512, 87)                                # C2 (dilation 2 does not change the count)
    params += 512 * 1024 + 2 * 1024 + 1024 * 29 + 29       # C3 + BatchNorm, C4 with bias
    macs += frames * (512 * 1024 + 1024 * 29)
    return params, macs, convs + 2


def _regnety_by_hand() -> tuple[int, int, int]:
    """(parameters, multiply-adds per image, convolutions) of RegNetY-800MF at 224x224."""
    params, macs, convs = 3 * 32 * 9 + 2 * 32, 112 * 112 * 32 * 3 * 9, 1     # stem: 224 -> 112
    cin, size = 32, 112
    for depth, w in zip((1, 3, 8, 2), (64, 144, 320, 784), strict=True):
        out = size // 2
        for i in range(depth):
            w_in = cin if i == 0 else w
            se = round(w_in / 4)                           # SE width from the block's input width
            params += (w_in * w + 2 * w                    # a: 1x1 + BatchNorm
                       + w * 16 * 9 + 2 * w                # b: grouped 3x3, 16 input channels per group
                       + w * se + se + se * w + w          # SE: two 1x1 convs with bias
                       + w * w + 2 * w)                    # c: 1x1 + BatchNorm
            macs += ((size if i == 0 else out) ** 2 * w_in * w + out * out * w * 16 * 9
                     + w * se + se * w + out * out * w * w)
            convs += 5
            if i == 0:                                     # projection shortcut, stride 2
                params += w_in * w + 2 * w
                macs += out * out * w_in * w
                convs += 1
        cin, size = w, out
    return params + 784 * 1000 + 1000, macs + 784 * 1000, convs


def _vgg16_bn_by_hand() -> tuple[int, int]:
    """(parameters, multiply-adds per image) of VGG-16-BN at 224x224."""
    params = macs = 0
    cin, size = 3, 224
    for n, cout in ((2, 64), (2, 128), (3, 256), (3, 512), (3, 512)):
        for _ in range(n):
            params += cin * cout * 9 + cout + 2 * cout     # conv with bias + BatchNorm
            macs += size * size * cin * cout * 9
            cin = cout
        size //= 2                                         # 2x2 max pooling
    assert size == 7
    linears = ((512 * 7 * 7, 4096), (4096, 4096), (4096, 1000))
    return params + sum(i * o + o for i, o in linears), macs + sum(i * o for i, o in linears)


QUARTZNET_PARAMS, QUARTZNET_MACS, QUARTZNET_CONVS = _quartznet_by_hand()
REGNET_PARAMS, REGNET_MACS, REGNET_CONVS = _regnety_by_hand()
VGG_PARAMS, VGG_MACS = _vgg16_bn_by_hand()

# TinyLlama: 22 layers of q, k, v, o (4 KV heads of 64: k and v are 2048 x 256), a SwiGLU MLP, two RMSNorms.
LLAMA_LAYER_PARAMS = 2 * 2048 * 2048 + 2 * 2048 * 256 + 3 * 2048 * 5632 + 2 * 2048          # 44,044,288
LLAMA_LAYER_LINEAR_MACS = LLAMA_LAYER_PARAMS - 2 * 2048                 # per token: one MAC per weight
SEQ = 256

PARAMS = {
    "quartznet_5x5": 6_713_181,                            # the paper's Table 1: 6.7M
    "regnety_800mf": 6_432_512,                            # torchvision regnet_y_800mf
    "vgg16_bn": 138_365_992,                               # torchvision vgg16_bn
    "tinyllama_prefill": 2 * 32000 * 2048 + 22 * LLAMA_LAYER_PARAMS + 2048,   # embedding, LM head, layers, norm
}


def _module(name: str):
    return load_example(name, "blind6")


@pytest.fixture(scope="module")
def counted():
    return count_strict(NAMES, BATCH)


def _ops_by_kind(workload: dict) -> dict[str, float]:
    return ops_by_kind(workload, BATCH, MATRIX_KINDS)


def _flop_counter_mode(name: str, *build_args) -> tuple[torch.Tensor, dict[str, int]]:
    """A real fp32 forward at batch 1 under torch's FlopCounterMode (2 per multiply-add, like us)."""
    mod = _module(name)
    torch.manual_seed(0)
    model = mod.build_model(*build_args)
    assert not model.training
    mode = FlopCounterMode(display=False)
    with torch.no_grad(), mode:
        out = model(mod.example_inputs(1))
    assert torch.isfinite(out).all()
    return out, {str(k): v for k, v in mode.get_flop_counts()["Global"].items()}


def test_parameter_derivations():
    assert QUARTZNET_PARAMS == PARAMS["quartznet_5x5"]
    assert REGNET_PARAMS == PARAMS["regnety_800mf"]
    assert VGG_PARAMS == PARAMS["vgg16_bn"]
    assert LLAMA_LAYER_PARAMS == 44_044_288
    assert PARAMS["tinyllama_prefill"] == 1_100_048_384    # TinyLlama-1.1B's published count


@pytest.mark.parametrize("name", NAMES)
def test_parameter_counts(counted, name):
    assert counted[name]["params"] == PARAMS[name]


@pytest.mark.parametrize("name", NAMES)
def test_counts_strictly_with_no_unsupported_operator(counted, name):
    check_strict_count(counted[name], PARAMS[name], BATCH)


def test_quartznet_5x5_operations(counted):
    """No published figure: 5.35 GMACs per 16 s utterance, derived by hand; all of it convolutions."""
    w = counted["quartznet_5x5"]
    assert QUARTZNET_MACS == 5_347_993_600
    assert _ops_by_kind(w) == {"conv": 2 * QUARTZNET_MACS, "matmul": 0, "attention": 0}
    convs = [op for op in w["ops"] if op["name"] == "aten.convolution"]
    assert len(convs) == QUARTZNET_CONVS == 2 + 5 * (5 * 2 + 1) + 2 + 2 == 61
    # 27 depthwise convolutions (C1, 25 in the blocks, C2), one group per channel.
    depthwise = sorted(op["gemm"]["batch"] for op in convs if op["gemm"]["batch"] > 1)
    assert depthwise == sorted([64] + [256] * 10 + [256] + [512] * 4 + [512] * 10 + [512])
    assert sum(op["name"] == "aten.native_batch_norm" for op in w["ops"]) == 1 + 5 * 6 + 2 == 33
    out, theirs = _flop_counter_mode("quartznet_5x5")
    assert out.shape == (1, 29, 800)
    assert theirs == {"aten.convolution": 2 * QUARTZNET_MACS}


def test_regnety_800mf_is_0_83_gmacs(counted):
    """torchvision lists 0.83 GFLOPS (multiply-adds) for regnet_y_800mf."""
    w = counted["regnety_800mf"]
    assert REGNET_MACS == 833_856_256
    assert _ops_by_kind(w) == {"conv": 2 * (REGNET_MACS - 784 * 1000), "matmul": 2 * 784 * 1000,
                               "attention": 0}
    convs = [op for op in w["ops"] if op["name"] == "aten.convolution"]
    assert len(convs) == REGNET_CONVS == 1 + 14 * 5 + 4 == 75
    # The 14 grouped 3x3 convolutions: groups of 16 channels, 64/16, 144/16, 320/16, 784/16 groups.
    grouped = sorted(op["gemm"]["batch"] for op in convs if op["gemm"]["batch"] > 1)
    assert grouped == sorted([4] + [9] * 3 + [20] * 8 + [49] * 2)
    assert sum(op["name"] == "aten.sigmoid" for op in w["ops"]) == 14               # one SE per block
    out, theirs = _flop_counter_mode("regnety_800mf")
    assert out.shape == (1, 1000)
    assert theirs == {"aten.convolution": 2 * (REGNET_MACS - 784 * 1000), "aten.addmm": 2 * 784 * 1000}


def test_vgg16_bn_is_15_5_gmacs(counted):
    """torchvision lists 15.47 GFLOPS (multiply-adds) for vgg16_bn; 123.6M of them are the classifier's."""
    w = counted["vgg16_bn"]
    linear_macs = 25088 * 4096 + 4096 * 4096 + 4096 * 1000
    assert (VGG_MACS, linear_macs) == (15_470_264_320, 123_633_664)
    assert _ops_by_kind(w) == {"conv": 2 * (VGG_MACS - linear_macs), "matmul": 2 * linear_macs, "attention": 0}
    assert sum(op["name"] == "aten.convolution" for op in w["ops"]) == 13
    assert sum(op["kind"] == "pool" for op in w["ops"]) == 5 + 1            # max pools + adaptive average
    out, theirs = _flop_counter_mode("vgg16_bn")
    assert out.shape == (1, 1000)
    assert theirs == {"aten.convolution": 2 * (VGG_MACS - linear_macs), "aten.addmm": 2 * linear_macs}


def test_tinyllama_prefill_operations(counted):
    """Per 256-token sequence: 22 layers x 44,040,192 + the LM head 65,536,000 multiply-adds per token, and
    causal attention counted as half of the 256 x 256 score square (QK^T and PV, 32 heads of 64)."""
    w = counted["tinyllama_prefill"]
    linear_macs = SEQ * (22 * LLAMA_LAYER_LINEAR_MACS + 2048 * 32000)
    attention_macs = 22 * 32 * 2 * SEQ * SEQ * 64 // 2
    assert (linear_macs, attention_macs) == (264_811_577_344, 2_952_790_016)
    assert _ops_by_kind(w) == {"conv": 0, "matmul": 2 * linear_macs, "attention": 2 * attention_macs}
    sdpa = [op for op in w["ops"] if op["name"] == SDPA]
    # After repeat_kv every SDPA sees 32 heads for K and V as well as Q: (batch x 32) of 256 x 256 x 64.
    assert len(sdpa) == 22 and all(op["gemm"] == {"m": SEQ, "n": SEQ, "k": 64, "batch": BATCH * 32,
                                                  "window": 1, "spatial_dims": 0}
                                   for op in sdpa)
    assert sum(op["name"] == "aten.mm" for op in w["ops"]) == 22 * 7 + 1
    assert sum(op["name"] == "aten.clone" for op in w["ops"]) == 2 * 22                 # K and V repeated
    assert sum(op["name"] == "aten.rsqrt" for op in w["ops"]) == 2 * 22 + 1             # hand-written RMSNorm
    # A real forward of a 2-layer instance (same widths): torch agrees on the linears; on the CPU it records
    # no SDPA flops.
    out, theirs = _flop_counter_mode("tinyllama_prefill", 2)
    assert out.shape == (1, SEQ, 32000)
    assert theirs == {"aten.mm": 2 * SEQ * (2 * LLAMA_LAYER_LINEAR_MACS + 2048 * 32000)}
