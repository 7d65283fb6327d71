"""How much of a device's matrix peak a GEMM of a given shape reaches (vectorised over operators).

A BLAS library tiles the (m x n) output, runs tiles on the compute units in waves, and may split K to fill
the machine. Efficiency = tile quality x padding waste x wave quantisation x a K ramp. Pure numpy.
"""

from __future__ import annotations

import numpy as np

from .defaults import GEMM_K_HALF, GEMM_TILES


def gemm_efficiency(m: np.ndarray, n: np.ndarray, k: np.ndarray, batch: np.ndarray, units: int) -> np.ndarray:
    """Fraction (0..1] of the large-GEMM rate reached by ``batch`` x (m x k)(k x n) products.

    Shapes with m == 0 (no GEMM known) get 1.0.
    """
    m = np.asarray(m, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    k = np.asarray(k, dtype=np.float64)
    b = np.maximum(np.asarray(batch, dtype=np.float64), 1.0)
    known = m > 0
    ms, ns, ks = np.where(known, m, 1.0), np.where(known, n, 1.0), np.where(known, k, 1.0)
    best = np.zeros_like(ms)
    for tm, tn, quality in GEMM_TILES:
        tiles_m, tiles_n = np.ceil(ms / tm), np.ceil(ns / tn)
        tiles = tiles_m * tiles_n * b
        padding = (ms * ns) / (tiles_m * tm * tiles_n * tn)
        # split K when there are too few tiles to fill the machine (each split keeps >= 256 of K)
        split = np.clip(np.floor(units / tiles), 1.0, np.maximum(np.floor(ks / 256.0), 1.0))
        work = tiles * split
        waves = np.ceil(work / units)
        occupancy = work / (waves * units)
        best = np.maximum(best, quality * padding * occupancy)
    ramp = ks / (ks + GEMM_K_HALF)
    return np.where(known, np.clip(best * ramp, 1e-4, 1.0), 1.0)
