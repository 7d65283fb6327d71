"""The fifth blind held-out set (Inception-v3, ShuffleNet V2 1.0x, a Conformer-S encoder, DeiT-Small with eager
attention): parameter counts and operation counts, each counted through ``tops-advisor count --strict --json``.

Only building and counting is tested here: these files are never run through the predictor in tests, so
that docs/accuracy.md can use them as a set it was not tuned on."""

from __future__ import annotations

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from tests.blind_support import check_strict_count, count_strict, load_example, ops_by_kind

NAMES = ("inception_v3", "shufflenet_v2", "conformer_encoder", "deit_small_eager")
BATCH = 2
MATRIX_KINDS = ("conv", "matmul", "attention")
SDPA = "aten.scaled_dot_product_attention"


class _Convs:
    """Adds up (parameters, multiply-adds) of BasicConv2d-style layers: conv without bias + BatchNorm."""

    def __init__(self):
        self.params = self.macs = self.count = 0

    def __call__(self, cin: int, cout: int, kh: int, kw: int, out_h: int, out_w: int | None = None,
                 groups: int = 1) -> None:
        out_w = out_h if out_w is None else out_w
        self.params += cin // groups * cout * kh * kw + 2 * cout          # BatchNorm: 2 per channel
        self.macs += out_h * out_w * cout * cin // groups * kh * kw
        self.count += 1


def _inception_v3_by_hand() -> tuple[int, int, int]:
    """(parameters, multiply-adds per image, convolutions) of Inception-v3 without the auxiliary head, 299x299."""
    c = _Convs()
    c(3, 32, 3, 3, 149)                                    # 299 -> 149 (stride 2)
    c(32, 32, 3, 3, 147)
    c(32, 64, 3, 3, 147)                                   # padded; then 3x3 stride-2 max pool -> 73
    c(64, 80, 1, 1, 73)
    c(80, 192, 3, 3, 71)                                   # then max pool -> 35
    for cin, pool in ((192, 32), (256, 64), (288, 64)):    # Mixed_5b/5c/5d at 35x35
        c(cin, 64, 1, 1, 35)
        c(cin, 48, 1, 1, 35)
        c(48, 64, 5, 5, 35)
        c(cin, 64, 1, 1, 35)
        c(64, 96, 3, 3, 35)
        c(96, 96, 3, 3, 35)
        c(cin, pool, 1, 1, 35)
    c(288, 384, 3, 3, 17)                                  # Mixed_6a: 35 -> 17
    c(288, 64, 1, 1, 35)
    c(64, 96, 3, 3, 35)
    c(96, 96, 3, 3, 17)
    for c7 in (128, 160, 160, 192):                        # Mixed_6b..6e at 17x17
        c(768, 192, 1, 1, 17)
        c(768, c7, 1, 1, 17)
        c(c7, c7, 1, 7, 17)
        c(c7, 192, 7, 1, 17)
        c(768, c7, 1, 1, 17)
        for _ in range(3):
            c(c7, c7, 7, 1, 17)                            # 7x1, 1x7, 7x1: same count either way round
        c(c7, 192, 1, 7, 17)
        c(768, 192, 1, 1, 17)
    c(768, 192, 1, 1, 17)                                  # Mixed_7a: 17 -> 8
    c(192, 320, 3, 3, 8)
    c(768, 192, 1, 1, 17)
    c(192, 192, 1, 7, 17)
    c(192, 192, 7, 1, 17)
    c(192, 192, 3, 3, 8)
    for cin in (1280, 2048):                               # Mixed_7b/7c at 8x8
        c(cin, 320, 1, 1, 8)
        c(cin, 384, 1, 1, 8)
        c(384, 384, 1, 3, 8)
        c(384, 384, 3, 1, 8)
        c(cin, 448, 1, 1, 8)
        c(448, 384, 3, 3, 8)
        c(384, 384, 1, 3, 8)
        c(384, 384, 3, 1, 8)
        c(cin, 192, 1, 1, 8)
    return c.params + 2048 * 1000 + 1000, c.macs + 2048 * 1000, c.count


def _shufflenet_v2_by_hand() -> tuple[int, int, int]:
    """(parameters, multiply-adds per image, convolutions) of ShuffleNet V2 1.0x at 224x224."""
    c = _Convs()
    c(3, 24, 3, 3, 112)                                    # then 3x3 stride-2 max pool -> 56
    cin, size = 24, 56
    for repeats, cout in zip((4, 8, 4), (116, 232, 464), strict=True):
        b, size_out = cout // 2, size // 2
        c(cin, cin, 3, 3, size_out, groups=cin)            # branch 1: depthwise stride 2
        c(cin, b, 1, 1, size_out)
        c(cin, b, 1, 1, size)                              # branch 2: 1x1 at the input size
        c(b, b, 3, 3, size_out, groups=b)                  # depthwise stride 2
        c(b, b, 1, 1, size_out)
        for _ in range(repeats - 1):                       # basic units: the second half of the split only
            c(b, b, 1, 1, size_out)
            c(b, b, 3, 3, size_out, groups=b)
            c(b, b, 1, 1, size_out)
        cin, size = cout, size_out
    c(464, 1024, 1, 1, 7)
    return c.params + 1024 * 1000 + 1000, c.macs + 1024 * 1000, c.count


INCEPTION_PARAMS, INCEPTION_MACS, INCEPTION_CONVS = _inception_v3_by_hand()
SHUFFLENET_PARAMS, SHUFFLENET_MACS, SHUFFLENET_CONVS = _shufflenet_v2_by_hand()

# Conformer-S, d = 144: frames after the two 3x3 stride-2 convolutions without padding: (n - 3) // 2 + 1.
T = ((1000 - 3) // 2 + 1 - 3) // 2 + 1                    # 1000 -> 499 -> 249
BINS = ((80 - 3) // 2 + 1 - 3) // 2 + 1                   # 80 -> 39 -> 19
assert (T, BINS) == (249, 19)

PARAMS = {
    "inception_v3": 23_834_568,                            # torchvision inception_v3, aux_logits=False
    "shufflenet_v2": 2_278_604,                            # torchvision shufflenet_v2_x1_0
    # Conformer: subsampling (2 convs with bias, Linear 144*19 -> 144) + 16 x (2 FFN + MHSA + conv module + LN)
    "conformer_encoder": (1 * 144 * 9 + 144) + (144 * 144 * 9 + 144) + (144 * BINS * 144 + 144)   # 582,336
                         + 16 * (2 * (2 * 144 + 144 * 576 + 576 + 576 * 144 + 144)             # 333,792
                                 + 2 * 144 + 4 * (144 * 144 + 144)                              # 83,808
                                 + 2 * 144 + 144 * 288 + 288 + 144 * 31 + 144 + 2 * 144
                                 + 144 * 144 + 144                                              # 67,824
                                 + 2 * 144),                                                    # 485,712
    # DeiT-S: patch conv + class token + positions + 12 x (2 LNs, qkv, proj, MLP 384-1536-384) + LN + head
    "deit_small_eager": (3 * 16 * 16 * 384 + 384) + 384 + 197 * 384                             # 371,328
                        + 12 * (2 * 2 * 384 + 384 * 1152 + 1152 + 384 * 384 + 384
                                + 384 * 1536 + 1536 + 1536 * 384 + 384)                         # 1,774,464
                        + 2 * 384 + 384 * 1000 + 1000,
}


def _module(name: str):
    return load_example(name, "blind5")


@pytest.fixture(scope="module")
def counted():
    return count_strict(NAMES, BATCH)


def _ops_by_kind(workload: dict) -> dict[str, float]:
    return ops_by_kind(workload, BATCH, MATRIX_KINDS)


def _flop_counter_mode(name: str) -> tuple[torch.Tensor, dict[str, int]]:
    """A real fp32 forward at batch 1 under torch's FlopCounterMode (2 per multiply-add, like us)."""
    mod = _module(name)
    torch.manual_seed(0)
    model = mod.build_model()
    assert not model.training
    mode = FlopCounterMode(display=False)
    with torch.no_grad(), mode:
        out = model(mod.example_inputs(1))
    assert torch.isfinite(out).all()
    return out, {str(k): v for k, v in mode.get_flop_counts()["Global"].items()}


def test_parameter_derivations():
    assert INCEPTION_PARAMS == PARAMS["inception_v3"]
    # torchvision's default adds the auxiliary classifier: BasicConv2d 768 -> 128 (1x1), 128 -> 768 (5x5),
    # Linear 768 -> 1000.
    assert INCEPTION_PARAMS + (768 * 128 + 2 * 128) + (128 * 768 * 25 + 2 * 768) + (768 * 1000 + 1000) \
        == 27_161_264
    assert SHUFFLENET_PARAMS == PARAMS["shufflenet_v2"]
    assert PARAMS["conformer_encoder"] == 8_353_728
    assert PARAMS["deit_small_eager"] == 22_050_664


@pytest.mark.parametrize("name", NAMES)
def test_parameter_counts(counted, name):
    assert counted[name]["params"] == PARAMS[name]


@pytest.mark.parametrize("name", NAMES)
def test_counts_strictly_with_no_unsupported_operator(counted, name):
    check_strict_count(counted[name], PARAMS[name], BATCH)


def test_inception_v3_is_5_7_gmacs(counted):
    """torchvision lists 5.71 GFLOPS (multiply-adds) for inception_v3: ~11.4 G operations per 299x299 image."""
    w = counted["inception_v3"]
    assert INCEPTION_MACS == 5_713_216_096
    assert _ops_by_kind(w) == {"conv": 2 * (INCEPTION_MACS - 2048 * 1000), "matmul": 2 * 2048 * 1000,
                               "attention": 0}
    assert w["flops"] / BATCH == pytest.approx(2 * 5.71e9, rel=0.01)        # + BatchNorm, ReLU, pools
    convs = [op for op in w["ops"] if op["name"] == "aten.convolution"]
    assert len(convs) == INCEPTION_CONVS == 94           # stem 5, A 3x7, B 4, C 4x10, D 6, E 2x9
    _, theirs = _flop_counter_mode("inception_v3")
    assert theirs == {"aten.convolution": 2 * (INCEPTION_MACS - 2048 * 1000), "aten.addmm": 2 * 2048 * 1000}


def test_shufflenet_v2_is_146_mmacs(counted):
    """The paper gives 146M FLOPs (multiply-adds) for ShuffleNet V2 1x; torchvision lists 0.14 GFLOPS."""
    w = counted["shufflenet_v2"]
    assert SHUFFLENET_MACS == 144_907_992
    assert _ops_by_kind(w) == {"conv": 2 * (SHUFFLENET_MACS - 1024 * 1000), "matmul": 2 * 1024 * 1000,
                               "attention": 0}
    convs = [op for op in w["ops"] if op["name"] == "aten.convolution"]
    assert len(convs) == SHUFFLENET_CONVS == 1 + 3 * 5 + (3 + 7 + 3) * 3 + 1 == 56
    # 19 depthwise convolutions (one per unit, plus branch 1 of the 3 stride-2 units), one group per channel.
    depthwise = [op["gemm"]["batch"] for op in convs if op["gemm"]["batch"] > 1]
    assert sorted(depthwise) == sorted([24] + [58] * 4 + [116] + [116] * 8 + [232] + [232] * 4)
    # The channel shuffle's transpose(1, 2).contiguous() is one real copy per unit (16), beside the 16 concats.
    assert sum(op["name"] == "aten.clone" for op in w["ops"]) == 16
    assert sum(op["name"] == "aten.cat" for op in w["ops"]) == 16
    _, theirs = _flop_counter_mode("shufflenet_v2")
    assert theirs == {"aten.convolution": 2 * (SHUFFLENET_MACS - 1024 * 1000), "aten.addmm": 2 * 1024 * 1000}


def test_conformer_operations(counted):
    """No published figure for this encoder alone: derived by hand, per 10 s utterance (249 frames after x4)."""
    w = counted["conformer_encoder"]
    conv_macs = (499 * 39 * 144 * 1 * 9                   # conv 1: 25,221,456
                 + T * BINS * 144 * 144 * 9               # conv 2: 882,918,144
                 + 16 * T * (144 * 288 + 144 * 31 + 144 * 144))   # pointwise, depthwise k31, pointwise
    linear_macs = (T * BINS * 144 * 144                   # subsampling projection 2736 -> 144
                   + 16 * T * (2 * 2 * 144 * 576 + 4 * 144 * 144))  # 2 FFNs, q/k/v/out
    attention_macs = 16 * 2 * 4 * T * T * 36              # QK^T and PV, 4 heads of 36
    assert (conv_macs, linear_macs, attention_macs) == (1_173_760_848, 1_750_346_496, 285_700_608)
    assert _ops_by_kind(w) == {"conv": 2 * conv_macs, "matmul": 2 * linear_macs, "attention": 2 * attention_macs}
    sdpa = [op for op in w["ops"] if op["name"] == SDPA]
    assert len(sdpa) == 16 and sum(op["flops"] for op in sdpa) / BATCH == 2 * attention_macs
    total_macs = conv_macs + linear_macs + attention_macs
    assert w["flops"] / BATCH == pytest.approx(2 * total_macs, rel=0.02)    # + norms, SiLU, GLU, adds
    assert sum(op["name"] == "aten.glu" for op in w["ops"]) == 16
    # torch's FlopCounterMode agrees on the convolutions and linears; on the CPU it records no SDPA flops.
    out, theirs = _flop_counter_mode("conformer_encoder")
    assert out.shape == (1, T, 144)
    assert theirs["aten.convolution"] == 2 * conv_macs and theirs["aten.addmm"] == 2 * linear_macs


def test_deit_small_eager_attention(counted):
    """4.6 GMACs (timm lists 4.6 GMACs for deit_small_patch16_224). The eager attention is two batched matmuls
    per block over (batch x 6 heads) of 197 x 197 scores, plus a materialised scale and softmax."""
    w = counted["deit_small_eager"]
    patch_macs = 196 * 384 * 3 * 16 * 16                   # 57,802,752
    linear_macs = 12 * 197 * (384 * 1152 + 384 * 384 + 2 * 384 * 1536) + 384 * 1000
    attention_macs = 12 * 2 * 6 * 197 * 197 * 64           # 357,663,744
    assert patch_macs + linear_macs + attention_macs == 4_598_882_304
    assert _ops_by_kind(w) == {"conv": 2 * patch_macs, "matmul": 2 * (linear_macs + attention_macs),
                               "attention": 0}
    assert not any(op["name"] == SDPA for op in w["ops"])
    bmm = [op for op in w["ops"] if op["name"] == "aten.bmm"]
    assert len(bmm) == 24 and all(op["gemm"]["batch"] == BATCH * 6 for op in bmm)
    assert {(op["gemm"]["m"], op["gemm"]["n"], op["gemm"]["k"]) for op in bmm} == {(197, 197, 64), (197, 64, 197)}
    softmax = [op for op in w["ops"] if op["kind"] == "softmax"]
    assert len(softmax) == 12 and all(op["bytes_written"] == 4 * BATCH * 6 * 197 * 197 for op in softmax)
    out, theirs = _flop_counter_mode("deit_small_eager")
    assert out.shape == (1, 1000)
    assert theirs == {"aten.convolution": 2 * patch_macs, "aten.addmm": 2 * linear_macs,
                      "aten.bmm": 2 * attention_macs}
