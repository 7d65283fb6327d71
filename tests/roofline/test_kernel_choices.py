"""Which kernels the counter and predictor assume PyTorch picks on CUDA: the depthwise backend
(counting.conv_backend), cuDNN's GEMM path for 1x1 convolutions with an aligned plane (rates.plain_gemm_plane),
cuDNN's channels-last output layout, the fused-attention head-dimension rules and cuDNN's grouped-convolution
tiles."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from tests.conftest import make_hardware
from tests.counting.backward_step import count_step
from tops_advisor.catalog import load_catalog
from tops_advisor.counting import count_module
from tops_advisor.counting.conv_backend import depthwise_family
from tops_advisor.roofline import predict
from tops_advisor.roofline.arrays import op_arrays
from tops_advisor.roofline.defaults import DEFAULTS, Default, GemmTile
from tops_advisor.roofline.device import device_perf
from tops_advisor.roofline.predict import device_times
from tops_advisor.roofline.rates import CLASSES, bandwidth_factors, op_classes, padded_group_width
from tops_advisor.workload import NATIVE_DEPTHWISE_FAMILY, NoteKind, Workload

NATIVE = NATIVE_DEPTHWISE_FAMILY


@pytest.mark.parametrize("x, w, stride, dilation, groups, expected", [
    ((8, 64, 28, 28), (64, 1, 3, 3), (1, 1), (1, 1), 64, ""),          # 3x3 stride 1: cuDNN
    ((8, 64, 28, 28), (64, 1, 5, 5), (1, 1), (1, 1), 64, ""),          # 5x5 stride 1: cuDNN
    ((8, 64, 28, 28), (64, 1, 7, 7), (1, 1), (1, 1), 64, NATIVE),      # 7x7: never cuDNN (ConvNeXt, ConvMixer)
    ((8, 16, 28, 28), (16, 1, 3, 3), (1, 1), (1, 1), 16, NATIVE),      # fewer than 32 channels
    ((8, 64, 28, 28), (64, 1, 3, 3), (1, 1), (2, 2), 64, NATIVE),      # dilated
    ((8, 64, 6, 6), (64, 1, 3, 3), (1, 1), (1, 1), 64, NATIVE),        # narrower than 7
    ((8, 64, 28, 28), (64, 1, 3, 3), (3, 3), (1, 1), 64, NATIVE),      # stride 3
    ((1, 64, 56, 56), (64, 1, 3, 3), (2, 2), (1, 1), 64, ""),          # stride 2, batch 1: cuDNN
    ((8, 144, 56, 56), (144, 1, 3, 3), (2, 2), (1, 1), 144, NATIVE),   # stride 2, batch 8, < 256 channels
    ((8, 256, 28, 28), (256, 1, 5, 5), (2, 2), (1, 1), 256, ""),       # stride 2, 256 channels at width 28
    ((8, 512, 14, 14), (512, 1, 3, 3), (2, 2), (1, 1), 512, ""),       # stride 2, 512 channels
    ((8, 64, 28, 28), (64, 8, 3, 3), (1, 1), (1, 1), 8, ""),           # grouped, not depthwise
    ((8, 64, 28, 28), (64, 64, 3, 3), (1, 1), (1, 1), 1, ""),          # dense
    ((8, 64, 100), (64, 1, 9), (1,), (1,), 64, ""),                    # 1-D: its own kernels
])
def test_pytorch_depthwise_backend_rule(x, w, stride, dilation, groups, expected):
    assert depthwise_family(x, w, stride, dilation, groups, transposed=False) == expected


class _Block(nn.Module):
    """A 1x1 convolution on a channels-last input, then a 7x7 depthwise one on its output (channels-last on the
    GPU, where the meta kernel writes NCHW), then one on an NCHW copy."""

    def __init__(self):
        super().__init__()
        self.pw = nn.Conv2d(64, 64, 1)
        self.dw = nn.Conv2d(64, 64, 7, padding=3, groups=64)
        self.dw_nchw = nn.Conv2d(64, 64, 7, padding=3, groups=64)

    def forward(self, x):
        y = self.dw(self.pw(x.contiguous(memory_format=torch.channels_last)))
        return self.dw_nchw(y.contiguous())


def test_channels_last_input_keeps_cudnn_through_a_convolution():
    """cuDNN writes a channels-last input's convolution channels-last (the meta kernel writes NCHW), so the
    depthwise convolution after it runs cuDNN's NHWC kernel; the same on an NCHW copy runs PyTorch's."""
    w = count_module(_Block(), torch.randn(2, 64, 28, 28), "fp16")
    family = {o.module: o.family for o in w.ops if o.kind == "conv"}
    assert family == {"pw": "", "dw": "", "dw_nchw": NATIVE}


def test_native_depthwise_runs_at_the_32_bit_share_in_fp16():
    hw = load_catalog().get("h200-sxm")
    d = DEFAULTS
    w = count_module(_Block(), torch.randn(32, 64, 28, 28), "fp16")
    p = {o.module: op for o, op in zip(w.ops, predict(w, hw, mode="graph").ops, strict=True) if o.kind == "conv"}
    assert p["dw_nchw"].compute_s / p["dw"].compute_s == pytest.approx(
        d.depthwise_vector_factor.value["16-bit"] / d.depthwise_vector_factor.value["32-bit"])


class _Pointwise(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(64, 128, 1)

    def forward(self, x):
        return self.conv(x)


@pytest.mark.parametrize("size, dtype, channels_last, cls", [
    (28, "fp16", False, "pointwise_conv"),   # 784 x 2 bytes: a multiple of 16
    (14, "fp16", False, "conv"),             # 196 x 2 = 392 bytes: cuDNN's convolution kernels
    (7, "fp16", False, "conv"),              # 49 x 2 bytes
    (14, "fp32", False, "conv"),             # 196 x 4 = 784 bytes, but TF32: cuDNN's CUTLASS convolution kernels
    (7, "fp32", False, "conv"),
    (14, "fp32", True, "pointwise_conv"),    # channels-last (inductor): a GEMM
    (28, "bf16", False, "pointwise_conv"),
    (1, "fp16", False, "pointwise_conv"),    # a 1x1 plane is NHWC: squeeze-excite
    (7, "fp16", True, "pointwise_conv"),     # channels-last: the channels are the row
])
def test_pointwise_convolutions_are_plain_gemms_only_with_an_aligned_plane(size, dtype, channels_last, cls):
    x = torch.randn(4, 64, size, size)
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    w = count_module(_Pointwise(), x, dtype)
    conv = [i for i, o in enumerate(w.ops) if o.kind == "conv"]
    assert w.ops[conv[0]].gemm.plane == size * size
    a = op_arrays(w)
    if channels_last:   # eager keeps NCHW unless the input says otherwise: mark it as inductor would
        family = a.family.astype("<U32")
        family[conv[0]] = "channels_last"
        a = replace(a, family=family)
    assert CLASSES[op_classes(a, DEFAULTS)[conv[0]]] == cls


class _Residual(nn.Module):
    """ConvNeXt's pattern: a residual add of a convolution's output and a permuted (channels-last) branch, then
    a 7x7 depthwise convolution of the sum."""

    def __init__(self):
        super().__init__()
        self.down = nn.Conv2d(64, 64, 2, stride=2)
        self.dw = nn.Conv2d(64, 64, 7, padding=3, groups=64)

    def forward(self, x):
        y = self.down(x.contiguous(memory_format=torch.channels_last))
        branch = y.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2)   # NHWC work, viewed back as NCHW
        return self.dw(y + branch)


def test_cudnn_output_layout_follows_through_a_residual_add():
    """On the GPU both operands of the add are channels-last, so the sum is, and cuDNN takes the depthwise
    convolution (measured: HF UperNet-ConvNeXt's and RDNet's 7x7 ran conv2d_c1_k1_nhwc_specialized)."""
    w = count_module(_Residual(), torch.randn(2, 64, 28, 28), "fp16")
    assert {o.module: o.family for o in w.ops if o.kind == "conv"} == {"down": "", "dw": ""}


class _Attention(nn.Module):
    def __init__(self, head_dim: int, masked: bool):
        super().__init__()
        self.head_dim, self.masked = head_dim, masked

    def forward(self, x):
        q = x.view(x.shape[0], x.shape[1], 4, self.head_dim).transpose(1, 2)
        mask = torch.ones(x.shape[1], x.shape[1], dtype=torch.bool, device=x.device) if self.masked else None
        return F.scaled_dot_product_attention(q, q, q, attn_mask=mask)


@pytest.mark.parametrize("head_dim, masked, dtype, fused", [
    (64, False, "fp16", True),
    (64, True, "fp16", True),     # memory-efficient takes the mask
    (26, False, "fp16", True),    # flash pads the head dimension
    (26, True, "fp16", False),    # no flash with a mask; memory-efficient needs a multiple of 8
    (28, False, "fp32", True),    # fp32: memory-efficient, a multiple of 4
    (26, False, "fp32", False),
])
def test_fused_attention_needs_an_aligned_head_dimension(head_dim, masked, dtype, fused):
    w = count_module(_Attention(head_dim, masked), torch.randn(2, 16, 4 * head_dim), dtype)
    names = [o.name for o in w.ops]
    assert ("aten.bmm" not in names) == fused


class _LayerNorm(nn.Module):
    def __init__(self, n: int):
        super().__init__()
        self.norm = nn.LayerNorm(n)

    def forward(self, x):
        return self.norm(x)


def test_layer_norm_rows_cost_a_fixed_time_each():
    """One thread block per row: the same bytes in 12x more rows of 64 take longer than in rows of 768, by the
    per-row time of ``layer_norm_row_s`` spread over the SMs."""
    hw = load_catalog().get("h200-sxm")
    d = DEFAULTS
    times = {}
    for n in (64, 768):
        w = count_module(_LayerNorm(n), torch.randn(32, 768 * 768 // n, n), "fp16")
        op = next(o for o in w.ops if o.name == "aten.native_layer_norm")
        assert (op.gemm.m, op.gemm.n) == (32 * 768 * 768 // n, n)
        times[n] = next(p for o, p in zip(w.ops, predict(w, hw, mode="graph").ops, strict=True)
                        if o is op).memory_s
    rows_64, rows_768 = 32 * 768 * 12, 32 * 768
    assert times[64] - times[768] == pytest.approx(
        (rows_64 - rows_768) / hw.compute_units * d.layer_norm_row_s.value["16-bit"]
        * d.layer_norm_reference_clock_mhz.value / (hw.boost_clock_mhz * hw.clock_scale), rel=1e-3)   # weights differ


class _Upsample(nn.Module):
    def forward(self, x):
        return F.interpolate(x.contiguous(memory_format=torch.channels_last), size=(4096, 4096), mode="bilinear")


def test_an_nhwc_upsampling_the_gpu_refuses_is_named():
    """2 x 64 x 4096 x 4096 = 2^31 output elements: PyTorch's NHWC bilinear kernel refuses it on CUDA."""
    w = count_module(_Upsample(), torch.randn(2, 64, 8, 8), "fp16")
    assert [n.kind for n in w.notes] == [NoteKind.GPU_REFUSES]
    assert "refuses outputs of 2^31 - 1 elements" in w.notes[0].text
    assert "2,147,483,648 elements" in w.notes[0].text                    # 2 * 64 * 4096 * 4096
    w = count_module(_Upsample(), torch.randn(1, 64, 8, 8), "fp16")
    assert w.notes == ()


@pytest.mark.parametrize("width, padded", [(4, 4), (16, 16), (24, 32), (48, 64), (56, 64), (64, 64), (112, 128),
                                           (128, 128), (232, 256), (240, 256), (320, 320)])
def test_a_group_is_padded_to_its_kernel_width(width, padded):
    assert padded_group_width(np.array([width]))[0] == padded


def _grouped_conv_time(per_group: int, channels: int = 512, dtype: str = "fp16") -> tuple[float, float]:
    """Predicted compute time and FLOPs of a 3x3 grouped convolution (NCHW, batch 64 at 56x56)."""
    hw = load_catalog().get("h200-sxm")
    conv = nn.Conv2d(channels, channels, 3, padding=1, groups=channels // per_group, bias=False)
    w = count_module(conv, torch.randn(64, channels, 56, 56), dtype)
    op = next(o for o in w.ops if o.name == "aten.convolution")
    return next(p for o, p in zip(w.ops, predict(w, hw, mode="graph").ops, strict=True) if o is op).compute_s, op.flops


def test_narrow_groups_share_a_64_channel_tile():
    """At 4-64 channels per group cuDNN computes every group in a 64-wide tile, so one layer's time barely moves
    with the group width although its FLOPs grow 16x (rates.grouped_nchw_rate)."""
    times = {g: _grouped_conv_time(g)[0] for g in (4, 8, 16, 32, 64)}
    assert max(times.values()) / min(times.values()) < 1.2
    flops = {g: _grouped_conv_time(g)[1] for g in (4, 64)}
    assert flops[64] == pytest.approx(16 * flops[4])


def test_a_group_width_off_a_power_of_two_pays_its_padding():
    """24 channels per group are computed as 32: the same FLOPs take longer than at 32 per group."""
    t24, f24 = _grouped_conv_time(24, channels=768)
    t32, f32 = _grouped_conv_time(32, channels=768)
    assert t24 / f24 > 1.3 * t32 / f32


def test_a_grouped_convolution_takes_its_four_kernel_floor():
    """Layout in, memset or weight transform, the convolution, layout out: a tiny grouped convolution costs the
    grouped floor, a dense one the convolution floor."""
    hw = load_catalog().get("h200-sxm")
    floors = {}
    for groups in (1, 4):
        w = count_module(nn.Conv2d(16, 16, 3, padding=1, groups=groups), torch.randn(1, 16, 8, 8), "fp16")
        op = next(i for i, o in enumerate(w.ops) if o.name == "aten.convolution")
        p = predict(w, hw, mode="graph").ops[op]
        floors[groups] = p.latency_s - max(p.compute_s, p.memory_s)   # floor + gap
    assert floors[4] - floors[1] == pytest.approx(
        DEFAULTS.kind_floor_s.value["grouped_conv"] - DEFAULTS.kind_floor_s.value["conv"], rel=1e-6)


def test_group_norm_rows_stream_one_element_per_clock_in_waves():
    """PyTorch reduces each (sample, group) row in one thread block: at batch 1 with 32 groups (one wave) the
    time grows with the row, and at batch 32 (1,024 rows) it takes rows / SMs waves of that."""
    hw = load_catalog().get("h200-sxm")
    d = DEFAULTS
    times = {}
    for batch in (1, 32):
        w = count_module(nn.GroupNorm(32, 256), torch.randn(batch, 256, 64, 64), "fp16")
        op = next(o for o in w.ops if o.name == "aten.native_group_norm")
        assert (op.gemm.m, op.gemm.n, op.kernels) == (batch * 32, 8 * 64 * 64, 3)
        p = next(p for o, p in zip(w.ops, predict(w, hw, mode="graph").ops, strict=True) if o is op)
        bandwidth = device_perf(hw).bandwidth_bytes_per_s * d.norm_bandwidth_factor.value["group_norm"]["16-bit"]
        times[batch] = p.memory_s - op.bytes / bandwidth
    clock = d.layer_norm_reference_clock_mhz.value / (hw.boost_clock_mhz * hw.clock_scale)
    assert times[1] == pytest.approx(8 * 64 * 64 * d.group_norm_element_s.value["16-bit"] * clock, rel=1e-6)
    assert times[32] == pytest.approx(1024 / hw.compute_units * times[1], rel=1e-6)


class _Transposed(nn.Module):
    def forward(self, x):
        t = x.transpose(1, 2)                      # (batch, time, channels) viewed as (batch, channels, time)
        return F.gelu(t), t + x.transpose(1, 2).contiguous()


def test_an_elementwise_op_on_one_permuted_dense_layout_is_not_strided():
    """TensorIterator runs a unary op on a transposed view in memory order (vectorised); an add of a transposed
    view and a contiguous tensor reads one of them across its layout."""
    w = count_module(_Transposed(), torch.randn(2, 64, 32), "fp16")
    gelu = next(o for o in w.ops if o.name == "aten.gelu")
    add = next(o for o in w.ops if o.name == "aten.add")
    assert not gelu.strided and add.strided


def test_a_thin_input_convolution_in_tf32_runs_on_the_cuda_cores():
    """A ViT's 16x16 patch embedding of a 3-channel image in fp32: cuDNN runs its FP32 CUDA-core kernels
    (TF32 allowed or not), so it attains a share of the FP32 peak, not of the TF32 tensor peak."""
    hw = load_catalog().get("h200-sxm")
    patch = nn.Conv2d(3, 384, 16, stride=16)
    w = count_module(patch, torch.randn(32, 3, 224, 224), "fp32")
    op = next(i for i, o in enumerate(w.ops) if o.name == "aten.convolution")
    p = predict(w, hw, mode="graph").ops[op]
    assert p.flops / p.compute_s <= DEFAULTS.thin_conv_fp32_factor.value * hw.dense_tops["fp32"] * 1e12


def test_a_misaligned_pointwise_convolution_pays_its_layout_conversions():
    """At a 7x7 plane (98 bytes in fp16) cuDNN converts input and output between NCHW and NHWC around the GEMM:
    the time is the GEMM's plus two permuted copies at the strided-copy share of the bandwidth."""
    hw = make_hardware(compute_units=25)   # 100 TOPS fp16, 1000 GB/s HBM3
    one_tile = replace(
        DEFAULTS, matmul_fraction=Default({"NVIDIA": Default(0.5, "test")}, "test"),
        bandwidth_fraction=Default({k: Default(0.5, "test") for k in ("HBM", "GDDR", "LPDDR")}, "test"),
        gemm_tiles=Default((GemmTile(128, 128, 1.0),), "test"), gemm_k_half=Default(0.0, "test"),
        strided_kind_bandwidth_factor=Default({"copy": 0.4}, "test"))
    w = count_module(_Pointwise(), torch.randn(64, 64, 7, 7), "fp16")
    i = next(i for i, o in enumerate(w.ops) if o.kind == "conv")
    op = w.ops[i]
    p = predict(w, hw, mode="graph", perf=device_perf(hw, defaults=one_tile)).ops[i]
    assert (op.gemm.m, op.gemm.n, op.gemm.k, op.flops) == (64 * 7 * 7, 128, 64, 2 * 3136 * 128 * 64)
    # the GEMM: 3136 x 128 in 128 x 128 tiles = 25 tiles (3200 rows, padding 3136 / 3200 = 0.98), one wave on
    # 25 units, no K ramp: 100 TOPS x 0.5 x 0.98 = 49 TFLOPS; 2 x 3136 x 128 x 64 / 49e12 = 1.048576 us
    gemm_s = 1.048576e-6
    # two permuted copies, each read and written: 2 x 3136 x (64 + 128) x 2 bytes = 2,408,448 B at 1000 GB/s x
    # 0.5 x 0.4 = 200 GB/s: 12.04224 us
    copies_s = 12.04224e-6
    assert p.compute_s == pytest.approx(gemm_s + copies_s, rel=1e-9)


def _training_batch_norm_memory_s(channels: int, dtype: torch.dtype, hw) -> tuple[float, float]:
    """(memory time, bytes time) of the forward batch norm of one training step of BatchNorm2d(channels) on a
    (32, channels, 56, 56) input, predicted on ``hw``."""
    bn = nn.BatchNorm2d(channels).to(dtype)
    step = count_step(bn, torch.randn(32, channels, 56, 56, dtype=dtype, requires_grad=True))
    op = next(r for r in step.forward if r.name == "aten.native_batch_norm")
    a = op_arrays(Workload("bn", 32, "bf16" if dtype == torch.bfloat16 else "fp32", (op,)))
    perf = device_perf(hw)
    share = bandwidth_factors(a, op_classes(a, DEFAULTS), DEFAULTS)[0]
    return float(device_times(a, perf).memory[0]), float(a.bytes[0] / (perf.bandwidth_bytes_per_s * share))


def test_training_batch_norm_streams_a_channel_per_block_in_waves():
    """A training batch norm reduces each channel's N*H*W elements in one thread block: with fewer channels
    than SMs it takes one wave of n x batch_norm_element_s (far above its bytes' time); twice the SMs in
    channels takes two waves; bf16 runs PyTorch's native kernels (their own per-element time)."""
    hw = load_catalog().get("h200-sxm")
    d = DEFAULTS.batch_norm_element_s.value
    clock = DEFAULTS.layer_norm_reference_clock_mhz.value / (hw.boost_clock_mhz * hw.clock_scale)
    n = 32 * 56 * 56                                          # 100,352 elements per channel
    one_wave, bytes_s = _training_batch_norm_memory_s(16, torch.float32, hw)
    assert one_wave == pytest.approx(n * d["forward"]["cudnn"] * clock, rel=1e-6)
    assert one_wave > 5 * bytes_s
    two_waves, _ = _training_batch_norm_memory_s(2 * hw.compute_units, torch.float32, hw)
    assert two_waves == pytest.approx(2 * one_wave, rel=1e-6)
    native, _ = _training_batch_norm_memory_s(16, torch.bfloat16, hw)
    assert native == pytest.approx(n * d["forward"]["native"] * clock, rel=1e-6)
