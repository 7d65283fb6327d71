"""L2 reuse (``roofline/l2.py``): an activation an earlier operator wrote is read from the L2 while the L2 still
holds it, at the L2's bandwidth; the rest, and every write, at DRAM's. Round-number devices and defaults, every
expected time derived in the test."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from tests.conftest import make_hardware
from tops_advisor.roofline import device_perf, predict
from tops_advisor.roofline.defaults import DEFAULTS, Default
from tops_advisor.roofline.l2 import MIB, l2_capacity_bytes, l2_hit_share
from tops_advisor.workload import OpRecord, Reuse, Workload

MB = 1e6


def t(value):
    return Default(value, "test")


# 1000 GB/s DRAM at a 0.5 copy share = 500 GB/s; elementwise at 1.0 of it; L2 4000 GB/s; 100 MiB of L2, 0.5 usable;
# a reference card without L2 (the shares hold no reuse), so a hit here is a hit beyond the reference
ROUND = replace(DEFAULTS, bandwidth_fraction=t({k: t(0.5) for k in ("HBM", "GDDR", "LPDDR")}),
                kind_bandwidth_factor=t({**DEFAULTS.kind_bandwidth_factor.value, "elementwise": 1.0}),
                kind_bandwidth_factor_by_width=t({}), kind_floor_s=t({**DEFAULTS.kind_floor_s.value, "elementwise": 0.0}),
                kernel_gap_s=t(0.0), l2_usable_share=t({"Toy": 0.5}), l2_reference_bytes=t(0.0))
CITED = {**make_hardware().citations, "l2_cache_mb": "made-up", "l2_bandwidth_gb_s": "made-up"}
HW = make_hardware(l2_cache_mb=100, l2_bandwidth_gb_s=4000, citations=CITED)
CAPACITY = 100 * MIB * 0.5
DRAM, L2 = 500e9, 4000e9


def test_usable_capacity_is_the_l2_times_its_architectures_share():
    assert l2_capacity_bytes(HW, ROUND) == pytest.approx(50 * 2**20)
    # no L2 bandwidth, or an architecture without a share: no reuse at all
    assert l2_capacity_bytes(make_hardware(l2_cache_mb=100, citations=CITED), ROUND) == 0.0
    assert l2_capacity_bytes(HW, replace(ROUND, l2_usable_share=t({}))) == 0.0


def test_hit_share_of_a_least_recently_used_cache():
    c = 100.0
    # producer, everything between and consumer fit together: every line is still there
    assert l2_hit_share(10.0, 30.0, 40.0, c) == 1.0
    # every line has seen more than it holds (80 + 30 at x = 0, 80 + 25 at x = 1): none is there
    assert l2_hit_share(80.0, 30.0, 25.0, c) == 0.0
    # line x has seen 20 + 60 (1 - x) + 100 x: <= 100 for x <= 20 / 40 = 0.5 (the consumer's first half)
    assert l2_hit_share(20.0, 60.0, 100.0, c) == pytest.approx(0.5)
    # line x has seen 20 + 100 (1 - x) + 60 x: <= 100 for x >= 0.5 (the producer's last half)
    assert l2_hit_share(20.0, 100.0, 60.0, c) == pytest.approx(0.5)
    # the share flips from all to none exactly at the capacity (producer = consumer)
    assert l2_hit_share(np.array([0.0, 0.0]), np.array([100.0, 100.0 + 1e-9]), 100.0 + np.array([0.0, 1e-9]), c) \
        == pytest.approx([1.0, 0.0])


def pair(size: float, between: float = 0.0) -> Workload:
    """ReLU writes ``size`` bytes (reading as much), then an add reads them once and writes ``size``: the add's
    read of the ReLU output is a reuse with ``between`` bytes of traffic in between."""
    relu = OpRecord("aten.relu", "elementwise", "a", size / 2, size, size, dtype="fp32")
    add = OpRecord("aten.add", "elementwise", "b", size / 2, size, size, dtype="fp32",
                   reuse=(Reuse(bytes=size, between_bytes=between, producer_bytes=2 * size, consumer_bytes=2 * size),))
    return Workload("w", 1, "fp32", (relu, add))


def memory_s(size: float, between: float = 0.0, defaults=ROUND) -> float:
    return predict(pair(size, between), HW, perf=device_perf(HW, defaults=defaults)).ops[1].memory_s


def test_a_reuse_that_fits_is_read_from_the_l2_and_written_to_dram():
    size = 10 * MB          # producer 20 MB + consumer 20 MB = 40 MB <= 52.4 MB usable
    assert memory_s(size) == pytest.approx(size / L2 + size / DRAM)


def test_a_reuse_that_does_not_fit_is_read_from_dram_as_before():
    size = 60 * MB          # the producer alone moved 120 MB > 52.4 MB
    assert memory_s(size) == pytest.approx(2 * size / DRAM)
    no_l2 = make_hardware()
    assert predict(pair(size), no_l2, perf=device_perf(no_l2, defaults=ROUND)).ops[1].memory_s \
        == pytest.approx(2 * size / DRAM)


def test_the_read_flips_from_l2_to_dram_at_the_capacity():
    # producer = consumer = 2 x size: every line has seen between + 2 x size when read
    size = 10 * MB
    edge = CAPACITY - 2 * size
    assert memory_s(size, between=edge) == pytest.approx(size / L2 + size / DRAM)
    assert memory_s(size, between=edge * (1 + 1e-9)) == pytest.approx(2 * size / DRAM)


def test_the_shares_already_hold_the_reference_cards_reuse():
    size = 10 * MB          # fits both a reference of the same usable L2 and this card
    same = replace(ROUND, l2_reference_bytes=t(CAPACITY), l2_reference_speed_ratio=t(L2 / 1000e9))
    assert memory_s(size, defaults=same) == pytest.approx(2 * size / DRAM)
    # a reference whose L2 held it where this card's does not (between: 40 MB, 80 MB seen by every line > 52.4):
    # the read the shares priced at the L2 costs DRAM here, 10 MB x (1 / 500 - 1 / 4000) GB/s more
    bigger = replace(ROUND, l2_reference_bytes=t(200 * MB))
    assert memory_s(size, between=40 * MB, defaults=bigger) == pytest.approx(2 * size / DRAM + size / DRAM - size / L2)


def test_a_line_both_l2s_hold_keeps_the_reference_time_scaled_by_the_l2s_relative_speed():
    """The shares priced the reference's hits at its L2's speed over its DRAM; this card's L2 is 4x its DRAM
    (4000 / 1000 GB/s datasheet): against a reference of 2x, the read both L2s hold takes half its DRAM time, and
    against a reference of 8x twice it; the write is DRAM's either way."""
    size = 10 * MB
    for reference_ratio, scale in ((2.0, 0.5), (8.0, 2.0)):
        d = replace(ROUND, l2_reference_bytes=t(CAPACITY), l2_reference_speed_ratio=t(reference_ratio))
        assert memory_s(size, defaults=d) == pytest.approx(size / DRAM * scale + size / DRAM)
