"""Fused attention: query blocks x heads in waves, head dims padded to a compiled tier; on Hopper in 16 bits,
tile by tile (``tiled_attention_rate``). ``m`` is the query length, ``n`` the key length, ``k`` the head dim."""

from __future__ import annotations

import numpy as np

from ...kinds import OpKind
from ..arrays import OpArrays
from ..defaults import RooflineDefaults
from ..device import DevicePerf
from ..efficiency import attention_efficiency
from .common import SIMT_PRECISIONS, peak


def head_dim_use(head_dim: np.ndarray, precision: str, d: RooflineDefaults) -> np.ndarray:
    """Fraction of a fused attention kernel's work that is the real head dimension (kernels are compiled for
    a few head dims and run the next one up; see ``RooflineDefaults.attention_head_dim_*``)."""
    hd = np.maximum(np.asarray(head_dim, dtype=np.float64), 1.0)
    if precision in ("fp32", "fp64", "tf32"):
        tier = hd
        for t in sorted(d.attention_head_dim_tiers_fp32.value, reverse=True):
            tier = np.where(hd <= t, t, tier)
    else:
        step = d.attention_head_dim_step.value
        tier = np.where(hd <= d.attention_head_dim_max.value, np.ceil(hd / step) * step, hd)
    return hd / tier


def tiled_attention_rate(a: OpArrays, perf: DevicePerf, precision: str) -> np.ndarray:
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
    hd, rows = np.maximum(a.k, 1.0), d.attention_block_rows.value
    native = (np.mod(hd, 8) == 0) & (hd <= 128)
    tier = np.where(native, np.where(hd <= 64, 64.0, 128.0), np.ceil(hd / 32.0) * 32.0)
    fraction = np.where(native, d.attention_hopper_native_fraction.value, d.attention_hopper_fa2_fraction.value)
    units = perf.compute_units
    per_sm = peak(perf, precision, OpKind.ATTENTION) / units
    exp_per_sm_s = d.special_function_per_clock.value * perf.hardware.boost_clock_mhz * 1e6
    tile_s = rows * rows * tier * 4.0 / (per_sm * fraction) + rows * rows / exp_per_sm_s
    batch_heads = np.maximum(a.batch_heads, 1.0)
    waves = np.ceil(np.ceil(np.maximum(a.m, 1.0) / rows) * batch_heads / units)
    time_s = waves * (d.attention_block_s.value + np.ceil(np.maximum(a.n, 1.0) / rows) * tile_s)
    return 4.0 * a.m * a.n * hd * batch_heads / time_s


def attention_rate(a: OpArrays, perf: DevicePerf, precision: str) -> np.ndarray:
    """Fused attention: tile by tile on Hopper in 16 bits, else the attention peak x the attention factor x
    the head dim's share x the blocks' wave efficiency (``efficiency.attention_efficiency``)."""
    d = perf.defaults
    hw = perf.hardware
    if precision in ("fp16", "bf16") and hw.architecture == "Hopper" and hw.boost_clock_mhz:
        return tiled_attention_rate(a, perf, precision)
    rows = (d.attention_block_rows_fp32 if precision in SIMT_PRECISIONS else d.attention_block_rows).value
    eff = attention_efficiency(a.m, a.n, a.batch_heads, perf.compute_units, rows, d.gemm_k_half.value)
    return (peak(perf, precision, OpKind.ATTENTION) * d.attention_factor.value
            * head_dim_use(a.k, precision, d) * eff)
