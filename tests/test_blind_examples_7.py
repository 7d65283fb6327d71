"""The seventh blind held-out set (DeepLabV3-ResNet-50, EfficientNetV2-S, SqueezeNet 1.1, the CLIP ViT-B/32 text
encoder): parameter counts and operation counts, each counted through ``tops-advisor count --strict --json``.

Only building and counting is tested here: these files are never run through the predictor in tests, so
that docs/accuracy.md can use them as a set it was not tuned on."""

from __future__ import annotations

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from tests.blind_support import check_strict_count, count_strict, load_example, ops_by_kind

NAMES = ("deeplabv3_resnet50", "efficientnetv2_s", "squeezenet1_1", "clip_text_encoder")
BATCH = 2
MATRIX_KINDS = ("conv", "matmul", "attention")
SDPA = "aten.scaled_dot_product_attention"


def _bn(channels: int) -> int:
    return 2 * channels                                    # BatchNorm weight + bias; running stats are buffers


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


def _deeplab_by_hand(size: int) -> tuple[int, int, int]:
    """(parameters, multiply-adds per image, convolutions) of DeepLabV3-ResNet-50, output stride 8, at size x size.
    Dilation and padding change no count: each output still sees the full 3x3 kernel."""
    params = _resnet50_params() - (2048 * 1000 + 1000)    # the backbone has no classifier
    h = size // 2
    macs, convs = h * h * 3 * 64 * 49, 1                   # stem 7x7 stride 2
    h //= 2                                                # max pool
    cin = 64
    for width, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 1), (512, 3, 1)):   # layer3/4 dilated
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
        cin = out
    assert h == size // 8
    params += (2048 * 256 + _bn(256)                       # ASPP 1x1
               + 3 * (2048 * 256 * 9 + _bn(256))           # ASPP 3x3, rates 12, 24, 36
               + 2048 * 256 + _bn(256)                     # image pooling 1x1
               + 1280 * 256 + _bn(256)                     # projection of the 5 concatenated branches
               + 256 * 256 * 9 + _bn(256)                  # head 3x3
               + 256 * 21 + 21)                            # classifier with bias
    macs += h * h * (2048 * 256 + 3 * 2048 * 256 * 9 + 1280 * 256 + 256 * 256 * 9 + 256 * 21) + 2048 * 256
    return params, macs, convs + 5 + 1 + 1 + 1


def _efficientnetv2_s_by_hand() -> tuple[int, int, int]:
    """(parameters, multiply-adds per image, convolutions) of EfficientNetV2-S at 384x384."""
    params, size = 3 * 24 * 9 + _bn(24), 192
    macs, convs = size * size * 3 * 24 * 9, 1
    for fused, t, stride, c_in, c_out, layers in ((True, 1, 1, 24, 24, 2), (True, 4, 2, 24, 48, 4),
                                                   (True, 4, 2, 48, 64, 4), (False, 4, 2, 64, 128, 6),
                                                   (False, 6, 1, 128, 160, 9), (False, 6, 2, 160, 256, 15)):
        for i in range(layers):
            cin = c_in if i == 0 else c_out
            out = size // stride if i == 0 else size
            e = t * cin
            if fused and t == 1:                           # one 3x3
                params += cin * c_out * 9 + _bn(c_out)
                macs += out * out * cin * c_out * 9
                convs += 1
            elif fused:                                    # 3x3 expand (strided), 1x1 project
                params += cin * e * 9 + _bn(e) + e * c_out + _bn(c_out)
                macs += out * out * (cin * e * 9 + e * c_out)
                convs += 2
            else:                                          # 1x1 expand, depthwise 3x3, SE (cin // 4), 1x1
                s = cin // 4
                params += cin * e + _bn(e) + e * 9 + _bn(e) + (e * s + s + s * e + e) + e * c_out + _bn(c_out)
                macs += size * size * cin * e + out * out * (e * 9 + e * c_out) + e * s + s * e
                convs += 5
            size = out
    assert size == 12
    params += 256 * 1280 + _bn(1280) + 1280 * 1000 + 1000  # head 1x1 conv, classifier
    macs += size * size * 256 * 1280 + 1280 * 1000
    return params, macs, convs + 1


def _squeezenet_by_hand() -> tuple[int, int]:
    """(parameters, multiply-adds per image) of SqueezeNet 1.1 at 224x224; every conv has a bias."""
    params, macs = 3 * 64 * 9 + 64, 111 * 111 * 3 * 64 * 9     # (224 - 3) // 2 + 1 = 111
    for (cin, s, e), h in zip(((64, 16, 64), (128, 16, 64), (128, 32, 128), (256, 32, 128),
                               (256, 48, 192), (384, 48, 192), (384, 64, 256), (512, 64, 256)),
                              (55, 55, 27, 27, 13, 13, 13, 13), strict=True):   # ceil-mode pools 111->55->27->13
        params += cin * s + s + s * e + e + s * e * 9 + e
        macs += h * h * (cin * s + s * e + s * e * 9)
    return params + 512 * 1000 + 1000, macs + 13 * 13 * 512 * 1000


DEEPLAB_PARAMS, DEEPLAB_MACS, DEEPLAB_CONVS = _deeplab_by_hand(512)
EFFNET_PARAMS, EFFNET_MACS, EFFNET_CONVS = _efficientnetv2_s_by_hand()
SQUEEZE_PARAMS, SQUEEZE_MACS = _squeezenet_by_hand()

# CLIP text: per layer two LayerNorms, the packed in_proj 512 -> 1536 and out_proj (biases), the MLP 512-2048-512.
CLIP_LAYER_PARAMS = 2 * 2 * 512 + (512 * 1536 + 1536) + (512 * 512 + 512) + (512 * 2048 + 2048) + (2048 * 512 + 512)
CLIP_LAYER_LINEAR_MACS = 512 * 1536 + 512 * 512 + 512 * 2048 + 2048 * 512      # per token: one MAC per weight
SEQ = 77

PARAMS = {
    "deeplabv3_resnet50": 39_638_869,                      # torchvision deeplabv3_resnet50, aux_loss=False
    "efficientnetv2_s": 21_458_488,                        # torchvision efficientnet_v2_s
    "squeezenet1_1": 1_235_496,                            # torchvision squeezenet1_1
    # token + positional embeddings, 12 layers, final LayerNorm, text_projection (no bias)
    "clip_text_encoder": 49408 * 512 + 77 * 512 + 12 * CLIP_LAYER_PARAMS + 2 * 512 + 512 * 512,
}


def _module(name: str):
    return load_example(name, "blind7")


@pytest.fixture(scope="module")
def counted():
    return count_strict(NAMES, BATCH)


def _ops_by_kind(workload: dict) -> dict[str, float]:
    return ops_by_kind(workload, BATCH, MATRIX_KINDS)


def _flop_counter_mode(name: str, *input_args) -> tuple[torch.Tensor, dict[str, int]]:
    """A real fp32 forward at batch 1 under torch's FlopCounterMode (2 per multiply-add, like us)."""
    mod = _module(name)
    torch.manual_seed(0)
    model = mod.build_model()
    assert not model.training
    mode = FlopCounterMode(display=False)
    with torch.no_grad(), mode:
        out = model(mod.example_inputs(1, *input_args))
    assert torch.isfinite(out).all()
    return out, {str(k): v for k, v in mode.get_flop_counts()["Global"].items()}


def test_parameter_derivations():
    assert _resnet50_params() == 25_557_032                # torchvision resnet50
    assert DEEPLAB_PARAMS == PARAMS["deeplabv3_resnet50"]
    # torchvision documents 42,004,074 with the auxiliary FCN head on layer3 (3x3 1024 -> 256 + BN, 1x1 -> 21).
    assert DEEPLAB_PARAMS + 1024 * 256 * 9 + _bn(256) + 256 * 21 + 21 == 42_004_074
    assert EFFNET_PARAMS == PARAMS["efficientnetv2_s"]
    assert SQUEEZE_PARAMS == PARAMS["squeezenet1_1"]
    assert 12 * CLIP_LAYER_PARAMS == 37_828_608            # the 12 residual blocks alone
    assert PARAMS["clip_text_encoder"] == 63_428_096       # the published ~63M text tower


@pytest.mark.parametrize("name", NAMES)
def test_parameter_counts(counted, name):
    assert counted[name]["params"] == PARAMS[name]


@pytest.mark.parametrize("name", NAMES)
def test_counts_strictly_with_no_unsupported_operator(counted, name):
    check_strict_count(counted[name], PARAMS[name], BATCH)


def test_deeplabv3_resnet50_is_163_6_gmacs(counted):
    """163.6 GMACs at 512x512, all convolutions. At torchvision's 520x520 with the auxiliary head the same
    derivation gives its documented 178.72 GFLOPS (multiply-adds)."""
    w = counted["deeplabv3_resnet50"]
    assert DEEPLAB_MACS == 163_579_428_864
    aux_520 = 65 * 65 * (1024 * 256 * 9 + 256 * 21)
    assert round((_deeplab_by_hand(520)[1] + aux_520) / 1e9, 2) == 178.72
    assert _ops_by_kind(w) == {"conv": 2 * DEEPLAB_MACS, "matmul": 0, "attention": 0}
    convs = [op for op in w["ops"] if op["name"] == "aten.convolution"]
    assert len(convs) == DEEPLAB_CONVS == 1 + 16 * 3 + 4 + 5 + 3 == 61
    assert sum(op["name"] == "aten.upsample_bilinear2d" for op in w["ops"]) == 2    # pooling branch, logits
    # The forward at 512x512 takes ~6 s on this CPU: torch checks the same code at 128x128 (16x16 after the
    # backbone), where the count is the same formula.
    out, theirs = _flop_counter_mode("deeplabv3_resnet50", 128)
    assert out.shape == (1, 21, 128, 128)
    assert theirs == {"aten.convolution": 2 * _deeplab_by_hand(128)[1]} == {"aten.convolution": 20_448_411_648}


def test_efficientnetv2_s_is_8_37_gmacs(counted):
    """torchvision lists 8.37 GFLOPS (multiply-adds) for efficientnet_v2_s at 384x384."""
    w = counted["efficientnetv2_s"]
    assert EFFNET_MACS == 8_365_617_152
    assert _ops_by_kind(w) == {"conv": 2 * (EFFNET_MACS - 1280 * 1000), "matmul": 2 * 1280 * 1000,
                               "attention": 0}
    convs = [op for op in w["ops"] if op["name"] == "aten.convolution"]
    assert len(convs) == EFFNET_CONVS == 1 + 2 + 4 * 2 + 4 * 2 + 30 * 5 + 1 == 170
    # The 30 depthwise 3x3 convolutions of the MBConv blocks: one group per channel.
    depthwise = sorted(op["gemm"]["batch"] for op in convs if op["gemm"]["batch"] > 1)
    assert depthwise == sorted([256] + [512] * 5 + [768] + [960] * 8 + [960] + [1536] * 14)
    assert sum(op["name"] == "aten.sigmoid" for op in w["ops"]) == 30               # one SE per MBConv
    assert sum(op["name"] == "aten.native_batch_norm" for op in w["ops"]) == 1 + 2 + 8 + 8 + 30 * 3 + 1
    out, theirs = _flop_counter_mode("efficientnetv2_s")
    assert out.shape == (1, 1000)
    assert theirs == {"aten.convolution": 2 * (EFFNET_MACS - 1280 * 1000), "aten.addmm": 2 * 1280 * 1000}


def test_squeezenet1_1_is_0_35_gmacs(counted):
    """torchvision lists 0.35 GFLOPS (multiply-adds) for squeezenet1_1; all convolutions."""
    w = counted["squeezenet1_1"]
    assert SQUEEZE_MACS == 349_151_936
    assert _ops_by_kind(w) == {"conv": 2 * SQUEEZE_MACS, "matmul": 0, "attention": 0}
    assert sum(op["name"] == "aten.convolution" for op in w["ops"]) == 1 + 8 * 3 + 1
    assert sum(op["name"] == "aten.cat" for op in w["ops"]) == 8                    # one per Fire
    assert sum(op["kind"] == "pool" for op in w["ops"]) == 3                        # ceil-mode max pools
    out, theirs = _flop_counter_mode("squeezenet1_1")
    assert out.shape == (1, 1000)
    assert theirs == {"aten.convolution": 2 * SQUEEZE_MACS}


def test_clip_text_encoder_operations(counted):
    """Per 77-token text: 12 layers x 3,145,728 multiply-adds per token of linears, the projection of the one
    end-of-text token, and attention over the full 77 x 77 square: the causal mask is an additive float
    tensor, so nothing tells the counter it is causal (QK^T and PV, 8 heads of 64)."""
    w = counted["clip_text_encoder"]
    linear_macs = SEQ * 12 * CLIP_LAYER_LINEAR_MACS
    attention_macs = 12 * 8 * 2 * SEQ * SEQ * 64
    assert (linear_macs, attention_macs) == (2_906_652_672, 72_855_552)
    assert _ops_by_kind(w) == {"conv": 0, "matmul": 2 * (linear_macs + 512 * 512), "attention": 2 * attention_macs}
    sdpa = [op for op in w["ops"] if op["name"] == SDPA]
    assert len(sdpa) == 12 and all(op["gemm"]["m"] == op["gemm"]["n"] == SEQ and op["gemm"]["k"] == 64
                                   and op["gemm"]["batch"] == BATCH * 8 for op in sdpa)
    assert sum(op["name"] == "aten.addmm" for op in w["ops"]) == 12 * 4
    assert sum(op["name"] == "aten.mm" for op in w["ops"]) == 1                     # text_projection
    assert sum(op["name"] == "aten.native_layer_norm" for op in w["ops"]) == 2 * 12 + 1
    assert sum(op["name"] == "aten.sigmoid" for op in w["ops"]) == 12               # QuickGELU
    ids = _module("clip_text_encoder").example_inputs(3)
    assert ids.dtype == torch.int64 and ids.shape == (3, SEQ)
    assert (ids.argmax(-1) == 21).all()                    # the end-of-text token 49407 is the largest id
    # A real forward: torch agrees on the linears; on the CPU it records no SDPA flops.
    out, theirs = _flop_counter_mode("clip_text_encoder")
    assert out.shape == (1, 512)
    assert theirs == {"aten.addmm": 2 * linear_macs, "aten.mm": 2 * 512 * 512}
