"""What each operator can attain on a device: its compute rate, bandwidth share and floor, by operator class.

Every operator falls in one class (``op_classes``), and each class has one small function that returns its
rate from the device and the defaults. All are pure functions of one operator's own fields (vectorised over the
operators of that class): an operator's prediction never depends on the rest of the workload.

    vector          elementwise, norms, softmax, pooling, copies: the vector rate (they are memory-bound)
    gemm            matmuls: the tensor-core peak x GEMM tile efficiency
    conv            convolutions on tensor cores: the GEMM of their implicit GEMM x the convolution factor;
                    grouped ones in NCHW as padded groups in tiles at least 64 channels wide
                    (``grouped_nchw_rate``), channels-last (inductor) as packed 64-channel tiles
                    (``grouped_channels_last_rate``)
    pointwise_conv  1x1 convolutions whose plane is aligned (``plain_gemm_plane``): plain GEMMs over the
                    channels, the GEMM rate and floor; misaligned ones are ``conv``
    depthwise       few output channels per group: direct kernels on the vector units (channels-last ones at
                    the copy bandwidth)
    attention       fused attention: query blocks x heads in waves, head dims padded to a compiled tier; on
                    Hopper in 16 bits, tile by tile (``tiled_attention_rate``)
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..catalog import Hardware
from ..errors import UnsupportedPrecisionError
from ..units import BYTES_PER_ELEMENT
from ..workload import CHANNELS_LAST_FAMILY, NATIVE_DEPTHWISE_FAMILY, OP_KINDS
from .defaults import RooflineDefaults
from .device import DevicePerf
from .efficiency import attention_efficiency, gemm_efficiency

CLASSES = ("vector", "gemm", "conv", "pointwise_conv", "depthwise", "attention")
SIMT_PRECISIONS = ("fp32", "fp64")   # no tensor cores: SIMT GEMM kernels
_KIND = {k: i for i, k in enumerate(OP_KINDS)}


def op_classes(a: dict, d: RooflineDefaults) -> np.ndarray:
    """The class (index into CLASSES) of each operator, from its kind and GEMM shape alone."""
    kind = a["kind"]
    conv = kind == _KIND["conv"]
    depthwise = conv & (a["b"] > 1) & (a["n"] > 0) & (a["n"] <= d.depthwise_max_channels_per_group)
    cls = np.zeros(kind.shape[0], dtype=np.int64)
    cls[kind == _KIND["matmul"]] = CLASSES.index("gemm")
    cls[conv] = CLASSES.index("conv")
    cls[conv & (a["window"] == 1) & plain_gemm_plane(a, d) & ~tf32_cudnn_pointwise(a)] = CLASSES.index("pointwise_conv")
    cls[kind == _KIND["attention"]] = CLASSES.index("attention")
    cls[depthwise] = CLASSES.index("depthwise")
    return cls


def tf32_cudnn_pointwise(a: dict) -> np.ndarray:
    """fp32 (TF32) 1x1 convolutions in NCHW: cuDNN runs them with its CUTLASS convolution kernels
    (``cutlass_80_tensorop_s1688gemm``, H200 profiles), not the GEMM library's, so they take the convolution
    class and its TF32 factor. H200 profiles, 756 one-kernel TF32 1x1 convolutions over 200 MFLOP at batch
    >= 8: 113 TFLOPS median, at most 220, where the GEMM rate predicted 0.62 of their time."""
    return (a["dtype"] == "fp32") & (a["family"] != CHANNELS_LAST_FAMILY)


def element_bytes(a: dict) -> np.ndarray:
    """Bytes per element of each operator's dtype (2 where the dtype has no entry)."""
    return np.array([BYTES_PER_ELEMENT.get(str(t), 2.0) for t in a["dtype"]])


def plain_gemm_plane(a: dict, d: RooflineDefaults) -> np.ndarray:
    """Convolutions whose output can be the contiguous row of a plain GEMM: channels-last ones (the channels
    are the row), and NCHW ones whose spatial plane is a multiple of ``pointwise_plane_alignment_bytes``
    (``RooflineDefaults.pointwise_plane_alignment_bytes``). A plane of one element (NCHW is then NHWC) or one
    that is not known (0) counts as aligned."""
    row = a["plane"] * element_bytes(a)
    aligned = np.mod(row, d.pointwise_plane_alignment_bytes.value) == 0
    # a 1x1 plane (squeeze-excite, classifier heads) is NHWC too: the channels are the row
    return aligned | (a["plane"] <= 1) | (a["family"] == CHANNELS_LAST_FAMILY)


def matrix_precision(dtype: str, kind: str, hw: Hardware, tf32_matmul: bool) -> str:
    """The peak a tensor operator uses. PyTorch runs fp32 convolutions in TF32 by default
    (cudnn.allow_tf32=True) and fp32 matmuls in plain FP32 (unless TF32 matmuls are switched on)."""
    if dtype == "fp32" and "tf32" in hw.dense_tops and (kind == "conv" or tf32_matmul):
        return "tf32"
    return dtype


def _peak(perf: DevicePerf, precision: str, kind: str) -> float:
    peak = perf.matrix_ops_per_s.get(precision)
    if peak is None:
        hw = perf.hardware
        raise UnsupportedPrecisionError(
            f"{hw.id} has no {precision} peak for {kind} operators; it has {', '.join(hw.dense_tops)}",
            hint="choose one of those with --dtype")
    return peak


def _tile_efficiency(a: dict, perf: DevicePerf, split_kind: str, precision: str, aligned: bool) -> np.ndarray:
    """GEMM tile efficiency of the rows of ``a`` on this device: SIMT tiles for fp32/fp64, tensor-core tiles
    otherwise. ``aligned``: 16-byte alignment assumed (cuDNN pads convolutions; only matmuls pay for it)."""
    d = perf.defaults
    simt = precision in SIMT_PRECISIONS
    split = d.max_split_k[split_kind]
    elem = np.where(aligned | (a["dtype"] == "fp32"), 16.0, element_bytes(a))  # fp32 matmuls: SIMT or TF32, no penalty
    if simt and split_kind == "conv":
        d = dataclasses.replace(d, gemm_k_half=simt_conv_k_half(perf, precision))
    return gemm_efficiency(a["m"], a["n"], a["k"], a["b"], perf.compute_units,
                           min(split, d.max_split_k_simt) if simt else split, elem,
                           tiles=d.gemm_tiles_simt if simt else d.gemm_tiles, defaults=d)


def simt_conv_k_half(perf: DevicePerf, precision: str) -> float:
    """The K ramp's half point for a SIMT convolution on this card: the reference tile's fixed time
    (``gemm_k_half`` K steps of a 128 x 256 tensor-core tile at the H200's fp16 rate) over the time of one K
    step of the largest SIMT tile at this card's rate per compute unit; never above ``gemm_k_half``."""
    d = perf.defaults
    ref_m, ref_n = d.gemm_k_half_reference_tile
    fixed_s = d.gemm_k_half * 2.0 * ref_m * ref_n / d.gemm_k_half_reference_rate_per_unit.value
    tile_m, tile_n, _ = d.gemm_tiles_simt[0]
    step_s = 2.0 * tile_m * tile_n / (_peak(perf, precision, "conv") / perf.compute_units)
    return min(d.gemm_k_half, fixed_s / step_s)


def gemm_rate(a: dict, perf: DevicePerf, precision: str) -> np.ndarray:
    return _peak(perf, precision, "matmul") * _tile_efficiency(a, perf, "matmul", precision, aligned=False)


def conv_factor(hw: Hardware, precision: str, d: RooflineDefaults) -> float:
    """Share of the GEMM rate a convolution reaches on this card: A / (1 + c x intensity), A and c fixed by the
    two H200 measurements (``RooflineDefaults.conv_reference_intensity``); intensity = datasheet peak of the
    precision / datasheet bandwidth. TF32 convolutions start from the TF32 point. Plain FP32 (SIMT)
    convolutions take ``conv_simt_factor``: cuDNN's SIMT kernels run in NCHW with no layout conversions."""
    if precision in SIMT_PRECISIONS:
        return d.conv_simt_factor.value
    wide = precision == "tf32"
    f_ref = d.conv_tf32_factor.value if wide else d.conv_factor.value
    peak = hw.dense_tops.get(precision)
    if not d.conv_intensity_scaling or peak is None:
        return f_ref
    i16, i32 = d.conv_reference_intensity["fp16"].value, d.conv_reference_intensity["tf32"].value
    f16, f32 = d.conv_factor.value, d.conv_tf32_factor.value
    denominator = f16 * i16 - f32 * i32
    c = (f32 - f16) / denominator if denominator > 0 else 0.0
    if c <= 0:
        return f_ref
    intensity = peak * 1e12 / hw.memory_bandwidth_bytes_per_s
    return f_ref * (1.0 + c * (i32 if wide else i16)) / (1.0 + c * intensity)


def winograd_speedup(a: dict, hw: Hardware, precision: str, d: RooflineDefaults) -> np.ndarray:
    """Per convolution: how much faster cuDNN's Winograd runs it than implicit GEMM (1 where it does not
    apply). Only plain FP32 (SIMT) convolutions on NVIDIA cards with a 3x3 window, stride 1, dilation 1 and
    no groups: ``RooflineDefaults.winograd_speedup``."""
    if precision != "fp32" or hw.vendor != "NVIDIA":
        return np.ones(a["window"].shape[0])
    eligible = (a["window"] == 9) & (a["spatial"] == 2) & (a["b"] <= 1) & (a["stride"] == 1) & (a["dilation"] == 1)
    return np.where(eligible, d.winograd_speedup.value, 1.0)


def conv_rate(a: dict, perf: DevicePerf, precision: str) -> np.ndarray:
    factor = conv_factor(perf.hardware, precision, perf.defaults)
    winograd = winograd_speedup(a, perf.hardware, precision, perf.defaults)
    rate = (_peak(perf, precision, "conv") * factor * winograd
            * _tile_efficiency(a, perf, "conv", precision, aligned=True))
    channels_last = a["family"] == CHANNELS_LAST_FAMILY
    grouped = a["b"] > 1
    if (grouped & ~channels_last).any() and precision not in SIMT_PRECISIONS:
        rate = np.where(grouped & ~channels_last, grouped_nchw_rate(a, perf, precision, factor * winograd), rate)
    if (grouped & channels_last).any():
        rate = np.where(grouped & channels_last, grouped_channels_last_rate(a, perf, precision), rate)
    d = perf.defaults
    misaligned = misaligned_pointwise(a, d) & (precision not in ("tf32", *SIMT_PRECISIONS))
    if misaligned.any():
        rate = np.where(misaligned, misaligned_pointwise_rate(a, perf, precision), rate)
    thin = thin_input(a, precision, d) & (perf.hardware.architecture in d.thin_conv_architectures)
    first_layer = thin & (a["window"] == 49) & (a["stride"] == 2) & (a["n"] == 64) & (a["k"] <= 4 * 49)
    datasheet = perf.hardware.dense_tops.get(precision, 0.0) * 1e12
    channels_last = (a["family"] == CHANNELS_LAST_FAMILY) & (datasheet > 0)
    rate = np.where(thin, np.where(channels_last, thin_channels_last_rate(a, datasheet, d),
                                   thin_conv_rate(a, perf)), rate)
    first = np.where(channels_last, d.first_layer_channels_last_factor.value, d.first_layer_conv_factor.value)
    return np.where(first_layer & (datasheet > 0), datasheet * first, rate)


def thin_input(a: dict, precision: str, d: RooflineDefaults) -> np.ndarray:
    """Convolutions on tensor-core precisions whose input has fewer channels than a tensor-core fragment
    (``k`` is input channels x window for an ungrouped convolution): image stems with 1-4 channels. TF32 ones
    too: cuDNN runs them on the CUDA cores in FP32 (``implicit_convolve_sgemm``,
    ``xmma_fprop_implicit_gemm_f32f32_f32f32``, the 7x7 stem's indexed kernel; H200 profiles of 17 models)."""
    if precision in SIMT_PRECISIONS:
        return np.zeros(a["k"].shape[0], dtype=bool)
    channels = a["k"] / np.maximum(a["window"], 1.0)
    return (a["b"] <= 1) & (a["window"] > 1) & (channels < d.thin_conv_channels)


def thin_conv_rate(a: dict, perf: DevicePerf) -> np.ndarray:
    """The rate of a thin-input convolution: cuDNN's CUDA-core kernels, a share of the FP32 CUDA-core peak that
    grows with the multiply-adds per output element (``k``) over a fixed cost per element."""
    d = perf.defaults
    fp32 = perf.hardware.dense_tops.get("fp32")
    peak = fp32 * 1e12 if fp32 is not None else perf.vector_ops_per_s / d.vector_fraction.value
    return peak * d.thin_conv_fp32_factor.value * a["k"] / (a["k"] + d.thin_conv_k0.value)


def thin_channels_last_rate(a: dict, datasheet: float, d: RooflineDefaults) -> np.ndarray:
    """A thin-input convolution channels-last: cuDNN's indexed NHWC tensor-core kernel, a share of the
    datasheet peak with the NCHW rule's fixed cost per output element and the kernel's output-channel tile."""
    tile = d.thin_conv_channels_last_tile
    used = a["n"] / (tile * np.ceil(a["n"] / tile))
    return datasheet * d.thin_conv_channels_last_factor.value * a["k"] / (a["k"] + d.thin_conv_k0.value) * used


def grouped_channels_last_rate(a: dict, perf: DevicePerf, precision: str) -> np.ndarray:
    """A grouped convolution run channels-last (cuDNN's NHWC kernels, as inductor runs it): each tile holds
    ``tile // (channels per group)`` groups (at most all of them), runs the dense implicit GEMM of their
    channels (m x groups*n x k*packed, one GEMM for the layer) at the GEMM rate, and keeps 1/packed of it
    (the block-diagonal weight's nonzero blocks). No NCHW conversions, so no convolution factor."""
    tile = perf.defaults.grouped_channels_last_tile_channels
    groups = np.maximum(a["b"], 1.0)
    packed = np.clip(np.floor(tile / np.maximum(a["n"], 1.0)), 1.0, groups)
    dense = {**a, "n": a["n"] * groups, "k": a["k"] * packed, "b": np.ones_like(groups)}
    return _peak(perf, precision, "conv") * _tile_efficiency(dense, perf, "conv", precision, aligned=True) / packed


def padded_group_width(channels: np.ndarray) -> np.ndarray:
    """The channels per group a grouped kernel computes: the next power of two up to 128, then the next
    multiple of 64 (cuDNN pads a group to its tile; H200 sweep, ``studies/grouped-conv/h200_grouped_conv_groups.json``:
    24 per group runs at 16's rate, 48 and 56 at under 64's)."""
    c = np.maximum(np.asarray(channels, dtype=np.float64), 1.0)
    pow2 = 2.0 ** np.ceil(np.log2(c))
    return np.where(c <= 128, pow2, np.ceil(c / 64.0) * 64.0)


def grouped_nchw_rate(a: dict, perf: DevicePerf, precision: str, factor: float | np.ndarray) -> np.ndarray:
    """A grouped convolution in NCHW (cuDNN's NHWC tensor-core kernels behind layout conversions). Each group
    is padded to ``padded_group_width`` channels and run in tiles at least ``grouped_nchw_tile_channels``
    wide (narrower groups share a tile or pad it), so the work done is m x groups x padded x window x
    max(padded, tile) whatever the group width: at 4-64 channels per group the time of one shape is nearly
    constant (H200 sweep, ``studies/grouped-conv/h200_grouped_conv_groups.json``). That work runs at the convolution rate
    of its dense shape (``factor``: the convolution factor); the useful share is (width/padded) x
    (width/tile width)."""
    width = np.maximum(a["n"], 1.0)
    padded = padded_group_width(width)
    tile = np.maximum(padded, perf.defaults.grouped_nchw_tile_channels)
    window = np.maximum(a["window"], 1.0)
    dense = {**a, "n": tile, "k": window * tile, "b": np.ceil(np.maximum(a["b"], 1.0) * padded / tile)}
    eff = _tile_efficiency(dense, perf, "conv", precision, aligned=True)
    return _peak(perf, precision, "conv") * factor * eff * (width / padded) * (width / tile)


def misaligned_pointwise(a: dict, d: RooflineDefaults) -> np.ndarray:
    """Ungrouped NCHW 1x1 convolutions whose plane is not a plain GEMM row (``plain_gemm_plane``)."""
    return ((a["kind"] == _KIND["conv"]) & (a["window"] == 1) & (a["b"] <= 1) & ~plain_gemm_plane(a, d)
            & (a["family"] != CHANNELS_LAST_FAMILY))


def misaligned_pointwise_rate(a: dict, perf: DevicePerf, precision: str) -> np.ndarray:
    """A 16-bit 1x1 convolution at a misaligned plane: cuDNN converts its input to NHWC, runs the GEMM over the
    channels and converts the output back. The time is the GEMM's (``pointwise_conv_rate``) plus the two
    conversions, each a permuted copy (read and write) at the strided-copy share of the bandwidth
    (``strided_kind_bandwidth_factor["copy"]``), returned as the rate that gives it. H200 profiles, 1,148 such
    fp16 convolutions over 200 MFLOP: 0.93 (2-byte planes) and 1.23 (8-byte) of their time, where the
    convolution class gave 0.47 and 0.66."""
    d = perf.defaults
    flops = np.maximum(2.0 * a["m"] * a["n"] * a["k"], 1.0)
    conversions = 2.0 * a["m"] * (a["k"] + a["n"]) * element_bytes(a)
    seconds = flops / pointwise_conv_rate(a, perf, precision) + conversions / (
        perf.bandwidth_bytes_per_s * d.strided_kind_bandwidth_factor["copy"])
    return flops / seconds


def pointwise_conv_rate(a: dict, perf: DevicePerf, precision: str) -> np.ndarray:
    """A 1x1 convolution is a plain GEMM over the channels: GEMM kernels, GEMM's rate (cuDNN's split-K and
    alignment rules, not cuBLAS's)."""
    return _peak(perf, precision, "conv") * _tile_efficiency(a, perf, "conv", precision, aligned=True)


def depthwise_rate(a: dict, perf: DevicePerf, precision: str) -> np.ndarray:
    """Direct depthwise kernels are slow per operation: a share of the vector rate (2-D and 1-D kernels; PyTorch's
    own 2-D kernel the 32-bit share in any precision; NHWC 2-D kernels, channels-last, a larger share; dilated ones channels-last, cuDNN's generic grouped kernel, a
    far smaller one)."""
    d = perf.defaults
    wide = 1 if precision == "fp32" else 0
    factor = np.where(a["spatial"] == 1, d.depthwise_1d_vector_factor[wide], d.depthwise_vector_factor[wide])
    # PyTorch's own depthwise kernel (counting.conv_backend; bf16 always) computes in fp32: the 32-bit share
    native = (a["spatial"] == 2) & ((a["family"] == NATIVE_DEPTHWISE_FAMILY) | (a["dtype"] == "bf16"))
    factor = np.where(native, d.depthwise_vector_factor[1], factor)
    channels_last = a["family"] == CHANNELS_LAST_FAMILY
    factor = np.where(channels_last, d.depthwise_channels_last_vector_factor[wide], factor)
    dilated = channels_last & (a["dilation"] > 1)
    factor = np.where(dilated, d.depthwise_dilated_channels_last_vector_factor.value, factor)
    return perf.vector_ops_per_s * factor


def head_dim_use(head_dim: np.ndarray, precision: str, d: RooflineDefaults) -> np.ndarray:
    """Fraction of a fused attention kernel's work that is the real head dimension (kernels are compiled for
    a few head dims and run the next one up; see ``RooflineDefaults.attention_head_dim_*``)."""
    hd = np.maximum(np.asarray(head_dim, dtype=np.float64), 1.0)
    if precision in ("fp32", "fp64", "tf32"):
        tier = hd
        for t in sorted(d.attention_head_dim_tiers_fp32, reverse=True):
            tier = np.where(hd <= t, t, tier)
    else:
        step = d.attention_head_dim_step
        tier = np.where(hd <= d.attention_head_dim_max, np.ceil(hd / step) * step, hd)
    return hd / tier


def tiled_attention_rate(a: dict, perf: DevicePerf, precision: str) -> np.ndarray:
    """Fused attention on Hopper in 16 bits, tile by tile (H200 sweep, ``benchmarks/studies/sdpa/sdpa_sweep.py``).

    Each thread block owns ``rows`` queries of one (batch, head) and walks the keys ``rows`` at a time; blocks run
    one per SM, in waves. A block costs a fixed ``attention_block_s`` (load the queries, write the output) plus,
    per key tile, its two matrix products at the head dim the kernel is compiled for (at the card's GEMM rate
    x the kernel's fraction) and then the tile's exponentials on the special-function units (16 per clock per
    SM: CUDA C++ Programming Guide, arithmetic throughput; FlashAttention-3 (Shah et al. 2024) on why the
    exponentials do not overlap the products in FlashAttention-2-style kernels). Sequences shorter than a tile
    and small head dims pay the whole tile: MobileViT's 16-token attention runs at 2% of the GEMM rate.
    cuDNN's Hopper kernel (head dims multiples of 8 up to 128) runs its products at the GEMM rate; other head
    dims fall back to FlashAttention-2's Ampere kernel, which reaches ~30% of it on Hopper."""
    d = perf.defaults
    hd, rows = np.maximum(a["k"], 1.0), d.attention_block_rows
    native = (np.mod(hd, 8) == 0) & (hd <= 128)
    tier = np.where(native, np.where(hd <= 64, 64.0, 128.0), np.ceil(hd / 32.0) * 32.0)
    fraction = np.where(native, d.attention_hopper_native_fraction.value, d.attention_hopper_fa2_fraction.value)
    units = perf.compute_units
    per_sm = _peak(perf, precision, "attention") / units
    exp_per_sm_s = d.special_function_per_clock * perf.hardware.boost_clock_mhz * 1e6
    tile_s = rows * rows * tier * 4.0 / (per_sm * fraction) + rows * rows / exp_per_sm_s
    waves = np.ceil(np.ceil(np.maximum(a["m"], 1.0) / rows) * np.maximum(a["b"], 1.0) / units)
    time_s = waves * (d.attention_block_s.value + np.ceil(np.maximum(a["n"], 1.0) / rows) * tile_s)
    return 4.0 * a["m"] * a["n"] * hd * np.maximum(a["b"], 1.0) / time_s


def attention_rate(a: dict, perf: DevicePerf, precision: str) -> np.ndarray:
    d = perf.defaults
    hw = perf.hardware
    if precision in ("fp16", "bf16") and hw.architecture == "Hopper" and hw.boost_clock_mhz:
        return tiled_attention_rate(a, perf, precision)
    rows = d.attention_block_rows_fp32 if precision in SIMT_PRECISIONS else d.attention_block_rows
    eff = attention_efficiency(a["m"], a["n"], a["b"], perf.compute_units, rows, d.gemm_k_half)
    return _peak(perf, precision, "attention") * d.attention_factor.value * head_dim_use(a["k"], precision, d) * eff


_RATE = {"gemm": gemm_rate, "conv": conv_rate, "pointwise_conv": pointwise_conv_rate,
         "depthwise": depthwise_rate, "attention": attention_rate}
_CLASS_KIND = {"gemm": "matmul", "conv": "conv", "pointwise_conv": "conv", "attention": "attention"}


def compute_rates(a: dict, cls: np.ndarray, perf: DevicePerf, tf32_matmul: bool
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Per operator: the compute rate (ops/s) and the peak it runs at ("vector" for the vector units)."""
    rate = np.full(cls.shape[0], perf.vector_ops_per_s)
    precision = np.array(["vector"] * cls.shape[0], dtype=object)
    working = a["flops"] > 0
    for name, fn in _RATE.items():
        in_class = (cls == CLASSES.index(name)) & (working | (name == "depthwise"))
        for dt in np.unique(a["dtype"][in_class]):
            rows = np.flatnonzero(in_class & (a["dtype"] == dt))
            kind = _CLASS_KIND.get(name)
            prec = matrix_precision(str(dt), kind, perf.hardware, tf32_matmul) if kind else str(dt)
            rate[rows] = fn({key: v[rows] for key, v in a.items()}, perf, prec)
            if kind:
                precision[rows] = prec
    return rate, precision


def bandwidth_factors(a: dict, cls: np.ndarray, d: RooflineDefaults) -> np.ndarray:
    """Per operator: the share of the attainable copy bandwidth its kernels reach."""
    kinds = a["kind"]
    half = np.isin(a["dtype"], ("fp16", "bf16"))
    contiguous = np.array([d.kind_bandwidth_factor[k] for k in OP_KINDS])[kinds]
    factor = contiguous
    for kind, (f16, f32) in d.kind_bandwidth_factor_by_width.items():
        factor = np.where(kinds == _KIND[kind], np.where(half, f16, f32), factor)
    for family, (f16, f32) in d.norm_bandwidth_factor.items():
        factor = np.where(a["family"] == family, np.where(half, f16, f32), factor)
    depthwise = cls == CLASSES.index("depthwise")
    factor = np.where(depthwise, d.depthwise_bandwidth_factor, factor)
    copy16, copy32 = d.kind_bandwidth_factor_by_width.get("copy", (d.kind_bandwidth_factor["copy"],) * 2)
    # channels-last depthwise convolutions move their bytes as a copy does (RooflineDefaults)
    factor = np.where(depthwise & (a["family"] == CHANNELS_LAST_FAMILY), np.where(half, copy16, copy32), factor)
    strided = np.array([d.strided_kind_bandwidth_factor.get(k, d.kind_bandwidth_factor[k]
                                                            * d.strided_bandwidth_factor)
                        for k in OP_KINDS])[kinds]
    return np.where(a["strided"], strided, factor)


def bilinear_loop_s(a: dict, perf: DevicePerf) -> np.ndarray:
    """PyTorch's NCHW bilinear upsampling: one thread per output position (``m``) loops over batch x channels
    (``n``), one memory round trip per iteration; positions beyond one wave of resident threads run again.
    H200 sweep (benchmarks/studies/slow-ops/slow_ops_sweep.py): 190-570 ns per iteration, 20-470 GB/s, where the copy model
    said 2-4 TB/s (LR-ASPP's 33 -> 65 upsampling at batch 128: 6.1 ms measured, 73 us predicted before)."""
    d = perf.defaults
    waves = np.ceil(np.maximum(a["m"], 1.0) / (perf.compute_units * d.resident_threads_per_unit))
    return waves * a["n"] * d.bilinear_iteration_s.value


def layer_norm_rows_s(a: dict, perf: DevicePerf) -> np.ndarray:
    """Per operator: the fixed time of a layer norm's rows (``m``; one thread block each in PyTorch's kernel,
    ``RooflineDefaults.layer_norm_row_s``), spread over the SMs, at this card's clock; 0 for other operators."""
    d = perf.defaults
    half = np.isin(a["dtype"], ("fp16", "bf16"))
    per_row = np.where(half, d.layer_norm_row_s[0], d.layer_norm_row_s[1]) * _cycles_scale(perf)
    rows = np.where(a["family"] == "layer_norm", a["m"], 0.0)
    return rows / max(perf.compute_units, 1) * per_row


def _cycles_scale(perf: DevicePerf) -> float:
    """A time measured in the H200's clock cycles on this card: the H200's boost clock over this card's
    (sustained) clock; 1 when the catalog gives no clock."""
    d = perf.defaults
    hw = perf.hardware
    clock = hw.boost_clock_mhz * hw.clock_scale if hw.boost_clock_mhz else d.layer_norm_reference_clock_mhz
    return d.layer_norm_reference_clock_mhz / clock


def group_norm_rows_s(a: dict, perf: DevicePerf) -> np.ndarray:
    """Per operator: the time of a group norm's row reductions (``m`` rows of ``n`` elements, one thread block
    each, ``RooflineDefaults.group_norm_element_s`` per element), in waves of one row per SM, at this card's
    clock; 0 for other operators."""
    d = perf.defaults
    half = np.isin(a["dtype"], ("fp16", "bf16"))
    per_element = np.where(half, d.group_norm_element_s[0], d.group_norm_element_s[1]) * _cycles_scale(perf)
    waves = np.maximum(a["m"] / max(perf.compute_units, 1), 1.0)
    return np.where(a["family"] == "group_norm", waves * a["n"] * per_element, 0.0)


def floors(a: dict, cls: np.ndarray, perf: DevicePerf) -> np.ndarray:
    """Per operator: the shortest device time it can take (its first kernel's floor, then one kernel floor
    for each further kernel); 0 for operators that launch nothing."""
    f = perf.kind_floor_s
    first = np.array([f.get(k, f["other"]) for k in OP_KINDS])[a["kind"]]
    # every 1x1 convolution, GEMM or not, is one kernel without layout conversions at this size (H200
    # profiles: misaligned ones under 20 MFLOP 2.9-6.0 us, the GEMM floor's range)
    one_by_one = (a["kind"] == _KIND["conv"]) & (a["window"] == 1)
    first = np.where((cls == CLASSES.index("pointwise_conv")) | one_by_one, f["matmul"], first)
    first = np.where(cls == CLASSES.index("depthwise"), f["depthwise"], first)
    grouped = (cls == CLASSES.index("conv")) & (a["b"] > 1) & (a["family"] != CHANNELS_LAST_FAMILY)
    first = np.where(grouped, f.get("grouped_conv", f["conv"]), first)
    # one-kernel batch norm is cuDNN's inference kernel: fp32, and autocast's half input with fp32 weights
    # (counting.handles.batch_norm; fp16 with half weights runs PyTorch's native kernel and a copy: 2 kernels)
    first = np.where((a["family"] == "batch_norm") & (a["kernels"] == 1), f["batch_norm_cudnn"], first)
    first = np.where((a["family"] == "layer_norm") & (a["kernels"] == 1), f.get("layer_norm", f["norm"]), first)
    first = np.where(a["family"] == "bilinear_upsample", np.maximum(first, bilinear_loop_s(a, perf)), first)
    k = a["kernels"]
    return np.where(k >= 1, first + np.maximum(k - 1, 0) * perf.kernel_floor_s, 0.0)
