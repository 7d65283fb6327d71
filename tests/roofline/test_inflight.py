"""Bytes in flight (``roofline/inflight.py``): the width-split bandwidth shares measured on the H200 at the bytes in
flight per SM another card needs. Round-number devices and defaults; expected shares derived in each test."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.conftest import make_hardware
from tests.paths import REPO
from tops_advisor.catalog import load_hardware_file
from tops_advisor.roofline import device_perf, predict
from tops_advisor.roofline.defaults import DEFAULTS, Default
from tops_advisor.roofline.inflight import inflight_scale, limited_shares, width_shares
from tops_advisor.workload import OpRecord, Workload


def t(value):
    return Default(value, "test")


TABLE = {"elementwise": {"16-bit": 0.4, "32-bit": 0.9}}
# the reference needs 8,000 bytes per SM; a toy Ada card: 1000 GB/s over 100 SMs x 200 ns = 2,000 bytes: scale 4
ROUND = replace(DEFAULTS, dram_latency_s=t((("Ada Lovelace", "GDDR", 200e-9),)), inflight_reference_bytes=t(8000.0),
                kind_bandwidth_factor_by_width=t(TABLE), bandwidth_fraction_rules=t(()),
                bandwidth_fraction=t({k: t(0.5) for k in ("HBM", "GDDR", "LPDDR")}),
                kind_floor_s=t({**DEFAULTS.kind_floor_s.value, "elementwise": 0.0}), kernel_gap_s=t(0.0))
ADA = make_hardware(architecture="Ada Lovelace", memory_type="GDDR6X")


def test_shares_are_the_measured_ones_at_the_reference():
    assert width_shares(TABLE, 1.0) == TABLE


def test_16_bit_kernels_go_as_far_as_their_bytes_in_flight_up_to_the_32_bit_ceiling():
    # scale 2: 0.4 x 2 = 0.8 < 0.9; scale 4: 1.6, capped at the 32-bit share 0.9; 32-bit stays 0.9
    assert width_shares(TABLE, 2.0)["elementwise"] == pytest.approx({"16-bit": 0.8, "32-bit": 0.9})
    assert width_shares(TABLE, 4.0)["elementwise"] == pytest.approx({"16-bit": 0.9, "32-bit": 0.9})


def test_a_card_that_needs_more_in_flight_holds_both_widths_back():
    # scale 0.25: 16-bit 0.4 x 0.25 = 0.1; 32-bit carries at least its own share's bytes (0.9 >= 2 x 0.4):
    # 0.9 x 0.25 = 0.225
    assert width_shares(TABLE, 0.25)["elementwise"] == pytest.approx({"16-bit": 0.1, "32-bit": 0.225})


def test_scale_is_the_references_need_over_the_cards():
    assert inflight_scale(ADA, ROUND) == pytest.approx(8000 / (1000e9 / 100 * 200e-9))
    # no latency for the architecture or the memory: the H200's shares
    assert inflight_scale(make_hardware(), ROUND) == 1.0
    assert inflight_scale(make_hardware(architecture="Ada Lovelace", memory_type="HBM3"), ROUND) == 1.0


def test_a_16_bit_elementwise_operator_on_the_card_moves_at_the_scaled_share():
    op = OpRecord("aten.relu", "elementwise", "a", 0.0, 5e8, 5e8, dtype="fp16")
    p = predict(Workload("w", 1, "fp16", (op,)), ADA, perf=device_perf(ADA, defaults=ROUND))
    # 1 GB at 1000 GB/s x 0.5 (copy share) x 0.9 (scale 4: the 32-bit ceiling)
    assert p.ops[0].memory_s == pytest.approx(1e9 / (500e9 * 0.9))


def test_the_h200_keeps_its_measured_shares():
    h200 = load_hardware_file(REPO / "hardware_db" / "h200-sxm.toml")
    assert inflight_scale(h200, DEFAULTS) == pytest.approx(1.0)
    assert device_perf(h200).defaults.kind_bandwidth_factor_by_width == DEFAULTS.kind_bandwidth_factor_by_width


def test_cudnn_batch_norm_scales_at_both_widths_up_to_the_elementwise_ceiling():
    # cuDNN's inference batch norm at 0.3 / 0.6 on the reference, held by bytes in flight at both widths; scale 4
    # on the toy Ada card: 1.2 and 2.4, both capped at the 32-bit elementwise share 0.9
    d = replace(ROUND, cudnn_batch_norm_bandwidth_factor=t({"16-bit": 0.3, "32-bit": 0.6}))
    for dtype in ("fp16", "fp32"):
        op = OpRecord("aten.cudnn_batch_norm", "norm", "bn", 0.0, 5e8, 5e8, dtype=dtype, family="batch_norm")
        p = predict(Workload("w", 1, dtype, (op,)), ADA, perf=device_perf(ADA, defaults=d))
        assert p.ops[0].memory_s == pytest.approx(1e9 / (500e9 * 0.9))
    op = OpRecord("aten.cudnn_batch_norm", "norm", "bn", 0.0, 5e8, 5e8, dtype="fp16", family="batch_norm")
    ref = predict(Workload("w", 1, "fp16", (op,)), make_hardware(), perf=device_perf(make_hardware(), defaults=d))
    assert ref.ops[0].memory_s == pytest.approx(1e9 / (500e9 * 0.3))
    # scale 0.5: both halve
    assert limited_shares({"16-bit": 0.3, "32-bit": 0.6}, 0.5, 0.9) == pytest.approx({"16-bit": 0.15, "32-bit": 0.3})
