"""What a user asks of a device: targets (latency, throughput), filters (segment, power, price, devices, budget)
and how to rank (``Constraints``), and the filters applied to one device (``prefilter``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..catalog import Hardware
from ..errors import InputError
from ..units import format_seconds

RANK_BY = ("efficiency", "latency", "throughput", "price", "cost")
PRICE_KINDS = ("rental", "purchase")    # catalog.prices.PriceKind's values: --rent, --buy
PRICED_RANKINGS = ("price", "cost")     # rankings a device without a price cannot take part in
SEGMENTS = ("edge", "workstation", "datacenter")
AUTO_DTYPES = ("fp32", "fp16", "bf16", "fp8", "int8")
NOT_ASKED = "not in --hardware"  # a device the user left out: dropped, not listed as rejected


@dataclass(frozen=True)
class Constraints:
    latency_s: float | None = None          # per batch
    throughput_per_s: float | None = None   # samples/s
    batch: int | None = None                # fixed batch; None = search
    dtypes: tuple[str, ...] = ("fp16",)
    segment: str | None = None
    max_power_w: float | None = None
    max_price_usd: float | None = None
    hardware: tuple[str, ...] = ()          # limit to these ids (already resolved)
    mode: str = "graph"
    rank_by: str = "efficiency"
    max_batch: int = 1024
    top: int | None = None
    price_kind: str = "rental"              # which price costs use: rental (--rent) or purchase (--buy)
    budget_usd: float | None = None         # most USD per hour (rental) or up front (purchase) for the whole fleet

    @property
    def fleet_target_per_s(self) -> float | None:
        """The throughput the whole fleet must reach: ranking by cost, the throughput target is a total that
        each device meets with as many replicas as it needs; otherwise one device must reach it alone."""
        return self.throughput_per_s if self.rank_by == "cost" else None

    def __post_init__(self):
        if self.rank_by not in RANK_BY:
            raise InputError(f"unknown --rank-by {self.rank_by!r}; expected one of {', '.join(RANK_BY)}")
        if self.segment is not None and self.segment not in SEGMENTS:
            from ..suggest import did_you_mean

            raise InputError(f"unknown segment {self.segment!r}; expected one of {', '.join(SEGMENTS)}",
                             hint=did_you_mean(self.segment, SEGMENTS))
        if self.batch is not None and self.batch <= 0:
            raise InputError(f"--batch must be a positive integer, got {self.batch}")
        if self.price_kind not in PRICE_KINDS:
            raise InputError(f"unknown price kind {self.price_kind!r}; expected rental (--rent) or purchase (--buy)")
        for name in ("latency_s", "throughput_per_s", "max_power_w", "max_price_usd", "budget_usd"):
            v = getattr(self, name)
            if v is not None and v <= 0:
                option = "--budget" if name == "budget_usd" else name
                raise InputError(f"{option} must be greater than zero, got {v}",
                                 hint="USD per hour rented (--rent) or up front bought (--buy)"
                                 if name == "budget_usd" else None)
        if self.top is not None and self.top < 1:
            raise InputError(f"--top must be at least 1, got {self.top}", hint="leave --top out to show every device")


def device_file_price(hw: Hardware) -> float | None:
    """A device file's own ``price_usd`` (no shipped device file has one: prices live in price files)."""
    return hw.price_usd


def prefilter(hw: Hardware, c: Constraints,
              purchase_usd: Callable[[Hardware], float | None] = device_file_price) -> str | None:
    """Why ``hw`` is ruled out before predicting anything (segment, power, price, --hardware), or None.
    ``purchase_usd``: a card's purchase price (``costs.Pricing``'s), for --max-price."""
    if c.hardware and hw.id not in c.hardware:
        return NOT_ASKED
    if c.segment and hw.segment != c.segment:
        return f"segment {hw.segment}, not {c.segment}"
    if c.max_power_w and hw.tdp_w > c.max_power_w:
        lowest = min(hw.power_modes_w) if hw.power_modes_w else None
        if lowest is None or lowest > c.max_power_w:
            return f"TDP {hw.tdp_w:g} W > {c.max_power_w:g} W"
    if c.max_price_usd:
        price = purchase_usd(hw)
        if price is None:
            return "no known purchase price"
        if price > c.max_price_usd:
            return f"price ${price:,.0f} > ${c.max_price_usd:,.0f}"
    return None


def budget_text(c: Constraints) -> str:
    """'$20/h rented' or '$100,000 up front': the budget as --budget means it for the price kind."""
    return (f"${c.budget_usd:,.2f}/h rented" if c.price_kind == "rental" else f"${c.budget_usd:,.0f} up front")


def filters_text(c: Constraints) -> str:
    """The constraints in force, one clause each, in a fixed order; the dtypes always."""
    clauses = (  # (the constraint's value, or None when unset; how it reads)
        (c.latency_s and format_seconds(c.latency_s), "latency <= {}"),
        (c.throughput_per_s, "throughput >= {:g}/s" + (" in total" if c.fleet_target_per_s else "")),
        (c.segment, "segment {}"),
        (c.max_power_w, "power <= {:g} W"),
        (c.max_price_usd, "price <= ${:,.0f}"),
        (c.hardware and ", ".join(c.hardware), "hardware {}"),
        (c.budget_usd and budget_text(c), "budget {}"),
    )
    parts = [text.format(value) for value, text in clauses if value]
    parts.append(f"dtype {'/'.join(c.dtypes)}")
    return ", ".join(parts)
