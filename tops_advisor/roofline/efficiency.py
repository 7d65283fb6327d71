"""How much of a device's matrix peak a GEMM of a given shape reaches (vectorised over operators).

A BLAS library tiles the (m x n) output, runs tiles on the compute units in waves, and may split K to fill
the machine. Efficiency = tile quality x padding waste x wave quantisation x a K ramp. Pure numpy.
"""

from __future__ import annotations

import numpy as np

from .defaults import DEFAULTS, GemmTile, RooflineDefaults


def gemm_efficiency(m: np.ndarray, n: np.ndarray, k: np.ndarray, batch: np.ndarray, units: int,
                    max_split_k: np.ndarray | float = 4.0, element_bytes: np.ndarray | float = 2.0,
                    tiles: tuple[GemmTile, ...] | None = None,
                    defaults: RooflineDefaults = DEFAULTS, deep_split: bool = False,
                    tile_m: np.ndarray | None = None) -> np.ndarray:
    """Fraction (0..1] of the large-GEMM rate reached by ``batch`` x (m x k)(k x n) products.

    ``max_split_k``: how far the library splits K to fill the machine (cuBLAS does for matmuls; cuDNN's
    implicit-GEMM convolutions mostly do not: pass 1); with ``deep_split`` (cuBLAS), a reduction
    ``split_k_deep_ratio`` times deeper than the larger output side is split past it. ``element_bytes`` sets the alignment penalty: rows whose
    length (n or k) is not a multiple of 16 bytes force slower kernels. Shapes with m == 0 (no GEMM known)
    get 1.0. ``tiles``: the tile set (default: ``defaults.gemm_tiles``).

    ``tile_m``: the rows at which each product's kernel was chosen, where that is not ``m`` (a TensorRT engine
    runs, at every shape of its profile, the tactics its builder timed at the ``opt`` shape): the tile best at
    ``tile_m`` rows runs the ``m`` rows. The tile is the compiled kernel's (CUTLASS's ``ThreadblockShape`` is a
    template parameter); the split of K is a launch argument (``split_k_slices``), so it is fitted to ``m``.
    """
    d = defaults
    tiles = d.gemm_tiles.value if tiles is None else tiles
    m = np.asarray(m, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    k = np.asarray(k, dtype=np.float64)
    b = np.maximum(np.asarray(batch, dtype=np.float64), 1.0)
    known = m > 0
    ms, ns, ks = np.where(known, m, 1.0), np.where(known, n, 1.0), np.where(known, k, 1.0)
    # cuBLAS splits a deep reduction (a weight gradient) past its usual cap, until the tiles fill the machine
    deep = deep_split & (ks >= d.split_k_deep_ratio.value * np.maximum(ms, ns))
    cap = np.where(deep, np.inf, max_split_k)
    per_tile = _tile_shares(ms, ns, ks, b, units, cap, tiles, d)
    best = per_tile.max(axis=0)
    if tile_m is not None:
        tuned = np.where(known, np.asarray(tile_m, dtype=np.float64), ms)
        if np.any(tuned != ms):
            chosen = _tile_shares(np.maximum(tuned, 1.0), ns, ks, b, units, cap, tiles, d).argmax(axis=0)
            best = np.take_along_axis(per_tile, chosen[None, ...], axis=0)[0]
    ramp = ks / (ks + d.gemm_k_half.value)
    aligned = alignment_factor(ns, ks, element_bytes, d.gemm_alignment.value)
    return np.where(known, np.clip(best * ramp * aligned, 1e-4, 1.0), 1.0)


def _tile_shares(ms: np.ndarray, ns: np.ndarray, ks: np.ndarray, b: np.ndarray, units: int, cap: np.ndarray,
                 tiles: tuple[GemmTile, ...], d: RooflineDefaults) -> np.ndarray:
    """(tiles, operators): the share of the rate each tile reaches on each product, before the K ramp:
    quality x padding x wave occupancy, K split when there are too few tiles to fill the machine."""
    shares = []
    for tm, tn, quality in tiles:
        tiles_m, tiles_n = np.ceil(ms / tm), np.ceil(ns / tn)
        count = tiles_m * tiles_n * b
        padding = (ms * ns) / (tiles_m * tm * tiles_n * tn)
        # split K when there are too few tiles to fill the machine (each split keeps split_k_min_depth of K)
        split = np.clip(np.floor(units / count), 1.0,
                        np.minimum(np.maximum(np.floor(ks / d.split_k_min_depth.value), 1.0), cap))
        work = count * split
        waves = np.ceil(work / units)
        eff = quality * padding * work / (waves * units)
        if tm <= d.skinny_tile_rows.value:
            # GEMV-like kernels stream the weights for a handful of rows; with more rows a library tiles
            eff = np.where(ms <= d.skinny_max_rows.value, eff, 0.0)
        shares.append(eff)
    return np.stack(shares)


def alignment_factor(n: np.ndarray, k: np.ndarray, element_bytes: np.ndarray | float,
                     table: dict[float, float] = DEFAULTS.gemm_alignment.value) -> np.ndarray:
    """Penalty for rows not aligned to 16 bytes (the vector width tensor-core kernels load with).

    The largest power-of-two byte alignment common to n and k picks the factor from ``table``.
    """
    eb = np.asarray(element_bytes, dtype=np.float64)
    align = np.full(np.broadcast(n, k).shape, 16.0)
    for dim in (n, k):
        row = np.asarray(dim, dtype=np.float64) * eb
        a = np.ones_like(row)
        for b in (2.0, 4.0, 8.0, 16.0):
            a = np.where(np.mod(row, b) == 0, b, a)
        align = np.minimum(align, a)
    factor = np.ones_like(align)
    for bytes_, f in table.items():
        factor = np.where(align == bytes_, f, factor)
    return factor


def attention_efficiency(q_len: np.ndarray, kv_len: np.ndarray, heads: np.ndarray, units: int,
                         block_rows: float = 128.0, k_half: float = DEFAULTS.gemm_k_half.value) -> np.ndarray:
    """Fraction (0..1] of the attention rate a fused kernel reaches (FlashAttention, PyTorch's
    memory-efficient kernel): each thread block owns ``block_rows`` queries of one head and loops over all the
    keys, so the parallel work is ceil(q_len / block_rows) x heads blocks, run in waves; the loop's prologue and
    epilogue are amortised over the keys. (The head dimension's share is ``rates.head_dim_use``.)"""
    m = np.maximum(np.asarray(q_len, dtype=np.float64), 1.0)
    kv = np.maximum(np.asarray(kv_len, dtype=np.float64), 1.0)
    bh = np.maximum(np.asarray(heads, dtype=np.float64), 1.0)
    blocks = np.ceil(m / block_rows) * bh
    padding = m / (np.ceil(m / block_rows) * block_rows)
    occupancy = blocks / (np.ceil(blocks / units) * units)
    return np.clip(padding * occupancy * kv / (kv + k_half), 1e-4, 1.0)
