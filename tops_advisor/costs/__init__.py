"""What the work costs: a device's price (rented per GPU-hour, or bought and paid off over its years of use plus
the electricity its predicted load draws), per hour and per million samples or tokens.

``arithmetic.py`` holds the formulas (pure numbers), ``defaults.py`` the electricity price, PUE, years of use and
power shares with their sources, ``pricing.py`` the prices of one run (``Pricing``, ``load_pricing``) and the cost
of one operating point (``Cost``).
"""

from ..catalog.prices import PriceKind
from .arithmetic import (
    Fleet,
    amortised_usd_per_hour,
    board_power_w,
    busy_fraction,
    energy_usd_per_hour,
    fleet_for,
    usd_per_million,
)
from .defaults import COST_DEFAULTS, CostDefaults
from .pricing import KIND_WORDS, SAMPLES, TOKENS, Cost, CostSettings, Pricing, load_pricing

__all__ = ["COST_DEFAULTS", "KIND_WORDS", "SAMPLES", "TOKENS", "Cost", "CostDefaults", "CostSettings", "Fleet",
           "PriceKind", "Pricing", "amortised_usd_per_hour", "board_power_w", "busy_fraction",
           "energy_usd_per_hour", "fleet_for", "load_pricing", "usd_per_million"]
