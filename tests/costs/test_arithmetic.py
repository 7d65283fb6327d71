"""The cost arithmetic on round numbers: board power under a load, energy, amortisation, USD per million, and the
replicas a total needs. Each expectation is worked out by hand in the comment beside it."""

from __future__ import annotations

import pytest

from tops_advisor.costs import (
    amortised_usd_per_hour,
    board_power_w,
    busy_fraction,
    energy_usd_per_hour,
    fleet_for,
    usd_per_million,
)
from tops_advisor.kinds import Bound


@pytest.mark.parametrize("busy,watts", [
    (0.0, 20.0),     # idle: 0.1 x 200 W
    (0.5, 110.0),    # 20 + (200 - 20) x 0.5
    (1.0, 200.0),    # busy all the time: the TDP
    (1.7, 200.0),    # a share above 1 is capped at 1
])
def test_board_power_runs_from_idle_to_tdp_with_the_busy_share(busy, watts):
    assert board_power_w(200.0, busy, idle_fraction=0.1) == pytest.approx(watts)


def test_board_power_under_a_busy_power_below_tdp():
    # idle 0.1 x 300 = 30 W, busy 0.9 x 300 = 270 W; half busy: 30 + 240 x 0.5 = 150 W
    assert board_power_w(300.0, 0.5, idle_fraction=0.1, busy_fraction_of_tdp=0.9) == pytest.approx(150.0)


def test_energy_is_kilowatts_times_pue_times_price():
    # 1,000 W = 1 kW x PUE 1.5 = 1.5 kW at the meter x $0.10/kWh = $0.15 per hour
    assert energy_usd_per_hour(1000.0, usd_per_kwh=0.10, pue=1.5) == pytest.approx(0.15)


def test_amortisation_spreads_a_purchase_over_every_hour_of_its_life():
    # $26,280 over 3 years x 8,760 h = 26,280 h: $1 per hour; over 6 years, $0.50
    assert amortised_usd_per_hour(26_280.0, 3.0) == pytest.approx(1.0)
    assert amortised_usd_per_hour(26_280.0, 6.0) == pytest.approx(0.5)


def test_usd_per_million_units():
    # $3.60 per hour at 1,000 samples/s = 3.6 M samples per hour: $1 per million
    assert usd_per_million(3.6, 1000.0) == pytest.approx(1.0)
    # $2 per hour at 50 tokens/s = 180,000 tokens per hour: $11.11 per million
    assert usd_per_million(2.0, 50.0) == pytest.approx(2.0 / 180_000 * 1e6)
    with pytest.raises(ValueError):
        usd_per_million(1.0, 0.0)


@pytest.mark.parametrize("rate,target,replicas,load", [
    (12_500.0, None, 1, 1.0),                    # no target: one replica at its own rate
    (12_500.0, 50_000.0, 4, 1.0),                # 50,000 / 12,500 = 4 exactly
    (12_500.0, 50_001.0, 5, 50_001 / 62_500),    # just over: a fifth replica, each at 80% load
    (12_500.0, 1_000.0, 1, 0.08),                # one replica at 1,000 / 12,500 of its rate
])
def test_fleet_for_a_total(rate, target, replicas, load):
    fleet = fleet_for(rate, target)
    assert fleet.replicas == replicas and fleet.load == pytest.approx(load)
    assert fleet.served_per_s == (target if target else rate)


def test_busy_fraction_counts_compute_and_memory_bound_time():
    # 2 s compute-bound + 1 s memory-bound of a 4 s latency (1 s overhead-bound): busy 3 / 4
    split = {Bound.COMPUTE: 2.0, Bound.MEMORY: 1.0, Bound.OVERHEAD: 1.0}
    assert busy_fraction(split, 4.0) == pytest.approx(0.75)
    assert busy_fraction({Bound.OVERHEAD: 1.0}, 1.0) == 0.0
    assert busy_fraction(split, 0.0) == 0.0
