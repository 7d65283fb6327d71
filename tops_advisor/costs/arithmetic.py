"""The arithmetic of what work costs, in base units (watts, hours, US dollars, units of work per second). Pure
functions of numbers: no prices are looked up here (``pricing.py`` does that).

    board power   = idle + (busy - idle) x busy share       idle, busy: shares of TDP (``defaults.py``)
    energy        = board power / 1000 x PUE x USD per kWh   USD per device-hour
    amortisation  = purchase / (years of use x 8,760 h)     USD per device-hour
    owned         = amortisation + energy                    rented: the provider's USD per GPU-hour
    per million   = USD per hour / (units per s x 3,600) x 1e6
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from ..kinds import Bound
from .defaults import HOURS_PER_YEAR, SECONDS_PER_HOUR, UNITS_PER_MILLION


def busy_fraction(time_by_bound_s: Mapping[str, float], latency_s: float) -> float:
    """The share of an operating point's time the card works flat out: its compute- and memory-bound operators'
    time over the latency. Overhead-bound time (per-kernel floors, gaps between kernels, waiting for eager
    launches) counts as idle: the card is waiting, not computing."""
    if latency_s <= 0:
        return 0.0
    busy = time_by_bound_s.get(Bound.COMPUTE, 0.0) + time_by_bound_s.get(Bound.MEMORY, 0.0)
    return min(max(busy / latency_s, 0.0), 1.0)


def board_power_w(tdp_w: float, busy: float, idle_fraction: float, busy_fraction_of_tdp: float = 1.0) -> float:
    """Watts one card draws when it is busy a share ``busy`` (0 to 1) of the time and idle the rest."""
    busy = min(max(busy, 0.0), 1.0)
    idle_w = idle_fraction * tdp_w
    return idle_w + (busy_fraction_of_tdp * tdp_w - idle_w) * busy


def energy_usd_per_hour(power_w: float, usd_per_kwh: float, pue: float) -> float:
    """US dollars per hour for the electricity of one card drawing ``power_w``, facility overhead (PUE) included."""
    return power_w / 1000.0 * pue * usd_per_kwh


def amortised_usd_per_hour(purchase_usd: float, life_years: float) -> float:
    """A purchase spread evenly over every hour of ``life_years`` years."""
    return purchase_usd / (life_years * HOURS_PER_YEAR)


def usd_per_million(usd_per_hour: float, units_per_s: float) -> float:
    """US dollars per million units of work (samples, tokens) done at ``units_per_s`` for ``usd_per_hour``."""
    if units_per_s <= 0:
        raise ValueError(f"units_per_s must be positive, got {units_per_s}")
    return usd_per_hour / (units_per_s * SECONDS_PER_HOUR) * UNITS_PER_MILLION


@dataclass(frozen=True)
class Fleet:
    """How many replicas of an operating point serve a total rate, and how loaded each one is."""

    replicas: int
    served_per_s: float    # the work done: the target, or one replica's rate without a target
    load: float            # served / (replicas x one replica's rate): the share of its rate each replica runs at


def fleet_for(rate_per_s: float, target_per_s: float | None = None) -> Fleet:
    """The fewest replicas of a point doing ``rate_per_s`` each that reach ``target_per_s`` together (one without
    a target), the load spread evenly over them."""
    if rate_per_s <= 0:
        raise ValueError(f"rate_per_s must be positive, got {rate_per_s}")
    if target_per_s is None:
        return Fleet(1, rate_per_s, 1.0)
    replicas = max(1, math.ceil(target_per_s / rate_per_s * (1 - 1e-12)))
    return Fleet(replicas, target_per_s, target_per_s / (replicas * rate_per_s))
