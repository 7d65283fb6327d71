"""The one ranker both recommenders use: filter the catalog by the constraints, evaluate each device left
(a record, or a ``Rejection`` saying why not), set aside the records a priced ranking cannot rank (no price) or
the budget rules out, sort by the ``rank_by`` score and keep the best ``top``. The money screens and messages
(``unpriced_screen``, ``budget_screen``, ``money_error``, ``cost_note``) read the ``CostFields`` every record has,
so models and LLMs share them."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

from ..catalog import Hardware
from ..costs import PriceKind, Pricing
from ..errors import InputError, NothingFeasibleError
from .constraints import (
    NOT_ASKED,
    PRICED_RANKINGS,
    Constraints,
    at_power_limit,
    budget_text,
    check_power_mode,
    device_file_price,
    filters_text,
    prefilter,
)
from .results import Rejection

R = TypeVar("R")
Scores = dict[str, Callable[[R], float]]  # rank_by -> score of a record (larger is better)
Screen = Callable[[R], Rejection | None]   # a record set aside (with why), or None to rank it


def candidates(devices: Iterable[Hardware], c: Constraints,
               purchase_usd: Callable[[Hardware], float | None] = device_file_price
               ) -> tuple[list[Hardware], list[Rejection]]:
    """Devices that pass the filters (a module in the power mode the constraints give it), and the others with
    why (devices outside --hardware are dropped)."""
    devices = list(devices)
    check_power_mode(devices, c)
    kept, rejected = [], []
    for hw in devices:
        why = prefilter(hw, c, purchase_usd)
        if why is None:
            kept.append(at_power_limit(hw, c))
        elif why != NOT_ASKED:
            rejected.append(Rejection(hardware=hw.id, reason=why))
    if not kept:
        raise NothingFeasibleError("no device left after filtering: " + filters_text(c),
                                   hint="relax --segment, --max-power, --max-price or --hardware")
    return kept, rejected


def rank(devices: list[Hardware], rejected: list[Rejection], c: Constraints,
         evaluate: Callable[[Hardware], R | Rejection], scores: Scores,
         nothing: Callable[[list[Rejection]], NothingFeasibleError], *, unpriced: Screen | None = None,
         no_price: list[Rejection] | None = None, refuse: Screen | None = None) -> tuple[list[R], list[Rejection]]:
    """Evaluate every device (``candidates``' first list), best first by ``scores[c.rank_by]``, the first
    ``c.top``; the rejections follow ``rejected`` (the filters'). ``unpriced(record)``, where given, moves a record
    into ``no_price`` (a ranking by price or cost cannot rank it), and ``refuse(record)`` into the rejections (over
    the budget). Nothing left raises ``nothing(rejected)``."""
    recs: list[R] = []
    for hw in devices:
        out = evaluate(hw)
        if isinstance(out, Rejection):
            rejected.append(out)
        elif unpriced is not None and no_price is not None and (why := unpriced(out)) is not None:
            no_price.append(why)
        elif refuse is not None and (why := refuse(out)) is not None:
            rejected.append(why)
        else:
            recs.append(out)
    recs.sort(key=scores[c.rank_by], reverse=True)
    if c.top:
        recs = recs[: c.top]
    if not recs:
        raise nothing(rejected)
    return recs, rejected


def require_pricing(c: Constraints, pricing: Pricing | None) -> None:
    """Ranking by price or cost, or a budget, needs prices: refuse without them (a library caller's slip)."""
    if pricing is None and (c.rank_by in PRICED_RANKINGS or c.budget_usd):
        what = f"ranking by {c.rank_by}" if c.rank_by in PRICED_RANKINGS else "a budget"
        raise InputError(f"{what} needs prices", hint="pass pricing=tops_advisor.costs.load_pricing(catalog)")


def unpriced_screen(c: Constraints, pricing: Pricing | None, by_id: dict[str, Hardware]) -> Screen | None:
    """Under price or cost ranking, or a budget: a record without that price, set aside with why (None: no
    screen). Price needs a purchase price (``price_usd``), cost and a budget a cost (``usd_per_hour``)."""
    if c.rank_by not in PRICED_RANKINGS and not c.budget_usd:
        return None

    def screen(r) -> Rejection | None:
        if c.rank_by == "price" and r.price_usd is None:
            why = pricing.missing(by_id[r.hardware], PriceKind.PURCHASE) if pricing else "no purchase price"
            return Rejection(hardware=r.hardware, reason=why)
        if c.rank_by != "price" and r.usd_per_hour is None:
            return Rejection(hardware=r.hardware, reason=r.no_price_reason or "no price")
        return None

    return screen


def budget_screen(c: Constraints, devices_of: Callable[[R], int] = lambda r: r.replicas) -> Screen | None:
    """With --budget: a record whose fleet (``devices_of(record)`` cards) costs more per hour rented, or up front
    bought, than the budget, rejected with the sum."""
    if not c.budget_usd:
        return None

    def refuse(r) -> Rejection | None:
        spend = r.usd_per_hour if c.price_kind == "rental" else r.up_front_usd
        if spend is None or spend <= c.budget_usd:   # None: no price (the unpriced screen's)
            return None
        n = devices_of(r)
        text = (f"{n} x ${r.unit_price_usd:,.2f}/h = ${spend:,.2f}/h" if c.price_kind == "rental" else
                f"{n} x ${r.unit_price_usd:,.0f} = ${spend:,.0f} up front")
        return Rejection(hardware=r.hardware, reason=f"{text} > budget {budget_text(c)}", closeness=c.budget_usd / spend)

    return refuse


def money_error(c: Constraints, rejected: list[Rejection], no_price: list[Rejection]) -> NothingFeasibleError | None:
    """Why nothing is left when money is the reason: every device over the budget, or none with the price asked
    for; None when it is not."""
    over = [r for r in rejected if c.budget_usd and r.reason.endswith(f"> budget {budget_text(c)}")]
    if over:
        cheapest = max(over, key=lambda r: r.closeness)
        return NothingFeasibleError(
            f"--budget {budget_text(c)} is below every device that meets the targets; the cheapest, "
            f"{cheapest.hardware}, costs {cheapest.reason.split(' > budget')[0]}",
            hint="raise --budget, relax the targets, or price the other way (--rent / --buy)")
    if no_price:
        kind = "purchase" if c.rank_by == "price" else c.price_kind
        asked = f"--rank-by {c.rank_by}" if c.rank_by in PRICED_RANKINGS else "--budget"
        return NothingFeasibleError(
            f"{asked}: no device that meets the targets has a {kind} price "
            f"({', '.join(r.hardware for r in no_price)}); {no_price[0].hardware}: {no_price[0].reason}",
            hint=("--buy to price the cards bought" if kind == "rental" else "--rent to price them rented")
            + ", or give your own prices with --prices FILE")
    return None


def cost_note(c: Constraints, pricing: Pricing, unit: str) -> str:
    """How a ranking by cost reads: 'ranked by cost (USD per million samples, rented: ...)'."""
    if c.price_kind == "rental":
        return f"ranked by cost (USD per million {unit}, rented: each device's cheapest current rental price)"
    s = pricing.settings
    return (f"ranked by cost (USD per million {unit}, bought: purchase over {s.life_years:g} years of use, plus "
            f"electricity at ${s.electricity_usd_per_kwh:g}/kWh and PUE {s.pue:g})")
