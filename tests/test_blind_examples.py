"""The blind held-out examples (EfficientNet-B0, Swin-T, the Whisper base encoder): published parameter
counts and operation counts, each counted through ``tops-advisor count --strict --json``.

Only building and counting is tested here: these files are never run through the predictor in tests, so
that docs/accuracy.md can use them as a set it was not tuned on."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from tests.blind_support import check_strict_count, count_strict, load_example

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
NAMES = ("efficientnet_b0", "swin_tiny", "whisper_encoder")
BATCH = 2
MATRIX_KINDS = ("conv", "matmul", "attention")

# torchvision efficientnet_b0: 5,288,548; torchvision swin_t: 28,288,354.
# Whisper base encoder, by hand (Hugging Face's layout: the sinusoidal table is a frozen parameter):
PARAMS = {
    "efficientnet_b0": 5_288_548,
    "swin_tiny": 28_288_354,
    "whisper_encoder": (80 * 512 * 3 + 512)                    # conv1 123,392
                       + (512 * 512 * 3 + 512)                 # conv2 786,944
                       + 6 * (3 * (512 * 512 + 512) + 512 * 512  # q, v, out with bias, k without: 1,050,112
                              + 512 * 2048 + 2048 + 2048 * 512 + 512  # MLP 2,099,712
                              + 2 * 2 * 512)                   # 2 LayerNorms 2,048 -> 3,151,872 per block
                       + 2 * 512                               # ln_post 1,024
                       + 1500 * 512,                           # position table 768,000 -> 20,590,592
}


def _module(name: str):
    return load_example(name, "blind")


@pytest.fixture(scope="module")
def counted():
    return count_strict(NAMES, BATCH)


def _matrix_ops(workload: dict) -> float:
    return sum(op["flops"] for op in workload["ops"] if op["kind"] in MATRIX_KINDS)


def test_whisper_parameters_are_20_6m():
    assert PARAMS["whisper_encoder"] == 20_590_592
    assert PARAMS["whisper_encoder"] - 1500 * 512 == 19_822_592   # OpenAI's count, table as a buffer


@pytest.mark.parametrize("name", NAMES)
def test_parameter_counts_match_published(counted, name):
    assert counted[name]["params"] == PARAMS[name]


@pytest.mark.parametrize("name", NAMES)
def test_counts_strictly_with_no_unsupported_operator(counted, name):
    check_strict_count(counted[name], PARAMS[name], BATCH)


def test_efficientnet_b0_is_0_39_gmacs(counted):
    """Tan & Le 2019, Table 2: 0.39B FLOPS (multiply-adds) at 224x224 = 0.78 G operations per image."""
    w = counted["efficientnet_b0"]
    assert w["flops"] / BATCH == pytest.approx(0.78e9, rel=0.03)
    assert _matrix_ops(w) / BATCH == pytest.approx(0.78e9, rel=0.03)


def test_efficientnet_b0_matches_flop_counter_mode(counted):
    """torch's FlopCounterMode on a real forward (2 per multiply-add, like us) agrees on conv and linear."""
    mod = _module("efficientnet_b0")
    model = mod.build_model().eval()
    mode = FlopCounterMode(display=False)
    with torch.no_grad(), mode:
        out = model(mod.example_inputs(1))
    assert out.shape == (1, 1000)
    theirs = {str(k): v for k, v in mode.get_flop_counts()["Global"].items()}
    assert _matrix_ops(counted["efficientnet_b0"]) / BATCH == theirs["aten.convolution"] + theirs["aten.addmm"]


def test_swin_tiny_is_4_5_gmacs(counted):
    """Liu et al. 2021, Table 1: 4.5G FLOPs (multiply-adds) at 224x224 = ~9.0 G operations per image."""
    w = counted["swin_tiny"]
    assert w["flops"] / BATCH == pytest.approx(9.0e9, rel=0.03)
    # Exact, per image. Tokens T and width C per stage: (3136, 96), (784, 192), (196, 384), (49, 768);
    # T * C^2 = 28,901,376 in every stage.
    # Linear per block: qkv 3C^2 + proj C^2 + MLP 8C^2 = 12 T C^2 = 346,816,512 MACs, x 12 blocks.
    # Patch merging: T/4 tokens x 4C -> 2C = 2 T C^2 = 57,802,752 MACs, x 3. Head 768 * 1000.
    linear_macs = 12 * 12 * 28_901_376 + 3 * 2 * 28_901_376 + 768 * 1000          # 4,335,974,400
    # Window attention, QK^T and PV: 2 * T * 49 * C MACs per block, depths (2, 2, 6, 2).
    attention_macs = 2 * 49 * (2 * 3136 * 96 + 2 * 784 * 192 + 6 * 196 * 384 + 2 * 49 * 768)  # 140,141,568
    patch_embed_macs = 3136 * 96 * (3 * 4 * 4)                                     # 14,450,688
    # With a float mask SDPA runs PyTorch's math path (measured on the H200): window attention is counted
    # kernel by kernel, QK^T and PV as two bmm (matmul kind), behind a zero-cost attention marker.
    ops = {kind: sum(op["flops"] for op in w["ops"] if op["kind"] == kind) / BATCH for kind in MATRIX_KINDS}
    assert ops == {"matmul": 2 * linear_macs + 2 * attention_macs, "attention": 0, "conv": 2 * patch_embed_macs}
    assert linear_macs + attention_macs + patch_embed_macs == 4_490_566_656
    markers = [op for op in w["ops"] if op["name"] == "aten.scaled_dot_product_attention"]
    assert len(markers) == 12 and all(op["kernels"] == 0 and op["flops"] == 0 for op in markers)
    assert sum(op["name"] == "aten.bmm" for op in w["ops"]) == 24
    # First block (not shifted): the mask add reads the (2 x 64 windows, 3 heads, 49, 49) fp32 scores and the
    # (3, 49, 49) position bias broadcast over them, and writes the scores.
    scores = 4 * 2 * 64 * 3 * 49 * 49
    first_add = next(op for op in w["ops"] if op["name"] == "aten.add" and op["module"] == "features.0.attn"
                     and op["bytes_written"] == scores)
    assert first_add["bytes_read"] == scores + 4 * 3 * 49 * 49


def test_whisper_encoder_operations(counted):
    """No published figure: derived by hand, per 30 s clip (3000 mel frames -> 1500 positions)."""
    w = counted["whisper_encoder"]
    conv_macs = 3000 * 512 * 80 * 3 + 1500 * 512 * 512 * 3                        # 1,548,288,000
    linear_macs = 6 * 1500 * (4 * 512 * 512 + 2 * 512 * 2048)                      # 28,311,552,000
    attention_macs = 6 * 2 * 8 * 1500 * 1500 * 64                                  # 13,824,000,000
    ops = {kind: sum(op["flops"] for op in w["ops"] if op["kind"] == kind) / BATCH for kind in MATRIX_KINDS}
    assert ops == {"conv": 2 * conv_macs, "matmul": 2 * linear_macs, "attention": 2 * attention_macs}
    assert 2 * (conv_macs + linear_macs + attention_macs) == 87_367_680_000        # ~87.4 G operations
    assert sum(op["kind"] == "attention" for op in w["ops"]) == 6


def test_swin_shift_mask_and_bias_index():
    mod = _module("swin_tiny")
    mask = mod.shift_mask(14, 7, 3)     # stage 2: 2x2 windows
    assert mask.shape == (4, 49, 49)
    assert (mask[0] == 0).all()         # the top-left window is one region: nothing masked
    # Top-right window: 7 rows x 4 columns of one region, 7 x 3 of the other: 28^2 + 21^2 pairs kept.
    assert int((mask[1] == 0).sum()) == 28 ** 2 + 21 ** 2
    # Bottom-right window: four regions of 4x4, 4x3, 3x4, 3x3 tokens.
    assert int((mask[3] == 0).sum()) == 16 ** 2 + 12 ** 2 + 12 ** 2 + 9 ** 2
    index = mod.relative_position_index(7)
    assert index.shape == (49 * 49,) and int(index.min()) == 0 and int(index.max()) == 13 * 13 - 1
    assert int(index[0]) == 6 * 13 + 6  # a token and itself: offset (0, 0), the centre of the 13x13 table


def test_whisper_sinusoids():
    mod = _module("whisper_encoder")
    table = mod.sinusoids(1500, 512)
    assert table.shape == (1500, 512)
    assert torch.equal(table[0], torch.cat([torch.zeros(256), torch.ones(256)]))  # sin 0, cos 0
    assert table[1, 0] == pytest.approx(torch.sin(torch.tensor(1.0)).item())      # fastest: timescale 1
