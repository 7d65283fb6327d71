"""GeForce compute rates: the sustained clock (catalog field ``sustained_clock_mhz``), the half-rate
FP32-accumulate tensor fraction and the shared-INT32 FP32 (SIMT) fraction (``roofline/device.py``).

Defaults are replaced with round numbers (``dataclasses.replace``) so no test depends on a tuned constant.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from pydantic import ValidationError

from tests.paths import REPO
from tops_advisor.catalog import Hardware, load_hardware_file
from tops_advisor.roofline.defaults import DEFAULTS
from tops_advisor.roofline.device import device_perf, half_rate, matmul_fraction, shared_int32_fp32

DB = REPO / "hardware_db"
ROUND = replace(DEFAULTS, half_rate_matmul_fraction=replace(DEFAULTS.half_rate_matmul_fraction, value=0.5),
                shared_int32_fp32_matmul_fraction=replace(DEFAULTS.shared_int32_fp32_matmul_fraction, value=0.25),
                fp16_accumulate_matmul_fraction=replace(DEFAULTS.fp16_accumulate_matmul_fraction, value=0.4))


def hw(device_id: str) -> Hardware:
    return load_hardware_file(DB / f"{device_id}.toml")


def without_sustained(device: Hardware) -> Hardware:
    cites = {k: v for k, v in device.citations.items() if k != "sustained_clock_mhz"}
    return device.model_copy(update={"sustained_clock_mhz": None, "citations": cites})


@pytest.mark.parametrize(("device_id", "clock"), [("rtx-4090", "sustained_clock_mhz"),
                                                   ("rtx-5090", "burst_clock_mhz")])
def test_a_sustained_or_burst_clock_needs_a_boost_clock(device_id, clock):
    data = hw(device_id).model_dump()
    data["boost_clock_mhz"] = None
    data["citations"].pop("boost_clock_mhz")
    with pytest.raises(ValidationError, match=f"{clock} is given but boost_clock_mhz is not"):
        Hardware(**data)


def test_sustained_clock_needs_a_citation():
    data = hw("rtx-4090").model_dump()
    data["citations"].pop("sustained_clock_mhz")
    with pytest.raises(ValidationError, match="no citation for sustained_clock_mhz"):
        Hardware(**data)


def test_clock_scale_is_sustained_over_boost():
    device = hw("rtx-4090")
    assert device.clock_scale == pytest.approx(device.sustained_clock_mhz / device.boost_clock_mhz)
    assert hw("h200-sxm").clock_scale == 1.0   # no sustained clock: the rated boost, unchanged


def test_sustained_clock_scales_every_compute_rate_not_bandwidth():
    device = hw("rtx-4090")
    fast, rated = device_perf(device, defaults=ROUND), device_perf(without_sustained(device), defaults=ROUND)
    for p, rate in rated.matrix_ops_per_s.items():
        assert fast.matrix_ops_per_s[p] == pytest.approx(rate * device.clock_scale)
    assert fast.vector_ops_per_s == pytest.approx(rated.vector_ops_per_s * device.clock_scale)
    assert fast.bandwidth_bytes_per_s == rated.bandwidth_bytes_per_s
    assert any("sustained" in note for note in fast.assumptions)


def test_burst_clock_is_the_card_at_that_clock():
    device = hw("rtx-5090")                     # no sustained clock: sustained rates at the rated boost
    burst = device.at_burst_clock()
    assert device.clock_scale == 1.0
    assert burst.clock_scale == pytest.approx(device.burst_clock_mhz / device.boost_clock_mhz)
    assert burst.citation("sustained_clock_mhz") == device.citation("burst_clock_mhz")
    fast, rated = device_perf(burst, defaults=ROUND), device_perf(device, defaults=ROUND)
    assert fast.matrix_ops_per_s["fp16"] == pytest.approx(rated.matrix_ops_per_s["fp16"] * burst.clock_scale)
    assert hw("h200-sxm").at_burst_clock() == hw("h200-sxm")   # none: the card itself


@pytest.mark.parametrize(("device_id", "precision", "expected"), [
    ("rtx-4090", "fp16", True),          # 165.2 with FP32 accumulate, 330.3 with FP16 accumulate
    ("rtx-4090", "bf16", True),
    ("rtx-4090", "fp8", True),           # 330.3 vs fp8_fp16acc 660.6
    ("rtx-4090", "fp16_fp16acc", False),  # the full rate itself
    ("rtx-3090", "fp16", True),
    ("h200-sxm", "fp16", False),         # data-centre card: no FP16-accumulate variant
    ("l40s", "fp16", False),
    ("rtx-4090", "int8", False),
])
def test_half_rate(device_id, precision, expected):
    assert half_rate(hw(device_id), precision) is expected


@pytest.mark.parametrize(("device_id", "expected"), [
    ("rtx-3090", True),    # 35.6e12 / (2 x 82 SMs x 1695 MHz) = 128 lanes per SM, Ampere GA102
    ("rtx-4090", True),    # 82.6e12 / (2 x 128 x 2520 MHz) = 128, Ada
    ("rtx-5090", True),    # 104.8e12 / (2 x 170 x 2407 MHz) = 128, Blackwell GB202
    ("l40s", True),        # 91.6e12 / (2 x 142 x 2520 MHz) = 128, Ada AD102
    ("h100-sxm", False),   # 128 lanes, but Hopper's FP32 lanes are not shared with INT32
    ("v100-sxm2-32gb", False),
    ("a100-sxm4-80gb", False),  # GA100: 64 FP32 lanes per SM (or no clock in the file)
])
def test_shared_int32_fp32(device_id, expected):
    assert shared_int32_fp32(hw(device_id), DEFAULTS) is expected


def test_geforce_fractions_pick_their_precisions():
    device = without_sustained(hw("rtx-5090"))
    perf = device_perf(device, defaults=ROUND)
    assert perf.matrix_ops_per_s["fp32"] == pytest.approx(104.8e12 * 0.25)   # shared-INT32 SIMT
    assert perf.matrix_ops_per_s["fp16"] == pytest.approx(209.5e12 * 0.5)    # half-rate FP32 accumulate
    assert perf.matrix_ops_per_s["fp8"] == pytest.approx(419e12 * 0.5)
    assert perf.matrix_ops_per_s["fp16_fp16acc"] == pytest.approx(419e12 * 0.4)    # FP16 accumulate
    assert perf.matrix_ops_per_s["fp8_fp16acc"] == pytest.approx(838e12 * 0.4)
    mamf = matmul_fraction(device, ROUND).value
    assert perf.matrix_ops_per_s["int8"] == pytest.approx(838e12 * mamf)
    titan = device_perf(hw("titan-rtx"), defaults=ROUND)   # one rate for both accumulations: MAMF
    assert titan.matrix_ops_per_s["fp16_fp16acc"] == pytest.approx(
        130.5e12 * matmul_fraction(hw("titan-rtx"), ROUND).value)


def test_data_centre_cards_keep_their_fractions():
    device = hw("h200-sxm")
    perf = device_perf(device, defaults=ROUND)
    mamf = matmul_fraction(device, ROUND).value
    for p, tops in device.dense_tops.items():
        assert perf.matrix_ops_per_s[p] == pytest.approx(tops * 1e12 * mamf)
