"""The one ranker both recommenders use: filter the catalog by the constraints, evaluate each device left
(a record, or a ``Rejection`` saying why not), set aside the records a priced ranking cannot rank (no price) or
the budget rules out, sort by the ``rank_by`` score and keep the best ``top``."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

from ..catalog import Hardware
from ..errors import NothingFeasibleError
from .constraints import (
    NOT_ASKED,
    Constraints,
    at_power_limit,
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
