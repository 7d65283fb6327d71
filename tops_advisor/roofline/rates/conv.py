"""Convolutions on tensor cores: implicit GEMM x the convolution factor, and the kernels cuDNN picks instead.

``conv_rate`` is one ordered table (``CONV_RATE_RULES``): the ResNet stem's own kernel, thin-input stems,
misaligned 1x1 convolutions, grouped ones channels-last and in NCHW, then implicit GEMM for the rest.
``depthwise_rate`` is another (``DEPTHWISE_RULES``): direct kernels on the vector units.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from ...catalog import Hardware
from ...kinds import OpKind
from ...workload import CHANNELS_LAST_FAMILY, NATIVE_DEPTHWISE_FAMILY
from ..arrays import OpArrays
from ..defaults import RooflineDefaults
from ..device import DevicePerf
from ..rules import Rule, always, first_match
from .common import SIMT_PRECISIONS, element_bytes, peak, tile_efficiency


def channels_last(a: OpArrays) -> np.ndarray:
    """Convolutions run channels-last (NHWC: inductor's layout decision)."""
    return a.family == CHANNELS_LAST_FAMILY


def tf32_cudnn_pointwise(a: OpArrays) -> np.ndarray:
    """fp32 (TF32) 1x1 convolutions in NCHW: cuDNN runs them with its CUTLASS convolution kernels
    (``cutlass_80_tensorop_s1688gemm``, H200 profiles), not the GEMM library's, so they take the convolution
    class and its TF32 factor. H200 profiles, 756 one-kernel TF32 1x1 convolutions over 200 MFLOP at batch
    >= 8: 113 TFLOPS median, at most 220, where the GEMM rate predicted 0.62 of their time."""
    return (a.dtype == "fp32") & ~channels_last(a)


def plain_gemm_plane(a: OpArrays, d: RooflineDefaults) -> np.ndarray:
    """Convolutions whose output can be the contiguous row of a plain GEMM: channels-last ones (the channels
    are the row), and NCHW ones whose spatial plane is a multiple of ``pointwise_plane_alignment_bytes``
    (``RooflineDefaults.pointwise_plane_alignment_bytes``). A plane of one element (NCHW is then NHWC) or one
    that is not known (0) counts as aligned."""
    row = a.plane * element_bytes(a)
    aligned = np.mod(row, d.pointwise_plane_alignment_bytes.value) == 0
    # a 1x1 plane (squeeze-excite, classifier heads) is NHWC too: the channels are the row
    return aligned | (a.plane <= 1) | channels_last(a)


def conv_factor(hw: Hardware, precision: str, d: RooflineDefaults) -> float:
    """Share of the GEMM rate a convolution reaches on this card: A / (1 + c x intensity), A and c fixed by the
    two H200 measurements (``RooflineDefaults.conv_reference_intensity``); intensity = datasheet peak of the
    precision / datasheet bandwidth. TF32 convolutions start from the TF32 point. Plain FP32 (SIMT)
    convolutions take ``conv_simt_factor``: cuDNN's SIMT kernels run in NCHW with no layout conversions."""
    if precision in SIMT_PRECISIONS:
        return d.conv_simt_factor.value
    wide = precision == "tf32"
    f_ref = d.conv_tf32_factor.value if wide else d.conv_factor.value
    datasheet = hw.dense_tops.get(precision)
    if not d.conv_intensity_scaling.value or datasheet is None:
        return f_ref
    reference = d.conv_reference_intensity.value
    i16, i32 = reference["fp16"].value, reference["tf32"].value
    f16, f32 = d.conv_factor.value, d.conv_tf32_factor.value
    denominator = f16 * i16 - f32 * i32
    c = (f32 - f16) / denominator if denominator > 0 else 0.0
    if c <= 0:
        return f_ref
    intensity = datasheet * 1e12 / hw.memory_bandwidth_bytes_per_s
    return f_ref * (1.0 + c * (i32 if wide else i16)) / (1.0 + c * intensity)


def winograd_speedup(a: OpArrays, hw: Hardware, precision: str, d: RooflineDefaults) -> np.ndarray:
    """Per convolution: how much faster cuDNN's Winograd runs it than implicit GEMM (1 where it does not
    apply). Only plain FP32 (SIMT) convolutions on NVIDIA cards with a 3x3 window, stride 1, dilation 1 and
    no groups: ``RooflineDefaults.winograd_speedup``."""
    if precision != "fp32" or hw.vendor != "NVIDIA":
        return np.ones(a.window.shape[0])
    eligible = (a.window == 9) & (a.spatial == 2) & (a.groups <= 1) & (a.stride == 1) & (a.dilation == 1)
    return np.where(eligible, d.winograd_speedup.value, 1.0)


@dataclass(frozen=True)
class ConvContext:
    """What the convolution rules read beside the operators: the device, the precision they run at, the
    convolution factor, Winograd's speed-up per operator and the datasheet peak (0 where the card has none)."""

    perf: DevicePerf
    precision: str
    factor: float
    winograd: np.ndarray
    datasheet_ops_per_s: float

    @property
    def d(self) -> RooflineDefaults:
        return self.perf.defaults


def _grouped(a: OpArrays, c: ConvContext) -> np.ndarray:
    return a.groups > 1


def _grouped_generic(a: OpArrays, c: ConvContext) -> np.ndarray:
    """Channels-last grouped 16-bit convolutions whose channels per group are not a power of two, on an
    architecture where cuDNN was measured to slice them (``grouped_generic_architectures``)."""
    width = np.rint(a.k / np.maximum(a.window, 1.0)).astype(np.int64)
    power_of_two = (width > 0) & ((width & (width - 1)) == 0)
    return (_grouped(a, c) & channels_last(a) & ~power_of_two & (c.precision not in ("tf32", *SIMT_PRECISIONS))
            & (c.perf.hardware.architecture in c.d.grouped_generic_architectures.value))


def _thin(a: OpArrays, c: ConvContext) -> np.ndarray:
    return thin_input(a, c.precision, c.d) & (c.perf.hardware.architecture in c.d.thin_conv_architectures.value)


def _first_layer(a: OpArrays, c: ConvContext) -> np.ndarray:
    """The ResNet stem: 7x7, stride 2, 64 outputs, at most 4 input channels, on a card with this peak."""
    stem = (a.window == 49) & (a.stride == 2) & (a.n == 64) & (a.k <= 4 * 49)
    return _thin(a, c) & stem & (c.datasheet_ops_per_s > 0)


def _implicit_gemm_rate(a: OpArrays, c: ConvContext) -> np.ndarray:
    return (peak(c.perf, c.precision, OpKind.CONV) * c.factor * c.winograd
            * tile_efficiency(a, c.perf, OpKind.CONV, c.precision, aligned=True))


CONV_RATE_RULES: tuple[Rule[ConvContext], ...] = (
    Rule("first layer, channels-last", lambda a, c: _first_layer(a, c) & channels_last(a),
         lambda a, c: c.datasheet_ops_per_s * c.d.first_layer_channels_last_factor.value,
         "cuDNN's NHWC image_first_layer kernel behind two padding kernels (first_layer_channels_last_factor)"),
    Rule("first layer", _first_layer,
         lambda a, c: c.datasheet_ops_per_s * c.d.first_layer_conv_factor.value,
         "cuDNN's tensor-core image_first_layer kernel for the ResNet stem (first_layer_conv_factor)"),
    Rule("thin input, channels-last", lambda a, c: _thin(a, c) & channels_last(a) & (c.datasheet_ops_per_s > 0),
         lambda a, c: thin_channels_last_rate(a, c.datasheet_ops_per_s, c.d),
         "cuDNN's indexed NHWC tensor-core kernel for stems of 1-4 channels (thin_channels_last_rate)"),
    Rule("thin input", _thin, lambda a, c: thin_conv_rate(a, c.perf),
         "stems of 1-4 channels run cuDNN's CUDA-core kernels (thin_conv_rate)"),
    Rule("misaligned 1x1",
         lambda a, c: misaligned_pointwise(a, c.d) & (c.precision not in ("tf32", *SIMT_PRECISIONS)),
         lambda a, c: misaligned_pointwise_rate(a, c.perf, c.precision),
         "16-bit NCHW 1x1 convolutions off the GEMM row alignment: a GEMM between two layout conversions"),
    Rule("grouped, channels-last, sliced", _grouped_generic,
         lambda a, c: 2.0 * a.k / c.d.grouped_generic_element_s.value,
         "cuDNN slices channels-last groups that are not a power of two wide: a time per output element "
         "(grouped_generic_element_s)"),
    Rule("grouped, channels-last", lambda a, c: _grouped(a, c) & channels_last(a),
         lambda a, c: grouped_channels_last_rate(a, c.perf, c.precision),
         "cuDNN's NHWC grouped kernels pack several groups in one 64-channel tile"),
    Rule("grouped, NCHW",
         lambda a, c: _grouped(a, c) & ~channels_last(a) & (c.precision not in SIMT_PRECISIONS),
         lambda a, c: grouped_nchw_rate(a, c.perf, c.precision, c.factor * c.winograd),
         "each group padded and run in tiles at least 64 channels wide behind layout conversions"),
    Rule("implicit GEMM", always, _implicit_gemm_rate,
         "the GEMM rate of the implicit GEMM x the convolution factor (x Winograd's speed-up where it applies)"),
)


def conv_context(a: OpArrays, perf: DevicePerf, precision: str) -> ConvContext:
    peak(perf, precision, OpKind.CONV)  # a precision the card lacks is an error whichever rule applies
    factor = conv_factor(perf.hardware, precision, perf.defaults)
    return ConvContext(perf, precision, factor, winograd_speedup(a, perf.hardware, precision, perf.defaults),
                       perf.hardware.dense_tops.get(precision, 0.0) * 1e12)


def conv_rate(a: OpArrays, perf: DevicePerf, precision: str) -> np.ndarray:
    """A convolution's rate: the first rule of ``CONV_RATE_RULES`` that applies to it; for an fp32 convolution
    PyTorch runs in TF32, the faster of that and cuDNN's plain-FP32 kernels (``fp32_simt_rate``)."""
    rate = first_match(CONV_RATE_RULES, a, conv_context(a, perf, precision))
    if precision == "tf32":
        rate = np.maximum(rate, fp32_simt_rate(a, perf))
    return rate


def fp32_simt_rate(a: OpArrays, perf: DevicePerf) -> np.ndarray:
    """The rate of cuDNN's plain-FP32 kernels on the CUDA cores for ungrouped NCHW convolutions (the SIMT
    rate of cards without TF32, with Winograd's speed-up where it applies: ``winograd_speedup``), on cards
    where TF32 buys little; 0 elsewhere. PyTorch lets cuDNN run fp32 convolutions in TF32, and cuDNN keeps
    whichever algorithm is faster: where TF32 is many times the FP32 rate (A100: 156 against 19.5 TFLOPS,
    H100, H200) the TF32 implicit GEMM wins and this rate is not offered; on cards whose TF32 peak is at most
    ``fp32_simt_tf32_max_ratio`` x FP32 (GeForce GA10x, AD10x, GB20x: the GA102 whitepaper's RTX 3090 TF32 35.6
    and FP32 35.6; 2x on the A10, L4, L40S) the SIMT kernels pay no NCHW<->NHWC conversion, and Winograd's
    2.25x fewer multiplies win outright. Seen: PyTorch's fp32 3x3 convolution at 86.9 TFLOPS on an RTX 3090
    (tinygrad PR #1675, 2023), above both 35.6 TFLOPS peaks, which only a reduced-multiply algorithm reaches."""
    hw, d = perf.hardware, perf.defaults
    tf32, fp32 = hw.dense_tops.get("tf32"), hw.dense_tops.get("fp32")
    eligible = (a.groups <= 1) & ~channels_last(a)
    if not eligible.any() or not tf32 or not fp32 or tf32 > d.fp32_simt_tf32_max_ratio.value * fp32 * 1.01:
        return np.zeros(len(a))
    simt = (peak(perf, "fp32", OpKind.CONV) * d.conv_simt_factor.value * winograd_speedup(a, hw, "fp32", d)
            * tile_efficiency(a, perf, OpKind.CONV, "fp32", aligned=True))
    return np.where(eligible, simt, 0.0)


def thin_input(a: OpArrays, precision: str, d: RooflineDefaults) -> np.ndarray:
    """Convolutions on tensor-core precisions whose input has fewer channels than a tensor-core fragment
    (``k`` is input channels x window for an ungrouped convolution): image stems with 1-4 channels. TF32 ones
    too: cuDNN runs them on the CUDA cores in FP32 (``implicit_convolve_sgemm``,
    ``xmma_fprop_implicit_gemm_f32f32_f32f32``, the 7x7 stem's indexed kernel; H200 profiles of 17 models)."""
    if precision in SIMT_PRECISIONS:
        return np.zeros(a.k.shape[0], dtype=bool)
    channels = a.k / np.maximum(a.window, 1.0)
    return (a.groups <= 1) & (a.window > 1) & (channels < d.thin_conv_channels.value)


def thin_conv_rate(a: OpArrays, perf: DevicePerf) -> np.ndarray:
    """The rate of a thin-input convolution: cuDNN's CUDA-core kernels, a share of the FP32 CUDA-core peak that
    grows with the multiply-adds per output element (``k``) over a fixed cost per element."""
    d = perf.defaults
    fp32 = perf.hardware.dense_tops.get("fp32")
    cuda_core = fp32 * 1e12 if fp32 is not None else perf.vector_ops_per_s / d.vector_fraction.value
    return cuda_core * d.thin_conv_fp32_factor.value * a.k / (a.k + d.thin_conv_k0.value)


def thin_channels_last_rate(a: OpArrays, datasheet: float, d: RooflineDefaults) -> np.ndarray:
    """A thin-input convolution channels-last: cuDNN's indexed NHWC tensor-core kernel, a share of the
    datasheet peak with the NCHW rule's fixed cost per output element and the kernel's output-channel tile."""
    tile = d.thin_conv_channels_last_tile.value
    used = a.n / (tile * np.ceil(a.n / tile))
    return datasheet * d.thin_conv_channels_last_factor.value * a.k / (a.k + d.thin_conv_k0.value) * used


def grouped_channels_last_rate(a: OpArrays, perf: DevicePerf, precision: str) -> np.ndarray:
    """A grouped convolution run channels-last (cuDNN's NHWC kernels, as inductor runs it): each tile holds
    ``tile // (channels per group)`` groups (at most all of them), runs the dense implicit GEMM of their
    channels (m x groups*n x k*packed, one GEMM for the layer) at the GEMM rate, and keeps 1/packed of it
    (the block-diagonal weight's nonzero blocks). No NCHW conversions, so no convolution factor."""
    tile = perf.defaults.grouped_channels_last_tile_channels.value
    groups = np.maximum(a.groups, 1.0)
    packed = np.clip(np.floor(tile / np.maximum(a.n, 1.0)), 1.0, groups)
    dense = dataclasses.replace(a, n=a.n * groups, k=a.k * packed, groups=np.ones_like(groups))
    return peak(perf, precision, OpKind.CONV) * tile_efficiency(dense, perf, OpKind.CONV, precision,
                                                                aligned=True) / packed


def padded_group_width(channels: np.ndarray) -> np.ndarray:
    """The channels per group a grouped kernel computes: the next power of two up to 128, then the next
    multiple of 64 (cuDNN pads a group to its tile; H200 sweep, ``studies/grouped-conv/h200_grouped_conv_groups.json``:
    24 per group runs at 16's rate, 48 and 56 at under 64's)."""
    c = np.maximum(np.asarray(channels, dtype=np.float64), 1.0)
    pow2 = 2.0 ** np.ceil(np.log2(c))
    return np.where(c <= 128, pow2, np.ceil(c / 64.0) * 64.0)


def grouped_nchw_rate(a: OpArrays, perf: DevicePerf, precision: str, factor: float | np.ndarray) -> np.ndarray:
    """A grouped convolution in NCHW (cuDNN's NHWC tensor-core kernels behind layout conversions). Each group
    is padded to ``padded_group_width`` channels and run in tiles at least ``grouped_nchw_tile_channels``
    wide (narrower groups share a tile or pad it), so the work done is m x groups x padded x window x
    max(padded, tile) whatever the group width: at 4-64 channels per group the time of one shape is nearly
    constant (H200 sweep, ``studies/grouped-conv/h200_grouped_conv_groups.json``). That work runs at the convolution rate
    of its dense shape (``factor``: the convolution factor); the useful share is (width/padded) x
    (width/tile width)."""
    width = np.maximum(a.n, 1.0)
    padded = padded_group_width(width)
    tile = np.maximum(padded, perf.defaults.grouped_nchw_tile_channels.value)
    window = np.maximum(a.window, 1.0)
    dense = dataclasses.replace(a, n=tile, k=window * tile, groups=np.ceil(np.maximum(a.groups, 1.0) * padded / tile))
    eff = tile_efficiency(dense, perf, OpKind.CONV, precision, aligned=True)
    return peak(perf, precision, OpKind.CONV) * factor * eff * (width / padded) * (width / tile)


def misaligned_pointwise(a: OpArrays, d: RooflineDefaults) -> np.ndarray:
    """Ungrouped NCHW 1x1 convolutions whose plane is not a plain GEMM row (``plain_gemm_plane``)."""
    return (a.is_kind(OpKind.CONV) & (a.window == 1) & (a.groups <= 1) & ~plain_gemm_plane(a, d)
            & ~channels_last(a))


def misaligned_pointwise_rate(a: OpArrays, perf: DevicePerf, precision: str) -> np.ndarray:
    """A 16-bit 1x1 convolution at a misaligned plane: cuDNN converts its input to NHWC, runs the GEMM over the
    channels and converts the output back. The time is the GEMM's (``pointwise_conv_rate``) plus the two
    conversions, each a permuted copy (read and write) at the strided-copy share of the bandwidth
    (``strided_kind_bandwidth_factor["copy"]``), returned as the rate that gives it. H200 profiles, 1,148 such
    fp16 convolutions over 200 MFLOP: 0.93 (2-byte planes) and 1.23 (8-byte) of their time, where the
    convolution class gave 0.47 and 0.66."""
    d = perf.defaults
    flops = np.maximum(2.0 * a.m * a.n * a.k, 1.0)
    conversions = 2.0 * a.m * (a.k + a.n) * element_bytes(a)
    seconds = flops / pointwise_conv_rate(a, perf, precision) + conversions / (
        perf.bandwidth_bytes_per_s * d.strided_kind_bandwidth_factor.value["copy"])
    return flops / seconds


def pointwise_conv_rate(a: OpArrays, perf: DevicePerf, precision: str) -> np.ndarray:
    """A 1x1 convolution is a plain GEMM over the channels: GEMM kernels, GEMM's rate (cuDNN's split-K and
    alignment rules, not cuBLAS's)."""
    return peak(perf, precision, OpKind.CONV) * tile_efficiency(a, perf, OpKind.CONV, precision, aligned=True)


@dataclass(frozen=True)
class DepthwiseContext:
    d: RooflineDefaults
    width: str    # "16-bit" or "32-bit": the share of the vector rate the operator's kernels reach


DEPTHWISE_RULES: tuple[Rule[DepthwiseContext], ...] = (
    Rule("dilated, channels-last", lambda a, c: channels_last(a) & (a.dilation > 1),
         lambda a, c: c.d.depthwise_dilated_channels_last_vector_factor.value,
         "no NHWC depthwise kernel: cuDNN's generic conv2d_grouped_direct_kernel, far slower"),
    Rule("channels-last", lambda a, c: channels_last(a),
         lambda a, c: c.d.depthwise_channels_last_vector_factor.value[c.width],
         "cuDNN's direct NHWC kernels (as inductor runs them): a larger share"),
    Rule("PyTorch's 2-D kernel", lambda a, c: (a.spatial == 2) & ((a.family == NATIVE_DEPTHWISE_FAMILY)
                                                               | (a.dtype == "bf16")),
         lambda a, c: c.d.depthwise_vector_factor.value["32-bit"],
         "PyTorch's own depthwise kernel (counting.conv_backend; bf16 always) computes in fp32"),
    Rule("1-D", lambda a, c: a.spatial == 1, lambda a, c: c.d.depthwise_1d_vector_factor.value[c.width],
         "cuDNN's conv1D_NCHW kernels"),
    Rule("2-D", always, lambda a, c: c.d.depthwise_vector_factor.value[c.width], "cuDNN's direct NCHW kernels"),
)


def depthwise_rate(a: OpArrays, perf: DevicePerf, precision: str) -> np.ndarray:
    """Direct depthwise kernels are slow per operation: a share of the vector rate, by kernel
    (``DEPTHWISE_RULES``)."""
    context = DepthwiseContext(perf.defaults, "32-bit" if precision == "fp32" else "16-bit")
    return perf.vector_ops_per_s * first_match(DEPTHWISE_RULES, a, context) / depthwise_gradient_slowdown(a, perf.defaults)


def depthwise_gradient_slowdown(a: OpArrays, d: RooflineDefaults) -> np.ndarray:
    """How much slower PyTorch's depthwise backward kernels run than its forward one (1 for other operators)."""
    out = np.ones(len(a))
    for family, factor in d.depthwise_gradient_slowdown.value.items():
        out = np.where(a.family == family, factor, out)
    return out
