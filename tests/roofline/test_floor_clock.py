"""Kernel floors and gaps are cycle counts: a card without a probe takes them at reference clock / its clock
(``RooflineDefaults.kernel_floor_reference_clock_mhz``, ``roofline.device.floor_clock_scale``)."""

from __future__ import annotations

import pytest

from tests.paths import REPO
from tops_advisor.calibration import Calibration
from tops_advisor.catalog import Hardware, load_hardware_file
from tops_advisor.roofline.defaults import DEFAULTS
from tops_advisor.roofline.device import device_perf, floor_clock_scale

DB = REPO / "hardware_db"
REFERENCE = DEFAULTS.kernel_floor_reference_clock_mhz.value


def hw(device_id: str) -> Hardware:
    return load_hardware_file(DB / f"{device_id}.toml")


def at_clock(device: Hardware, mhz: float) -> Hardware:
    return device.model_copy(update={"boost_clock_mhz": mhz, "sustained_clock_mhz": None})


def test_half_the_clock_doubles_every_floor_and_the_gap():
    device = hw("a100-sxm4-80gb")
    ref, slow = device_perf(at_clock(device, REFERENCE)), device_perf(at_clock(device, REFERENCE / 2))
    assert slow.kernel_floor_s == pytest.approx(2 * ref.kernel_floor_s)
    assert slow.kernel_gap_s == pytest.approx(2 * ref.kernel_gap_s)
    for kind, floor in ref.kind_floor_s.items():
        assert slow.kind_floor_s[kind] == pytest.approx(2 * floor)
    assert ref.kernel_floor_s == pytest.approx(DEFAULTS.kernel_floor_s.value)   # the measured card's own
    assert any("kernel floors and gaps x2.00" in note for note in slow.assumptions)


def test_the_clock_is_the_one_compute_runs_at():
    device = hw("rtx-4090")                   # sustained 2730 MHz over its rated 2520
    assert floor_clock_scale(device, DEFAULTS) == pytest.approx(REFERENCE / device.sustained_clock_mhz)
    assert floor_clock_scale(hw("h200-sxm"), DEFAULTS) == 1.0
    no_clock = hw("a10").model_copy(update={"boost_clock_mhz": None})   # a card without a clock: the measured floors
    assert floor_clock_scale(no_clock, DEFAULTS) == 1.0
    assert floor_clock_scale(hw("a10"), DEFAULTS) == pytest.approx(REFERENCE / 1695.0)


def test_a_probe_of_the_card_replaces_the_clock_scaling():
    device = hw("a100-sxm4-80gb")
    cal = Calibration(hardware=device.id, measured_tops={"fp16": 250.0}, memory_bandwidth_gb_s=1800.0,
                      kernel_graph_us=2 * DEFAULTS.tiny_kernel_reference_s.value * 1e6)
    perf = device_perf(device, cal, "test")
    assert perf.kernel_floor_s == pytest.approx(2 * DEFAULTS.kernel_floor_s.value)
    assert perf.kernel_gap_s == pytest.approx(2 * DEFAULTS.kernel_gap_s.value)


def test_a_calibration_without_a_floor_probe_keeps_the_clock_scaling_and_says_so():
    device = hw("a100-sxm4-80gb")
    cal = Calibration(hardware=device.id, measured_tops={"fp16": 250.0}, memory_bandwidth_gb_s=1800.0)
    perf = device_perf(device, cal, "test")
    scale = floor_clock_scale(device, DEFAULTS)
    assert perf.kernel_floor_s == pytest.approx(DEFAULTS.kernel_floor_s.value * scale)
    assert any(note.startswith("kernel floors and gaps") for note in perf.assumptions)
