"""Prices of catalog devices, kept apart from the datasheet numbers so they can be refreshed on their own.

Shipped prices live in ``hardware_db/prices/<device-id>.toml``: purchase prices (list price / MSRP, or a dated
reseller or system-derived figure) in US dollars per card, and rental prices in US dollars per GPU-hour from
named providers, each with its source and a date: the one the source gives (``date_kind = "stated"``: its
publication, retrieval or snapshot date) or the day it was read (``date_kind = "read"``). A kind of price
(purchase, rental) no public figure exists for says why in ``[no_public_price]``. A
figure that is not a plain price of one card or one GPU-hour says how it was derived in ``basis`` ("8-GPU
instance price / 8", "system price / 8").

Launch MSRPs are purchase prices in the price files like any other (``basis = "launch MSRP"``). A device file
may still carry its own ``price_usd`` (with ``price_date``): no shipped one does, but a user's own ``--catalog``
file from before price files is read here as a purchase price of that file.

A user's own prices (``--prices FILE`` or ``TOPS_ADVISOR_PRICES``) are a small TOML file of ``[device-id]`` tables
with ``usd_per_hour`` and/or ``purchase_usd``; for that run they replace the shipped prices of that kind.
"""

from __future__ import annotations

import datetime as _dt
import os
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, ValidationError, model_validator

from ..errors import CatalogError, PriceFileError
from ..suggest import did_you_mean
from .loader import Catalog, format_validation_error, read_toml
from .schema import ID_PATTERN, Hardware, Source

ENV_VAR = "TOPS_ADVISOR_PRICES"
PRICES_DIRNAME = "prices"
STALE_AFTER_YEARS = 1


class PriceKind(str, Enum):
    PURCHASE = "purchase"
    RENTAL = "rental"


class PricePer(str, Enum):
    CARD = "card"
    GPU_HOUR = "gpu-hour"


PER_FOR_KIND = {PriceKind.PURCHASE: PricePer.CARD, PriceKind.RENTAL: PricePer.GPU_HOUR}


class PriceEntry(BaseModel):
    """One price in a shipped price file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: PriceKind
    usd: PositiveFloat = Field(description="US dollars per card (purchase) or per GPU-hour (rental).")
    per: PricePer
    provider: str | None = Field(default=None, min_length=2, description="Who rents it out (rental) or sells it.")
    source: str = Field(pattern=ID_PATTERN, description="Key of an entry in this file's [[sources]].")
    date: _dt.date = Field(description="ISO date the source states, or the date it was read.")
    date_kind: Literal["stated", "read"] = Field(
        description="stated: the date the source gives (publication, retrieval, snapshot); read: when it was read.")
    basis: str | None = Field(default=None, description="How the figure was derived, e.g. '8-GPU instance / 8'.")
    note: str | None = None

    @model_validator(mode="after")
    def _consistent(self) -> PriceEntry:
        if self.per != PER_FOR_KIND[self.kind]:
            raise ValueError(f"a {self.kind.value} price is per {PER_FOR_KIND[self.kind].value}, "
                             f"not per {self.per.value}")
        if self.kind == PriceKind.RENTAL and not self.provider:
            raise ValueError("a rental price needs its provider (provider = \"Lambda\", ...)")
        return self


class PriceFile(BaseModel):
    """One device's file in ``hardware_db/prices/``: its prices with their sources, or why there are none."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    device: str = Field(pattern=ID_PATTERN, description="Catalog id; equals the file name without .toml.")
    no_public_price: dict[PriceKind, str] = Field(
        default_factory=dict, description="Per kind (purchase, rental) without an entry: why no public figure "
                                          "is recorded.")
    sources: tuple[Source, ...] = ()
    prices: tuple[PriceEntry, ...] = ()

    @model_validator(mode="after")
    def _consistent(self) -> PriceFile:
        if not self.prices and not self.no_public_price:
            raise ValueError("no [[prices]] and no [no_public_price]: give prices, or say why there are none")
        for kind, why in self.no_public_price.items():
            if len(why.strip()) < 10:
                raise ValueError(f"no_public_price.{kind.value} must say why (a sentence), got {why!r}")
            if any(p.kind == kind for p in self.prices):
                raise ValueError(f"no_public_price.{kind.value} is given but so is a {kind.value} price")
        keys = [s.key for s in self.sources]
        if len(set(keys)) != len(keys):
            raise ValueError("two sources share one key")
        for i, p in enumerate(self.prices):
            if p.source not in keys:
                raise ValueError(f"prices.{i}.source {p.source!r} is not a key in [[sources]]; "
                                 f"known: {', '.join(keys) or 'none'}")
        return self


class UserPrice(BaseModel):
    """A user's own prices for one device: no citation needed."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    usd_per_hour: PositiveFloat | None = Field(default=None, description="Rental, US dollars per GPU-hour.")
    purchase_usd: PositiveFloat | None = Field(default=None, description="Purchase, US dollars per card.")

    @model_validator(mode="after")
    def _something(self) -> UserPrice:
        if self.usd_per_hour is None and self.purchase_usd is None:
            raise ValueError("give usd_per_hour and/or purchase_usd")
        return self


@dataclass(frozen=True)
class UserPrices:
    """A user's price file: where it came from and its prices by device id."""

    path: Path
    by_device: dict[str, UserPrice]

    @property
    def label(self) -> str:
        return f"your prices ({self.path})"


@dataclass(frozen=True)
class DevicePrice:
    """One price as commands show it: a shipped entry, a device file's MSRP, or the user's own."""

    kind: PriceKind
    usd: float
    per: PricePer
    provider: str | None
    source: Source | None      # None for the user's own prices
    whose: str                 # "shipped" or "your prices (FILE)"
    date: _dt.date | None
    date_kind: str | None
    basis: str | None = None
    note: str | None = None

    def older_than_a_year(self, today: _dt.date) -> bool:
        return self.date is not None and self.date < a_year_before(today)


@dataclass(frozen=True)
class PriceReport:
    """Every price known for one device, and why there are none when there are none."""

    device: str
    prices: tuple[DevicePrice, ...]
    no_public_price: dict[PriceKind, str]   # kinds without a price: why
    today: _dt.date

    def missing_kinds(self) -> list[PriceKind]:
        """Kinds with neither a price nor a stated reason for having none."""
        have = {p.kind for p in self.prices}
        return [k for k in PriceKind if k not in have and k not in self.no_public_price]

    def cheapest(self, kind: PriceKind) -> DevicePrice | None:
        """The lowest price of ``kind`` among those not older than a year, else among all (None if none)."""
        of_kind = [p for p in self.prices if p.kind == kind]
        current = [p for p in of_kind if not p.older_than_a_year(self.today)]
        pool = current or of_kind
        return min(pool, key=lambda p: p.usd) if pool else None


def a_year_before(today: _dt.date) -> _dt.date:
    """The same day STALE_AFTER_YEARS earlier (28 February for 29 February)."""
    try:
        return today.replace(year=today.year - STALE_AFTER_YEARS)
    except ValueError:
        return today.replace(year=today.year - STALE_AFTER_YEARS, day=28)


# --- shipped price files -----------------------------------------------------------------------------------

def prices_dir(catalog_dir: Path) -> Path:
    return catalog_dir / PRICES_DIRNAME


def load_price_file(path: Path | str, known_ids: Iterable[str] | None = None) -> PriceFile:
    """Parse and validate one shipped price file; its name must equal the device id, a known one if given."""
    path = Path(path)
    try:
        pf = PriceFile.model_validate(read_toml(path, PriceFileError))
    except ValidationError as exc:
        msg = format_validation_error(path, exc, _FILE_UNKNOWN_KEY)
        if exc.errors()[0]["type"].startswith(("date_", "datetime_")):
            msg += "; expected an ISO date such as 2026-12-01"
        raise PriceFileError(msg) from None
    if path.stem != pf.device:
        raise PriceFileError(f"{path}: field device: {pf.device!r} must equal the file name {path.stem!r}")
    if known_ids is not None:
        known = list(known_ids)
        if pf.device not in known:
            hint = did_you_mean(pf.device, known) or "run 'tops-advisor hardware list' for the ids"
            raise PriceFileError(f"{path}: field device: unknown device {pf.device!r}; expected a catalog id",
                                 hint=hint)
    return pf


def load_price_files(directory: Path, known_ids: Iterable[str]) -> dict[str, PriceFile]:
    """Every ``*.toml`` in ``directory`` (none if it does not exist), by device id."""
    if not directory.is_dir():
        return {}
    known = list(known_ids)
    files = sorted(p for p in directory.iterdir() if p.suffix == ".toml" and p.is_file())
    return {pf.device: pf for pf in (load_price_file(p, known) for p in files)}


def shipped_prices(catalog: Catalog) -> dict[str, PriceFile]:
    """The price files beside each catalog directory a device came from (shipped first, later ones win)."""
    dirs: list[Path] = []
    for origin in catalog.origins.values():
        d = prices_dir(origin.parent)
        if d not in dirs:
            dirs.append(d)
    out: dict[str, PriceFile] = {}
    for d in dirs:
        out.update(load_price_files(d, catalog.ids))
    return out


# --- the user's own prices ---------------------------------------------------------------------------------

def user_prices_path(option: Path | str | None = None) -> Path | None:
    """``--prices FILE`` if given, else ``TOPS_ADVISOR_PRICES`` if set, else None."""
    if option:
        return Path(option)
    env = os.environ.get(ENV_VAR, "").strip()
    return Path(env) if env else None


_USER_UNKNOWN_KEY = "unknown key; expected usd_per_hour (USD per GPU-hour) or purchase_usd (USD per card)"
_FILE_UNKNOWN_KEY = "unknown key (not a price-file field; docs/hardware.md, 'Prices', lists them)"
_USER_HINT = "a prices file holds [device-id] tables with usd_per_hour and/or purchase_usd, e.g. " \
             "'[h100-sxm]' then 'usd_per_hour = 2.5'"


def load_user_prices(path: Path | str, catalog: Catalog) -> UserPrices:
    """Parse a user's price file; device names may be ids or aliases. Errors name the file, table and field."""
    path = Path(path)
    raw = read_toml(path, PriceFileError)
    by_device: dict[str, UserPrice] = {}
    for name, table in raw.items():
        if not isinstance(table, dict):
            raise PriceFileError(f"{path}: {name} = {table!r} is not a [device-id] table", hint=_USER_HINT)
        try:
            hw = catalog.get(name)
        except CatalogError as exc:  # unknown or ambiguous name: keep its hint (the closest ids)
            raise PriceFileError(f"{path}: [{name}]: {exc}", hint=exc.hint) from None
        try:
            by_device[hw.id] = UserPrice.model_validate(table)
        except ValidationError as exc:
            raise PriceFileError(format_validation_error(f"{path}: [{name}]", exc, _USER_UNKNOWN_KEY),
                                 hint=_USER_HINT) from None
    if not by_device:
        raise PriceFileError(f"{path}: no [device-id] tables", hint=_USER_HINT)
    return UserPrices(path, by_device)


# --- one device's prices -----------------------------------------------------------------------------------

def _device_file_msrp(hw: Hardware) -> DevicePrice | None:
    """The device file's launch MSRP as a purchase price, with the source its citation names."""
    if hw.price_usd is None:
        return None
    cite = hw.citation("price_usd") or ""
    key = cite.split(":", 1)[0].strip()
    source = next((s for s in hw.sources if s.key == key), None)
    date = None
    if hw.price_date:
        try:
            date = _dt.date.fromisoformat(hw.price_date)
        except ValueError:
            date = None
    return DevicePrice(PriceKind.PURCHASE, hw.price_usd, PricePer.CARD, None, source, "shipped", date,
                       "stated" if date else None, basis="launch MSRP (device file)", note=hw.price_note)


def _shipped_entries(pf: PriceFile | None) -> list[DevicePrice]:
    if pf is None:
        return []
    sources = {s.key: s for s in pf.sources}
    return [DevicePrice(p.kind, p.usd, p.per, p.provider, sources[p.source], "shipped", p.date, p.date_kind,
                        p.basis, p.note) for p in pf.prices]


def _user_entries(user: UserPrices, device_id: str) -> list[DevicePrice]:
    up = user.by_device.get(device_id)
    if up is None:
        return []
    out = []
    if up.purchase_usd is not None:
        out.append(DevicePrice(PriceKind.PURCHASE, up.purchase_usd, PricePer.CARD, None, None, user.label,
                               None, None))
    if up.usd_per_hour is not None:
        out.append(DevicePrice(PriceKind.RENTAL, up.usd_per_hour, PricePer.GPU_HOUR, None, None, user.label,
                               None, None))
    return out


def device_prices(hw: Hardware, shipped: dict[str, PriceFile], user: UserPrices | None = None,
                  today: _dt.date | None = None) -> PriceReport:
    """The prices of ``hw``: the device file's MSRP and its price file's entries, where the user's own prices
    replace every shipped price of the same kind (purchase, rental) for this device."""
    pf = shipped.get(hw.id)
    entries = [e for e in (_device_file_msrp(hw),) if e is not None] + _shipped_entries(pf)
    mine = _user_entries(user, hw.id) if user else []
    overridden = {e.kind for e in mine}
    entries = mine + [e for e in entries if e.kind not in overridden]
    have = {e.kind for e in entries}
    why = {k: v for k, v in (pf.no_public_price if pf else {}).items() if k not in have}
    return PriceReport(hw.id, tuple(entries), why, today or _dt.date.today())


def load_prices(catalog: Catalog, user_path: Path | str | None = None) -> tuple[dict[str, PriceFile],
                                                                               UserPrices | None]:
    """The shipped price files of ``catalog`` and the user's prices (``user_path`` or TOPS_ADVISOR_PRICES)."""
    path = user_prices_path(user_path)
    user = load_user_prices(path, catalog) if path else None
    return shipped_prices(catalog), user
