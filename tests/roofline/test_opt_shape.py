"""An engine run away from its opt shape keeps the tiles its builder chose there (``efficiency.gemm_efficiency``'s
``tile_m``, ``arrays.tuned_rows``, ``predict(..., opt_workload=...)``)."""

from __future__ import annotations

import numpy as np
import pytest

from tops_advisor.errors import InputError
from tops_advisor.kinds import OpKind
from tops_advisor.roofline.arrays import OpArrays, tuned_rows
from tops_advisor.roofline.defaults import DEFAULTS
from tops_advisor.roofline.efficiency import gemm_efficiency

UNITS = 82   # an RTX 3090's SMs
M = np.array([300.0, 4800.0, 76800.0])   # a 480x640 backbone's late, middle and early layers (pixels)
N, K = np.array([512.0, 64.0, 64.0]), np.array([4608.0, 576.0, 576.0])


def test_tiles_chosen_at_the_run_shape_change_nothing():
    assert np.array_equal(gemm_efficiency(M, N, K, 1, UNITS, tile_m=M), gemm_efficiency(M, N, K, 1, UNITS))


def test_a_tile_chosen_for_many_more_rows_is_never_better_and_is_the_large_tile():
    own = gemm_efficiency(M, N, K, 1, UNITS, max_split_k=1.0)
    tuned = gemm_efficiency(M, N, K, 1, UNITS, max_split_k=1.0, tile_m=M * 26.8)
    assert np.all(tuned <= own)
    assert tuned[0] < own[0]                     # 300 rows in 128x256 tiles: 3 of 82 SMs busy
    # at 26.8x the rows every tile fills the card and the best-quality tile that fits n wins: 128x256 for 512
    # columns, a 64-wide one for 64 columns
    large = (DEFAULTS.gemm_tiles.value[0],)
    assert tuned[0] == pytest.approx(gemm_efficiency(M, N, K, 1, UNITS, max_split_k=1.0, tiles=large)[0])


def test_the_split_of_k_is_fitted_to_the_run_shape():
    no_split = gemm_efficiency(M, N, K, 1, UNITS, max_split_k=1.0, tile_m=M * 26.8)
    split = gemm_efficiency(M, N, K, 1, UNITS, max_split_k=4.0, tile_m=M * 26.8)
    assert split[0] > no_split[0]                 # K = 4608 splits four ways at 300 rows


def test_tuned_rows_needs_the_same_layers():
    a = OpArrays.matmuls(M, N, K, np.ones(3), "fp16")
    assert np.array_equal(tuned_rows(a, OpArrays.matmuls(M * 4, N, K, np.ones(3), "fp16")).tile_m, M * 4)
    with pytest.raises(InputError, match="same layers"):
        tuned_rows(a, OpArrays.matmuls(M[:2], N[:2], K[:2], np.ones(2), "fp16"))
    assert OpArrays.build(OpKind.MATMUL, "fp16", m=M).tile_m.tolist() == M.tolist()
