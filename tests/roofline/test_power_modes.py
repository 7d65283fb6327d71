"""The roofline device at a module's power mode: rates scale with the mode's clocks and units."""

from __future__ import annotations

import pytest

from tests.catalog.test_power_modes import module
from tops_advisor.roofline import device_perf


def test_device_perf_at_a_power_mode_scales_every_rate_of_the_datasheet_mode():
    hw = module()
    full, low = device_perf(hw), device_perf(hw, power_mode="15W")
    # 15W: 500 / 1000 MHz x 50 / 100 SMs = 1/4 of every compute rate; memory clock 2133 / 3200 of the bandwidth
    for p, rate in full.matrix_ops_per_s.items():
        assert low.matrix_ops_per_s[p] == pytest.approx(rate / 4)
    assert low.vector_ops_per_s == pytest.approx(full.vector_ops_per_s / 4)
    assert low.bandwidth_bytes_per_s == pytest.approx(full.bandwidth_bytes_per_s * 2133 / 3200)
    assert low.compute_units == 50 and low.hardware.tdp_w == 15
    assert any(a.startswith("power mode 15W (--power-mode)") for a in low.assumptions)
    assert any(a.startswith("power mode MAXN (the datasheet's") for a in full.assumptions)
    # the same as resolving the mode on the device first
    assert device_perf(hw.at_power_mode("15W")).matrix_ops_per_s == low.matrix_ops_per_s
