"""Power modes (Jetson nvpmodel) as catalog data: a toy module whose mode arithmetic is done by hand, and the
shipped Jetson files."""

from __future__ import annotations

import pytest

from tests.conftest import make_hardware
from tops_advisor.catalog import load_catalog
from tops_advisor.catalog.power_modes import UnknownPowerModeError
from tops_advisor.errors import InputError

SOURCE = "made-up: modes table"


def mode(name, w, mhz, sms, emc, cores=4, **extra):
    return {"name": name, "power_w": w, "gpu_clock_mhz": mhz, "active_compute_units": sms,
            "memory_clock_mhz": emc, "cpu_cores": cores, "source": SOURCE, **extra}


# 100 SMs at 1000 MHz and memory clock 3200 MHz are the datasheet's: 100 TOPS fp16, 1000 GB/s, 200 W.
MODES = [mode("15W", 15, 500, 50, 2133), mode("30W", 30, 250, 100, 3200), mode("60W", 60, 800, 100, 3200),
         mode("MAXN", 200, 1000, 100, 3200)]
CITES = {"memory_gb": "made-up", "memory_bandwidth_gb_s": "made-up", "compute_units": "made-up", "tdp_w": "made-up",
         "dense_tops": "made-up", "sparse_tops": "made-up", "boost_clock_mhz": "made-up",
         "memory_clock_mhz": "made-up"}


def module(**over):
    return make_hardware(segment="edge", boost_clock_mhz=1000, memory_clock_mhz=3200, power_modes=MODES,
                         power_mode="MAXN", citations=CITES, **over)


def test_a_mode_scales_peaks_by_clock_and_units_and_bandwidth_by_memory_clock():
    hw = module().at_power_mode("15W")
    # 100 TOPS x 500/1000 MHz x 50/100 SMs = 25 TOPS; 1000 GB/s x 2133/3200 = 666.6 GB/s
    assert hw.dense_tops["fp16"] == pytest.approx(25.0)
    assert hw.sparse_tops["fp16"] == pytest.approx(50.0)
    assert hw.memory_bandwidth_gb_s == pytest.approx(1000 * 2133 / 3200)
    assert (hw.compute_units, hw.boost_clock_mhz, hw.memory_clock_mhz, hw.tdp_w) == (50, 500, 2133, 15)
    assert hw.power_mode == "15W" and not hw.at_datasheet_mode and hw.datasheet_power_mode == "MAXN"
    assert "power mode 15W" in hw.citation("dense_tops.fp16")


def test_the_datasheet_mode_is_the_device_itself_and_names_are_forgiving():
    hw = module()
    assert hw.at_power_mode("maxn") is hw and hw.at_datasheet_mode
    assert hw.at_power_mode("15w").power_mode == "15W"


def test_fastest_mode_within_a_limit():
    hw = module()
    # within 40 W: 15W gives 500 x 50 = 25,000 MHz x SMs, 30W gives 250 x 100 = 25,000 at a higher memory clock
    assert hw.fastest_power_mode(40).name == "30W"
    assert hw.fastest_power_mode(15).name == "15W"
    assert hw.fastest_power_mode(1000).name == "MAXN"
    assert hw.fastest_power_mode(10) is None


def test_unknown_mode_is_one_line_listing_the_modes():
    with pytest.raises(UnknownPowerModeError) as info:
        module().at_power_mode("99W")
    assert isinstance(info.value, InputError)  # exit 2 at the CLI
    assert str(info.value) == ("toy-gpu has no power mode '99W'; its modes: 15W (15 W), 30W (30 W), 60W (60 W), "
                               "MAXN (200 W)")
    with pytest.raises(UnknownPowerModeError, match="toy-gpu has no power modes"):
        make_hardware().at_power_mode("15W")


def test_modes_need_the_figures_they_scale_from():
    with pytest.raises(ValueError, match="needs memory_clock_mhz"):
        make_hardware(boost_clock_mhz=1000, power_modes=MODES, power_mode="MAXN",
                      citations={k: v for k, v in CITES.items() if k != "memory_clock_mhz"})


JETSONS = ("jetson-agx-orin-64gb", "jetson-agx-orin-32gb", "jetson-orin-nx-16gb", "jetson-orin-nano-8gb")


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


@pytest.mark.parametrize("device_id", JETSONS)
def test_every_jetson_lists_its_modes_and_the_datasheet_mode(catalog, device_id):
    hw = catalog.get(device_id)
    assert hw.power_modes and hw.power_mode in {m.name for m in hw.power_modes}
    for m in hw.power_modes:
        assert m.source.split(":")[0] in {s.key for s in hw.sources}
        v = hw.at_power_mode(m.name)
        assert v.tdp_w == m.power_w and v.compute_units == m.active_compute_units
        ratio = m.gpu_clock_mhz / hw.boost_clock_mhz * m.active_compute_units / hw.compute_units
        assert v.dense_tops["int8"] == pytest.approx(hw.dense_tops["int8"] * ratio)


def test_orin_modes_read_from_nvpmodel(catalog):
    # nvpmodel_p3767_0000.conf: 15W gates 2 of 4 TPCs at 612 MHz; 25W runs all 4 (8 SMs) at 408 MHz
    nx = catalog.get("jetson-orin-nx-16gb")
    assert nx.get_power_mode("15W").speed() == (612 * 4, 3199)
    assert nx.get_power_mode("25W").speed() == (408 * 8, 3199)
    # NX 10W caps the memory at EMC 2133 MHz: 102.4 GB/s x 2133 / 3199 = 68.3 GB/s
    assert nx.at_power_mode("10W").memory_bandwidth_gb_s == pytest.approx(68.28, abs=0.01)
    # the Orin Nano's Super 25W mode lifts its EMC from 2133 to 3199 MHz: 68 x 3199 / 2133 = 102 GB/s
    nano = catalog.get("jetson-orin-nano-8gb")
    assert nano.at_power_mode("25W").memory_bandwidth_gb_s == pytest.approx(102.0, abs=0.1)
    # MAXN_SUPER: 8 SMs x 1020 MHz x 8192 sparse INT8 ops/clk = 66.8 TOPS (NVIDIA: 67)
    assert nano.at_power_mode("MAXN_SUPER").sparse_tops["int8"] == pytest.approx(66.8, abs=0.1)


@pytest.mark.parametrize("device_id", JETSONS)
def test_a_15w_limit_picks_a_mode_of_at_most_15w(catalog, device_id):
    hw = catalog.get(device_id)
    chosen = hw.fastest_power_mode(15)
    assert chosen.power_w <= 15
    # no mode within 15 W is faster in both GPU throughput and memory clock
    for m in hw.power_modes:
        if m.power_w <= 15:
            assert m.speed() <= chosen.speed()
