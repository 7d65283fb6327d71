"""A TensorRT engine keeps the better orientation of each tile (``device.both_orientations``,
``TENSORRT.tactics``): a convolution with few output channels runs a tall tile; PyTorch modes keep the tile set
the H200 fitted."""

from __future__ import annotations

import numpy as np
import pytest

from tops_advisor.catalog import load_catalog
from tops_advisor.roofline.defaults import DEFAULTS, GemmTile
from tops_advisor.roofline.device import both_orientations, device_perf
from tops_advisor.roofline.efficiency import gemm_efficiency
from tops_advisor.tensorrt import TENSORRT

UNITS = 82                                       # an RTX 3090's SMs
M = np.array([307200.0, 307200.0])               # a 480x640 image's output pixels
N, K = np.array([64.0, 512.0]), np.array([576.0, 4608.0])   # a 64-channel and a 512-channel 3x3 convolution


@pytest.fixture(scope="module")
def rtx3090():
    return device_perf(load_catalog().get("rtx-3090"))


def test_each_tile_is_added_transposed_once(rtx3090):
    tiles = both_orientations(rtx3090).defaults.gemm_tiles.value
    base = DEFAULTS.gemm_tiles.value
    assert tiles[:len(base)] == base
    added = tiles[len(base):]
    assert GemmTile(256, 128, 1.0) in added and GemmTile(128, 64, 0.8) in added
    assert all(t.rows > DEFAULTS.skinny_tile_rows.value and t.rows != t.cols for t in added)
    assert len({(t.rows, t.cols) for t in tiles}) == len(tiles)
    again = both_orientations(both_orientations(rtx3090)).defaults.gemm_tiles.value
    assert again == tiles


def test_a_narrow_product_runs_a_tall_tile_and_a_wide_one_is_unchanged(rtx3090):
    tiles = both_orientations(rtx3090).defaults.gemm_tiles.value
    own = gemm_efficiency(M, N, K, 1, UNITS, max_split_k=1.0)
    both = gemm_efficiency(M, N, K, 1, UNITS, max_split_k=1.0, tiles=tiles)
    # 64 columns: a 64x64 tile (quality 0.6) before, a 128x64 one (0.8) now; 512 columns fill 128x256 either way
    tall = gemm_efficiency(M, N, K, 1, UNITS, max_split_k=1.0, tiles=(GemmTile(128, 64, 0.8),))
    assert both[0] == pytest.approx(tall[0]) and both[0] > 1.25 * own[0]
    assert both[1] == own[1]


@pytest.mark.filterwarnings("ignore")
def test_only_the_engine_says_so_in_its_assumptions():
    from tops_advisor.api import ModelCosts, predict
    from tops_advisor.counting import load_model

    model, hw = load_model("examples/small_cnn.py"), load_catalog().get("rtx-3090")
    engine = predict(ModelCosts(model, mode="tensorrt").at(8, "fp16"), hw, mode="tensorrt")
    graph = predict(ModelCosts(model).at(8, "fp16"), hw, mode="graph")
    assert TENSORRT.tactics.does in " ".join(engine.assumptions)
    assert TENSORRT.tactics.does not in " ".join(graph.assumptions)
