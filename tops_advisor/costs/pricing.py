"""What an operating point costs on a device: its price (a rental per GPU-hour, or a purchase paid off over the
years of use plus the electricity the predicted load draws), per hour and per million units of work.

``Pricing`` holds where the prices come from for one run (the shipped price files, the user's own, the day "older
than a year" is measured from) and the cost assumptions (``CostSettings``); ``Pricing.cost`` is the cost of one
operating point, or None where the device has no price of that kind (``Pricing.missing`` says why).
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from pathlib import Path

from ..catalog import Catalog, Hardware, PriceReport, device_prices, load_prices
from ..catalog.prices import DevicePrice, PriceFile, PriceKind, UserPrices
from ..errors import InputError
from .arithmetic import amortised_usd_per_hour, board_power_w, energy_usd_per_hour, usd_per_million
from .defaults import COST_DEFAULTS

SAMPLES, TOKENS = "samples", "tokens"
KIND_WORDS = {PriceKind.RENTAL: "rented", PriceKind.PURCHASE: "bought"}


@dataclass(frozen=True)
class CostSettings:
    """The assumptions behind an owned card's cost; each defaults to ``COST_DEFAULTS`` (sources there)."""

    electricity_usd_per_kwh: float = COST_DEFAULTS.electricity_usd_per_kwh.value
    pue: float = COST_DEFAULTS.pue.value
    life_years: float = COST_DEFAULTS.life_years.value
    idle_power_fraction: float = COST_DEFAULTS.idle_power_fraction.value
    busy_power_fraction: float = COST_DEFAULTS.busy_power_fraction.value

    def __post_init__(self):
        if self.electricity_usd_per_kwh < 0:
            raise InputError(f"--electricity-usd-per-kwh must be zero or more, got {self.electricity_usd_per_kwh:g}",
                             hint="US dollars per kWh, e.g. 0.12")
        if self.pue < 1:
            raise InputError(f"--pue must be at least 1, got {self.pue:g}",
                             hint="facility power over IT power: 1.0 is no overhead, 1.58 the industry average")
        if self.life_years <= 0:
            raise InputError(f"--life-years must be greater than zero, got {self.life_years:g}",
                             hint="the years of use a purchase is paid off over, e.g. 3")
        if not 0 <= self.idle_power_fraction <= self.busy_power_fraction <= 1:
            raise InputError("idle and busy power must be shares of TDP with 0 <= idle <= busy <= 1, got "
                             f"{self.idle_power_fraction:g} and {self.busy_power_fraction:g}")


@dataclass(frozen=True)
class Cost:
    """What an operating point costs on ``devices`` cards: per hour, per million units of work, and the price
    behind it. Owned cards add the amortised purchase and the electricity; a rental price includes both."""

    kind: PriceKind
    devices: int
    usd_per_hour: float                      # all devices
    usd_per_million: float                   # per million ``unit`` of the work served
    unit: str                                # "samples" or "tokens"
    price: DevicePrice                       # the price of one device (per GPU-hour or per card)
    older_than_a_year: bool
    power_w: float | None = None             # owned: one card's board power under the load
    energy_usd_per_hour: float | None = None  # owned: all devices' electricity, PUE included
    amortisation_usd_per_hour: float | None = None  # owned: all devices' purchase, spread over the years of use
    up_front_usd: float | None = None        # owned: the purchase of all devices

    @property
    def provider(self) -> str | None:
        """Who rents or sells it ('RunPod (on-demand)'), 'your prices (FILE)' for the user's own, else None."""
        return self.price.provider or (self.price.whose if self.price.source is None else None)

    @property
    def source(self) -> str:
        """Whose price and where from: 'RunPod (on-demand), <source title>', or 'your prices (FILE)'."""
        p = self.price
        where = p.source.title if p.source is not None else p.whose
        return f"{p.provider}, {where}" if p.provider else where

    @property
    def date(self) -> str | None:
        return self.price.date.isoformat() if self.price.date else None


@dataclass
class Pricing:
    """The prices of one run and the assumptions costs are computed with."""

    shipped: dict[str, PriceFile]
    user: UserPrices | None = None
    settings: CostSettings = field(default_factory=CostSettings)
    today: _dt.date | None = None
    _reports: dict[str, PriceReport] = field(default_factory=dict, repr=False)

    def report(self, hw: Hardware) -> PriceReport:
        if hw.id not in self._reports:
            self._reports[hw.id] = device_prices(hw, self.shipped, self.user, self.today)
        return self._reports[hw.id]

    def price(self, hw: Hardware, kind: PriceKind) -> DevicePrice | None:
        """The price of ``kind`` used for ``hw``: the cheapest not older than a year, else the cheapest."""
        return self.report(hw).cheapest(kind)

    def missing(self, hw: Hardware, kind: PriceKind) -> str:
        """Why ``hw`` has no price of ``kind`` (the price file's reason where it gives one)."""
        why = self.report(hw).no_public_price.get(kind)
        return f"no {kind.value} price: {why}" if why else f"no {kind.value} price recorded for {hw.id}"

    def cost(self, hw: Hardware, kind: PriceKind, *, units_per_s: float, devices: int = 1, busy: float = 1.0,
             unit: str = SAMPLES) -> Cost | None:
        """The cost of ``devices`` cards of kind ``hw`` serving ``units_per_s`` together, each busy a share
        ``busy`` of the time; None without a price of ``kind``."""
        price = self.price(hw, kind)
        if price is None:
            return None
        old = price.older_than_a_year(self.report(hw).today)
        if kind == PriceKind.RENTAL:
            hourly = price.usd * devices
            return Cost(kind, devices, hourly, usd_per_million(hourly, units_per_s), unit, price, old)
        s = self.settings
        power = board_power_w(hw.tdp_w, busy, s.idle_power_fraction, s.busy_power_fraction)
        energy = devices * energy_usd_per_hour(power, s.electricity_usd_per_kwh, s.pue)
        amortisation = devices * amortised_usd_per_hour(price.usd, s.life_years)
        hourly = amortisation + energy
        return Cost(kind, devices, hourly, usd_per_million(hourly, units_per_s), unit, price, old, power_w=power,
                    energy_usd_per_hour=energy, amortisation_usd_per_hour=amortisation,
                    up_front_usd=price.usd * devices)


def load_pricing(catalog: Catalog, user_prices: Path | str | None = None, settings: CostSettings | None = None,
                 today: _dt.date | None = None) -> Pricing:
    """The prices of ``catalog`` (its shipped price files) and the user's own (``user_prices``, else
    TOPS_ADVISOR_PRICES), with ``settings`` (default: ``COST_DEFAULTS``)."""
    shipped, user = load_prices(catalog, user_prices)
    return Pricing(shipped, user, settings or CostSettings(), today)
