"""What every tensor-core class shares: the peak of a precision, GEMM tile efficiency, the GEMM rate."""

from __future__ import annotations

import dataclasses

import numpy as np

from ...catalog import Hardware
from ...errors import UnsupportedPrecisionError
from ...kinds import OpKind
from ...units import BYTES_PER_ELEMENT
from ..arrays import OpArrays
from ..defaults import Default
from ..device import DevicePerf
from ..efficiency import gemm_efficiency

SIMT_PRECISIONS = ("fp32", "fp64")   # no tensor cores: SIMT GEMM kernels
HALF_DTYPES = ("fp16", "bf16")


def element_bytes(a: OpArrays) -> np.ndarray:
    """Bytes per element of each operator's dtype (2 where the dtype has no entry)."""
    return np.array([BYTES_PER_ELEMENT.get(str(t), 2.0) for t in a.dtype])


def by_width(values: dict[str, float], half: np.ndarray) -> np.ndarray:
    """Per operator: the 16-bit value of a width table where ``half``, else the 32-bit one."""
    return np.where(half, values["16-bit"], values["32-bit"])


def half_dtype(a: OpArrays) -> np.ndarray:
    """Operators in 16-bit floats (fp16, bf16)."""
    return np.isin(a.dtype, HALF_DTYPES)


def matrix_precision(dtype: str, kind: OpKind, hw: Hardware, tf32_matmul: bool) -> str:
    """The peak a tensor operator uses. PyTorch runs fp32 convolutions in TF32 by default
    (cudnn.allow_tf32=True) and fp32 matmuls in plain FP32 (unless TF32 matmuls are switched on)."""
    if dtype == "fp32" and "tf32" in hw.dense_tops and (kind == OpKind.CONV or tf32_matmul):
        return "tf32"
    return dtype


def peak(perf: DevicePerf, precision: str, kind: OpKind) -> float:
    """The attainable matrix rate of ``precision`` on this device; an error naming the ones it has."""
    rate = perf.matrix_ops_per_s.get(precision)
    if rate is None:
        hw = perf.hardware
        raise UnsupportedPrecisionError(
            f"{hw.id} has no {precision} peak for {kind} operators; it has {', '.join(hw.dense_tops)}",
            hint="choose one of those with --dtype")
    return rate


def tile_efficiency(a: OpArrays, perf: DevicePerf, split_kind: OpKind, precision: str,
                    aligned: bool) -> np.ndarray:
    """GEMM tile efficiency of the operators of ``a`` on this device: SIMT tiles for fp32/fp64, tensor-core
    tiles otherwise. ``split_kind``: matmul (its ``gemm_batch`` products, cuBLAS's split-K) or conv (its
    ``groups``, cuDNN's). ``aligned``: 16-byte alignment assumed (cuDNN pads convolutions; only matmuls pay)."""
    d = perf.defaults
    simt = precision in SIMT_PRECISIONS
    split = d.max_split_k.value[split_kind]
    elem = np.where(aligned | (a.dtype == "fp32"), 16.0, element_bytes(a))  # fp32 matmuls: SIMT or TF32, no penalty
    if simt and split_kind == OpKind.CONV:
        d = dataclasses.replace(d, gemm_k_half=Default(simt_conv_k_half(perf, precision), "rates.simt_conv_k_half"))
    products = a.gemm_batch if split_kind == OpKind.MATMUL else a.groups
    return gemm_efficiency(a.m, a.n, a.k, products, perf.compute_units,
                           min(split, d.max_split_k_simt.value) if simt else split, elem,
                           tiles=(d.gemm_tiles_simt if simt else d.gemm_tiles).value, defaults=d,
                           deep_split=split_kind == OpKind.MATMUL, tile_m=a.tile_m)


def simt_conv_k_half(perf: DevicePerf, precision: str) -> float:
    """The K ramp's half point for a SIMT convolution on this card: the reference tile's fixed time
    (``gemm_k_half`` K steps of a 128 x 256 tensor-core tile at the H200's fp16 rate) over the time of one K
    step of the largest SIMT tile at this card's rate per compute unit; never above ``gemm_k_half``."""
    d = perf.defaults
    ref = d.gemm_k_half_reference_tile.value
    k_half = d.gemm_k_half.value
    fixed_s = k_half * 2.0 * ref["rows"] * ref["cols"] / d.gemm_k_half_reference_rate_per_unit.value
    tile = d.gemm_tiles_simt.value[0]
    step_s = 2.0 * tile.rows * tile.cols / (peak(perf, precision, OpKind.CONV) / perf.compute_units)
    return min(k_half, fixed_s / step_s)


def gemm_rate(a: OpArrays, perf: DevicePerf, precision: str) -> np.ndarray:
    """A matmul: the matrix peak x its tile efficiency (cuBLAS's split-K and alignment rules)."""
    return peak(perf, precision, OpKind.MATMUL) * tile_efficiency(a, perf, OpKind.MATMUL, precision, aligned=False)
