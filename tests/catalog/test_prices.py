"""Price files: every shipped file validates, every device has a price or says why not, bad files fail with
the message they must give, the user's own prices override the shipped ones, and old prices are marked."""

from __future__ import annotations

import datetime as dt
import importlib.util
import re

import pytest

from tests.conftest import make_hardware
from tests.paths import FIXTURES
from tops_advisor.catalog import load_catalog, shipped_catalog_dir
from tops_advisor.catalog.prices import (
    PriceKind,
    a_year_before,
    device_prices,
    load_price_file,
    load_user_prices,
    prices_dir,
    shipped_prices,
    user_prices_path,
)
from tops_advisor.errors import PriceFileError

PRICE_FILES = sorted(prices_dir(shipped_catalog_dir()).glob("*.toml"))
BAD = FIXTURES / "prices_bad"
USER = FIXTURES / "user_prices"
TODAY = dt.date(2026, 12, 1)

# file in tests/fixtures/prices_bad -> text the error must contain (besides the file name)
BAD_FILES = {
    "unknown-key.toml": "field prices.0.usd_per_hr: unknown key (not a price-file field",
    "negative-usd.toml": "field prices.0.usd: Input should be greater than 0 (got -3)",
    "wrong-per.toml": "field prices.0: a rental price is per gpu-hour, not per card",
    "rental-no-provider.toml": "field prices.0: a rental price needs its provider",
    "unknown-source.toml": "prices.0.source 'aws-page' is not a key in [[sources]]; known: lambda-page",
    "bad-date.toml": "field prices.0.date: Input should be a valid date",
    "bad-kind.toml": "field prices.0.kind: Input should be 'purchase' or 'rental' (got 'lease')",
    "no-prices-no-reason.toml": "no [[prices]] and no [no_public_price]",
    "reason-and-price.toml": "no_public_price.rental is given but so is a rental price",
    "name-mismatch.toml": "field device: 't4' must equal the file name 'name-mismatch'",
    "malformed.toml": "not valid TOML",
}

# file in tests/fixtures/user_prices -> text the error must contain
BAD_USER_FILES = {
    "unknown-device.toml": "[h10o-sxm]: unknown hardware 'h10o-sxm'",
    "unknown-key.toml": "[h100-sxm]: field usd_per_hr: unknown key; expected usd_per_hour (USD per GPU-hour) or "
                        "purchase_usd (USD per card)",
    "negative.toml": "[h100-sxm]: field usd_per_hour: Input should be greater than 0 (got -2)",
    "empty-table.toml": "[h100-sxm]: give usd_per_hour and/or purchase_usd",
    "not-a-table.toml": "h100-sxm = 2.1 is not a [device-id] table",
    "malformed.toml": "not valid TOML",
    "ambiguous.toml": "[a100]: hardware name 'a100' is ambiguous",
    "no-tables.toml": "no [device-id] tables",
}


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


@pytest.fixture(scope="module")
def shipped(catalog):
    return shipped_prices(catalog)


# --- shipped files ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("path", PRICE_FILES, ids=lambda p: p.name)
def test_every_shipped_price_file_validates(path, catalog):
    pf = load_price_file(path, catalog.ids)
    assert pf.device == path.stem


def test_every_device_has_a_price_file(catalog):
    assert sorted(p.stem for p in PRICE_FILES) == catalog.ids


@pytest.mark.parametrize("device_id", [hw.id for hw in load_catalog()])
def test_every_device_has_each_kind_of_price_or_says_why_not(catalog, shipped, device_id):
    report = device_prices(catalog.get(device_id), shipped, today=TODAY)
    assert report.missing_kinds() == []
    assert report.prices or report.no_public_price


def test_a_launch_msrp_is_a_purchase_price_in_the_price_file_with_its_source(catalog, shipped):
    report = device_prices(catalog.get("rtx-4090"), shipped, today=TODAY)
    msrp = report.cheapest(PriceKind.PURCHASE)
    assert msrp.usd == 1599 and msrp.date == dt.date(2022, 10, 12) and msrp.source.key == "nvidia-rtx40-launch"
    assert msrp.basis == "launch MSRP" and msrp.whose == "shipped"


def test_no_shipped_device_file_holds_a_price(catalog):
    """Prices live in price files only; the device files' price fields are kept for a user's own catalog."""
    assert [hw.id for hw in catalog if hw.price_usd is not None or hw.price_date or hw.price_note] == []


def test_a_user_device_file_price_is_still_a_purchase_price(tmp_path, shipped):
    """A --catalog device file with price_usd (the old place for a launch MSRP) is read as a purchase price."""
    hw = make_hardware(price_usd=999, price_date="2024-05-01", citations={**make_hardware().citations,
                                                                         "price_usd": "made-up: a list price"})
    report = device_prices(hw, shipped, today=TODAY)
    price = report.cheapest(PriceKind.PURCHASE)
    assert (price.usd, price.date, price.basis) == (999, dt.date(2024, 5, 1), "launch MSRP (device file)")
    assert price.source.key == "made-up" and price.older_than_a_year(TODAY)


def test_prices_derived_from_several_gpus_say_so(shipped):
    """A figure from an 8-GPU instance or system is that price / 8, and its basis shows the arithmetic."""
    checked = 0
    for pf in shipped.values():
        for p in pf.prices:
            total = re.search(r"\$([\d,]+(?:\.\d+)?)", p.basis or "")
            if "/ 8" in (p.basis or "") and total:
                assert p.usd == pytest.approx(float(total[1].replace(",", "")) / 8, abs=0.005), (pf.device, p.basis)
                checked += 1
    assert checked >= 5


# --- bad files -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name,expected", BAD_FILES.items())
def test_bad_price_file_message(name, expected):
    with pytest.raises(PriceFileError) as err:
        load_price_file(BAD / name)
    assert str(err.value).startswith(str(BAD / name)) and expected in str(err.value)


def test_a_price_file_for_an_unknown_device_suggests_ids(catalog):
    with pytest.raises(PriceFileError) as err:
        load_price_file(BAD / "no-such-device.toml", catalog.ids)
    assert "field device: unknown device 'no-such-device'; expected a catalog id" in str(err.value)
    assert err.value.hint


def test_a_bad_date_says_what_a_date_looks_like():
    with pytest.raises(PriceFileError, match="expected an ISO date such as 2026-12-01"):
        load_price_file(BAD / "bad-date.toml")


# --- the user's own prices -------------------------------------------------------------------------------

def test_user_prices_override_the_shipped_ones_of_their_kind(catalog, shipped):
    user = load_user_prices(USER / "good.toml", catalog)
    assert set(user.by_device) == {"h100-sxm", "rtx-4090"}  # 'RTX 4090' is an alias
    report = device_prices(catalog.get("h100-sxm"), shipped, user, today=TODAY)
    rentals = [p for p in report.prices if p.kind == PriceKind.RENTAL]
    assert [(p.usd, p.whose) for p in rentals] == [(2.1, f"your prices ({USER / 'good.toml'})")]
    purchases = [p for p in report.prices if p.kind == PriceKind.PURCHASE]
    assert purchases and all(p.whose == "shipped" for p in purchases)  # no purchase_usd given: shipped stays
    both = device_prices(catalog.get("rtx-4090"), shipped, user, today=TODAY)
    assert {(p.kind, p.usd) for p in both.prices} == {(PriceKind.PURCHASE, 1800), (PriceKind.RENTAL, 0.35)}
    assert all(p.source is None and p.date is None for p in both.prices)


def test_other_devices_keep_their_shipped_prices(catalog, shipped):
    user = load_user_prices(USER / "good.toml", catalog)
    assert device_prices(catalog.get("l4"), shipped, user, today=TODAY) == \
        device_prices(catalog.get("l4"), shipped, None, today=TODAY)


@pytest.mark.parametrize("name,expected", BAD_USER_FILES.items())
def test_bad_user_price_file_message(catalog, name, expected):
    with pytest.raises(PriceFileError) as err:
        load_user_prices(USER / name, catalog)
    assert str(err.value).startswith(str(USER / name)) and expected in str(err.value)


def test_the_environment_names_the_user_prices_unless_the_option_does(monkeypatch):
    monkeypatch.setenv("TOPS_ADVISOR_PRICES", "from-env.toml")
    assert str(user_prices_path(None)) == "from-env.toml"
    assert str(user_prices_path("from-option.toml")) == "from-option.toml"
    monkeypatch.delenv("TOPS_ADVISOR_PRICES")
    assert user_prices_path(None) is None


# --- older than a year -----------------------------------------------------------------------------------

@pytest.mark.parametrize("today,cutoff", [
    (dt.date(2026, 12, 1), dt.date(2025, 12, 1)),
    (dt.date(2028, 2, 29), dt.date(2027, 2, 28)),   # no 29 February the year before
])
def test_a_year_before(today, cutoff):
    assert a_year_before(today) == cutoff


@pytest.mark.parametrize("price_date,today,old", [
    (dt.date(2025, 11, 30), dt.date(2026, 12, 1), True),
    (dt.date(2025, 12, 1), dt.date(2026, 12, 1), False),   # exactly a year: not older than a year
    (dt.date(2026, 11, 9), dt.date(2026, 12, 1), False),
    (dt.date(2026, 11, 9), dt.date(2027, 11, 10), True),   # the same price, read a year later
])
def test_older_than_a_year(catalog, shipped, price_date, today, old):
    report = device_prices(catalog.get("h100-sxm"), shipped, today=today)
    price = report.prices[0]
    moved = type(price)(**{**price.__dict__, "date": price_date})
    assert moved.older_than_a_year(today) is old


def test_user_prices_are_never_old(catalog, shipped):
    user = load_user_prices(USER / "good.toml", catalog)
    report = device_prices(catalog.get("h100-sxm"), shipped, user, today=dt.date(2040, 1, 1))
    assert not any(p.older_than_a_year(report.today) for p in report.prices if p.whose != "shipped")


def test_the_cheapest_price_prefers_current_ones(catalog, shipped):
    """H200 SXM: an AWS Capacity Block rate of 2025 is lower than Google Cloud's of 2026, but older than a year."""
    report = device_prices(catalog.get("h200-sxm"), shipped, today=TODAY)
    assert report.cheapest(PriceKind.RENTAL).provider == "Google Cloud"
    assert device_prices(catalog.get("rtx-4090"), shipped, today=TODAY).cheapest(PriceKind.PURCHASE).usd == 1599


# --- the generated list of every price -----------------------------------------------------------------------

def test_the_prices_doc_lists_every_shipped_price():
    from tests.paths import REPO
    from tops_advisor.catalog import Catalog, shipped_catalog_dir

    spec = importlib.util.spec_from_file_location("price_table", REPO / "benchmarks" / "reports" / "price_table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    doc = (REPO / "docs" / "reports" / "prices.md").read_text(encoding="utf-8")
    block = module.render(Catalog.from_dirs([shipped_catalog_dir()]))
    assert module.replace_block(doc, block) == doc, (
        "docs/reports/prices.md is stale: run python3 benchmarks/reports/price_table.py --write docs/reports/prices.md")
    rows = [line for line in block.splitlines() if line.startswith("| ") and not line.startswith("| device")]
    assert len(rows) == sum(len(load_price_file(p).prices) for p in PRICE_FILES)
    assert "| rtx-4090 | purchase | 1,599 | card | NVIDIA (launch MSRP) | 2022-10-12 (stated) |" in block
