"""``Pricing.cost`` on round numbers: a rental is the provider's price per GPU-hour times the devices; a purchase
is paid off over the years of use plus the electricity its load draws. The price used is the cheapest current one,
a user's price file replaces the shipped ones, and a price older than a year says so."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from tests.conftest import make_hardware
from tops_advisor.catalog import load_catalog
from tops_advisor.catalog.prices import PriceFile, PriceKind, UserPrice, UserPrices
from tops_advisor.costs import COST_DEFAULTS, CostSettings, Pricing, load_pricing
from tops_advisor.errors import InputError

TODAY = dt.date(2026, 12, 1)
TOY = make_hardware()   # 200 W TDP
ROUND = CostSettings(electricity_usd_per_kwh=0.10, pue=1.5, life_years=3.0, idle_power_fraction=0.1,
                     busy_power_fraction=1.0)


def price_file(*prices: dict) -> PriceFile:
    return PriceFile.model_validate({
        "device": "toy-gpu", "sources": [{"key": "list", "title": "a price list"}],
        "prices": [{"per": "gpu-hour" if p["kind"] == "rental" else "card", "source": "list", "date_kind": "read",
                    **({"provider": "Cloud A"} if p["kind"] == "rental" else {}), **p} for p in prices]})


SHIPPED = {"toy-gpu": price_file({"kind": "rental", "usd": 2.0, "date": dt.date(2026, 11, 1)},
                                 {"kind": "rental", "usd": 3.0, "date": dt.date(2026, 11, 1), "provider": "Cloud B"},
                                 {"kind": "purchase", "usd": 26_280.0, "date": dt.date(2026, 11, 1)})}


def test_rented_cost_is_the_cheapest_rental_times_the_devices():
    # 3 devices x $2/GPU-h (Cloud A, cheaper than Cloud B's $3) = $6/h; at 1,000 samples/s = 3.6 M/h: $1.667 per M
    cost = Pricing(SHIPPED, settings=ROUND, today=TODAY).cost(TOY, PriceKind.RENTAL, units_per_s=1000.0, devices=3)
    assert cost.usd_per_hour == pytest.approx(6.0)
    assert cost.usd_per_million == pytest.approx(6.0 / 3.6)
    assert (cost.price.provider, cost.provider, cost.date, cost.older_than_a_year) == \
        ("Cloud A", "Cloud A", "2026-11-01", False)
    assert cost.energy_usd_per_hour is None and cost.up_front_usd is None   # a rental price includes both


def test_bought_cost_is_the_purchase_paid_off_plus_energy_under_the_load():
    # $26,280 over 3 x 8,760 h = $1/h. Busy all the time: 200 W x PUE 1.5 x $0.10/kWh = $0.03/h. $1.03/h per card.
    pricing = Pricing(SHIPPED, settings=ROUND, today=TODAY)
    cost = pricing.cost(TOY, PriceKind.PURCHASE, units_per_s=1000.0, devices=2, busy=1.0)
    assert cost.power_w == pytest.approx(200.0)
    assert cost.amortisation_usd_per_hour == pytest.approx(2.0)
    assert cost.energy_usd_per_hour == pytest.approx(0.06)
    assert cost.usd_per_hour == pytest.approx(2.06) and cost.up_front_usd == pytest.approx(52_560.0)
    # Half busy: 20 + 180 x 0.5 = 110 W, 0.11 kW x 1.5 x $0.10 = $0.0165/h per card
    half = pricing.cost(TOY, PriceKind.PURCHASE, units_per_s=1000.0, busy=0.5)
    assert half.power_w == pytest.approx(110.0) and half.usd_per_hour == pytest.approx(1.0165)


def test_no_price_of_a_kind_says_why():
    shipped = {"toy-gpu": PriceFile.model_validate({
        "device": "toy-gpu", "no_public_price": {"rental": "no cloud rents this made-up card"},
        "sources": [{"key": "list", "title": "a price list"}],
        "prices": [{"kind": "purchase", "usd": 100.0, "per": "card", "source": "list",
                    "date": dt.date(2026, 1, 1), "date_kind": "read"}]})}
    pricing = Pricing(shipped, today=TODAY)
    assert pricing.cost(TOY, PriceKind.RENTAL, units_per_s=1.0) is None
    assert pricing.missing(TOY, PriceKind.RENTAL) == "no rental price: no cloud rents this made-up card"
    assert Pricing({}, today=TODAY).missing(TOY, PriceKind.PURCHASE) == "no purchase price recorded for toy-gpu"


def test_a_price_older_than_a_year_is_marked_and_a_current_one_preferred():
    old_only = {"toy-gpu": price_file({"kind": "rental", "usd": 1.0, "date": dt.date(2024, 6, 1)})}
    cost = Pricing(old_only, today=TODAY).cost(TOY, PriceKind.RENTAL, units_per_s=1.0)
    assert cost.older_than_a_year and cost.date == "2024-06-01"
    both = {"toy-gpu": price_file({"kind": "rental", "usd": 1.0, "date": dt.date(2024, 6, 1)},
                                  {"kind": "rental", "usd": 4.0, "date": dt.date(2026, 6, 1)})}
    cost = Pricing(both, today=TODAY).cost(TOY, PriceKind.RENTAL, units_per_s=1.0)
    assert cost.price.usd == 4.0 and not cost.older_than_a_year   # the cheaper one is two years old


def test_a_user_price_replaces_the_shipped_ones_and_says_whose():
    user = UserPrices(Path("mine.toml"), {"toy-gpu": UserPrice(usd_per_hour=0.5)})
    pricing = Pricing(SHIPPED, user, today=TODAY)
    rented = pricing.cost(TOY, PriceKind.RENTAL, units_per_s=1.0)
    assert rented.price.usd == 0.5 and rented.provider == "your prices (mine.toml)" and rented.date is None
    assert rented.source == "your prices (mine.toml)" and not rented.older_than_a_year
    assert pricing.cost(TOY, PriceKind.PURCHASE, units_per_s=1.0).price.usd == 26_280.0   # purchase: shipped


def test_load_pricing_reads_the_shipped_files_and_a_user_file():
    catalog = load_catalog()
    pricing = load_pricing(catalog, Path(__file__).parents[1] / "fixtures" / "user_prices" / "good.toml")
    assert pricing.price(catalog.get("h100-sxm"), PriceKind.RENTAL).usd == 2.1          # the user's
    assert pricing.price(catalog.get("l4"), PriceKind.RENTAL).whose == "shipped"
    assert pricing.settings == CostSettings()


def test_settings_default_to_the_sourced_defaults():
    s = CostSettings()
    assert (s.electricity_usd_per_kwh, s.pue, s.life_years) == (
        COST_DEFAULTS.electricity_usd_per_kwh.value, COST_DEFAULTS.pue.value, COST_DEFAULTS.life_years.value)
    for field in ("electricity_usd_per_kwh", "pue", "life_years", "idle_power_fraction", "busy_power_fraction"):
        assert len(getattr(COST_DEFAULTS, field).source) > 40, field   # each default says where it comes from


@pytest.mark.parametrize("over,message", [
    ({"electricity_usd_per_kwh": -0.1}, "--electricity-usd-per-kwh must be zero or more, got -0.1"),
    ({"pue": 0.9}, "--pue must be at least 1, got 0.9"),
    ({"life_years": 0}, "--life-years must be greater than zero, got 0"),
    ({"idle_power_fraction": 0.5, "busy_power_fraction": 0.4}, "0 <= idle <= busy <= 1"),
])
def test_bad_settings_are_one_line(over, message):
    with pytest.raises(InputError, match=message.replace("(", r"\(")):
        CostSettings(**over)


def test_free_electricity_is_allowed():
    cost = Pricing(SHIPPED, settings=CostSettings(electricity_usd_per_kwh=0.0), today=TODAY).cost(
        TOY, PriceKind.PURCHASE, units_per_s=1.0)
    assert cost.energy_usd_per_hour == 0.0 and cost.usd_per_hour == pytest.approx(1.0)
