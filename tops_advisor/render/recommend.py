"""Rich rendering of a recommendation: the table people read in five seconds, then the rejections.

Columns that hold one value on every row (the precision when one was asked for) move into the title, and a
calibrated prediction is marked on its device ('*', explained under the table), so the table fits 80 columns.
Ranked by cost, the table shows each device's replicas and what they cost, and two tables follow it: the price
each cost comes from (whose, and its date), and the devices that have no such price.
"""

from __future__ import annotations

from rich.table import Table

from ..formatting import MISSING, fmt_dollars, fmt_ratio, fmt_tops, format_seconds
from ..recommend import RecommendResult
from .console import NARROW_COLUMNS
from .tables import NAME_MIN_WIDTH, bullet, name_column, natural_width, new_table, number_column, word_column

CALIBRATED_MARK = "*"
BORROWED_MARK = "~"
ERROR_HEADER = "error"


def band_cell(band) -> str:
    """'9%', or '9%~' for a band measured on other cards (``borrowed_line`` says whose)."""
    if band is None:
        return "-"
    return f"{band.median_abs_error:.0%}" + (BORROWED_MARK if band.borrowed else "")


def borrowed_line(res: RecommendResult, shown: bool = True) -> str | None:
    """What '~' in the error column means: whose measurements each borrowed band is, with the devices that
    borrow it (an unmeasured card, one with no published point at all, is said so); None when none is shown."""
    pairs = [(whose, r.hardware + (" (unmeasured card)" if r.expected_error.unmeasured else ""))
             for r in res.recommendations if getattr(r, "expected_error", None) is not None
             and (whose := r.expected_error.borrowed_from) is not None]
    if not pairs or not shown:
        return None
    by_whose: dict[str, list[str]] = {}
    for whose, device in pairs:
        by_whose.setdefault(whose, []).append(device)
    return (f"{BORROWED_MARK} borrowed band, not the card's own published measurements: "
            + "; ".join(f"from {whose}: {', '.join(devices)}" for whose, devices in by_whose.items()))


def _device(r) -> str:
    mode = getattr(r, "power_mode", None)
    return r.hardware + (CALIBRATED_MARK if r.calibrated else "") + (f" @{mode}" if mode else "")


def power_mode_line(res: RecommendResult) -> str | None:
    """What '@15W' after a module means, when any row has it."""
    if not any(getattr(r, "power_mode", None) for r in res.recommendations):
        return None
    c = res.constraints
    how = ("the mode --power-mode asked for" if c.power_mode else
           f"its fastest mode within {c.max_power_w:g} W" if c.max_power_w else
           "the datasheet's mode; --max-power or --power-mode pick another")
    return f"@MODE: the power mode a module is predicted in ({how}); per W counts that mode's budget"


def _tops(r) -> str:
    return f"{fmt_tops(r.attainable_ops_per_s)} ({r.utilisation:.0%})"


def recommendations_table(res: RecommendResult, width: int = NARROW_COLUMNS) -> Table:
    """Best first: device, batch (and precision where they differ), latency per batch, samples/s, attained TOPS
    (share of the datasheet peak), the binding limit, the ranking's ratio (samples/s per watt of TDP, or per 1000
    USD when ranking by price) and the typical error of such predictions.

    Device ids stay whole (the column is as wide as the longest); when the table would then be wider than
    ``width`` columns, the error column is left out (``error_band_line`` says where to find it)."""
    table = _ranking_table(res, with_error=True)
    return table if natural_width(table) <= width else _ranking_table(res, with_error=False)


def has_error_column(table: Table) -> bool:
    """Whether a ranking table shows the typical-error column."""
    return any(c.header == ERROR_HEADER for c in table.columns)


def _ranking_table(res: RecommendResult, with_error: bool) -> Table:
    if res.rank_by == "cost":
        return _cost_table(res, with_error)
    recs = res.recommendations
    dtypes = sorted({r.dtype for r in recs})
    one_dtype = len(dtypes) == 1
    by_price = res.rank_by == "price"
    # the ranking note explains the ratio column when it is the ranking's; say what it is otherwise
    per = [] if res.rank_by in ("price", "efficiency") else ["per W = samples/s per watt of TDP"]
    t = new_table(f"Recommended, best first{f', {dtypes[0]}' if one_dtype else ''} "
                  f"({'; '.join([*res.notes, *per])})")
    name_column(t, "device", min_width=max((len(_device(r)) for r in recs), default=NAME_MIN_WIDTH))
    number_column(t, "batch" if one_dtype else "batch,\ndtype")
    number_column(t, "latency")
    number_column(t, "samples\nper s")
    number_column(t, "TOPS\n(% peak)")
    word_column(t, "bound")
    number_column(t, "per k$" if by_price else "per W")
    banded = with_error and any(r.expected_error for r in recs)
    if banded:
        number_column(t, ERROR_HEADER)
    for r in recs:
        ratio = (f"{r.throughput_per_kusd:,.0f}" if r.throughput_per_kusd else "-") if by_price else \
            fmt_ratio(r.throughput_per_watt)
        row = [_device(r), str(r.batch) if one_dtype else f"{r.batch}, {r.dtype}", format_seconds(r.latency_s),
               f"{r.throughput_per_s:,.0f}", _tops(r), r.bound, ratio]
        if banded:
            row.append(band_cell(r.expected_error))
        t.add_row(*row)
    return t


def _cost_table(res: RecommendResult, with_error: bool) -> Table:
    """Cheapest first: device, replicas, batch (and precision), latency per batch, samples/s of one device, USD per
    hour of all replicas and USD per million samples of the work asked for (the binding limit is in --json and the
    advice)."""
    recs = res.recommendations
    dtypes = sorted({r.dtype for r in recs})
    one_dtype = len(dtypes) == 1
    t = new_table(f"Recommended, cheapest first{f', {dtypes[0]}' if one_dtype else ''} ({'; '.join(res.notes)})")
    name_column(t, "device", min_width=max((len(_device(r)) for r in recs), default=NAME_MIN_WIDTH))
    number_column(t, "devices")
    number_column(t, "batch" if one_dtype else "batch,\ndtype")
    number_column(t, "latency")
    number_column(t, "samples/s\nper device")
    number_column(t, "USD\nper hour")
    number_column(t, "USD per M\nsamples")
    banded = with_error and any(r.expected_error for r in recs)
    if banded:
        number_column(t, ERROR_HEADER)
    for r in recs:
        row = [_device(r), str(r.replicas), str(r.batch) if one_dtype else f"{r.batch}, {r.dtype}",
               format_seconds(r.latency_s), f"{r.throughput_per_s:,.0f}", fmt_dollars(r.usd_per_hour),
               fmt_dollars(r.usd_per_million)]
        if banded:
            row.append(f"{r.expected_error.median_abs_error:.0%}" if r.expected_error else "-")
        t.add_row(*row)
    return t


def _price_text(r) -> str:
    return f"${r.unit_price_usd:,.4g}/GPU-h" if r.price_kind == "rental" else f"${r.unit_price_usd:,.0f}/card"


def prices_table(res: RecommendResult) -> Table:
    """The price behind each ranked device's cost: how much, whose (the provider, else the source; or the user's
    own file) and its date, marked when it is older than a year (--json: the source in full)."""
    t = new_table("Prices used")
    name_column(t, "device", min_width=max((len(r.hardware) for r in res.recommendations), default=NAME_MIN_WIDTH))
    number_column(t, "price")
    name_column(t, "from", min_width=24, ratio=1)
    number_column(t, "date")
    for r in res.recommendations:
        if r.usd_per_hour is None:
            continue
        date = r.price_date or MISSING
        t.add_row(r.hardware, _price_text(r), r.price_provider or r.price_source or MISSING,
                  f"{date}\n(older than a year)" if r.price_older_than_a_year else date)
    return t


def no_price_table(res: RecommendResult) -> Table:
    """Devices that meet the targets but have no price of the kind asked for, with why: not ranked."""
    t = new_table("No price (meet the targets, not ranked)")
    name_column(t, "why", min_width=30, ratio=1)
    name_column(t, "devices", min_width=20)
    for devices, reason in grouped((r.hardware, r.reason) for r in res.no_price):
        t.add_row(reason, ", ".join(devices))
    return t


def calibration_line(res: RecommendResult) -> str | None:
    """What the '*' on a device means, when any row has it."""
    if not any(r.calibrated for r in res.recommendations):
        return None
    return f"{CALIBRATED_MARK} calibrated on a measured card; the other rows use datasheet defaults"


def grouped(pairs) -> list[tuple[list[str], str]]:
    """(devices, text) for each distinct text of ``(device, text)`` pairs, in first-seen order: one line for a
    reason or a piece of advice that several devices share word for word."""
    groups: dict[str, list[str]] = {}
    for device, text in pairs:
        groups.setdefault(text, []).append(device)
    return [(devices, text) for text, devices in groups.items()]


def advice_lines(res: RecommendResult, n: int = 3) -> list[str]:
    """The first piece of advice for the best ``n`` devices; advice shared word for word is given once."""
    return [f"{', '.join(devices)}: {text}"
            for devices, text in grouped((r.hardware, r.advice[0]) for r in res.recommendations[:n] if r.advice)]


def error_band_line(res: RecommendResult, shown: bool = True) -> str | None:
    """What the 'typical error' column means, when any row has one (where it is, when the table left it out:
    ``shown`` False)."""
    if not any(getattr(r, "expected_error", None) for r in res.recommendations):
        return None
    if not shown:
        return ("error column left out at this width: a wider terminal or --json gives the typical error "
                "of each prediction")
    return ("error: the median |error| of earlier predictions of this kind on that card, its class, or "
            "all cards measured (calibrated: on the H200); --json gives the worst case and the source of each band")


def rejected_table(res: RecommendResult) -> Table:
    """Why each device was left out: one row per reason, naming every device it applies to."""
    t = new_table("Rejected")
    name_column(t, "why", min_width=30)
    name_column(t, "devices", min_width=20, ratio=1)
    for devices, reason in grouped((r.hardware, r.reason) for r in res.rejected):
        t.add_row(reason, ", ".join(devices))
    return t


def _precision(r) -> str:
    """An LLM row's precision: the weights, and the matrix products' where they differ ('int4/bf16')."""
    return r.weight_dtype + (f"/{r.act_dtype}" if r.act_dtype != r.weight_dtype else "")


def _devices(r, with_precision: bool) -> str:
    return (f"{r.devices} x " if r.devices > 1 else "") + _device(r) + (f", {_precision(r)}" if with_precision else "")


def _llm_title(res: RecommendResult, model: str, what: str) -> tuple[str, bool]:
    """The title (the notes, the precision when every row has the same, else the KV cache's when that is) and
    whether the rows name their precision."""
    recs = res.recommendations
    precisions = {(r.weight_dtype, r.act_dtype, r.kv_dtype) for r in recs}
    kv = {r.kv_dtype for r in recs}
    if len(precisions) == 1:
        w, a, k = next(iter(precisions))
        extra = [f"weights {w}" + (f", matrix products {a}" if a != w else "") + f", KV cache {k}"]
    else:
        extra = [f"weights/matrix products per row, KV cache {next(iter(kv))}"] if len(kv) == 1 else []
    order = "cheapest first" if res.rank_by == "cost" else "best first"
    return f"{model}: {what}, {order} ({'; '.join([*res.notes, *extra])})", len(precisions) > 1


def llm_recommendations_table(res: RecommendResult, model: str) -> Table:
    """Best first: devices (count x id), decode tokens/s per request, time to first token (a burst: every prompt of
    the batch prefilled at once), memory per device, the binding limit, tokens/s per kW of all devices' TDP (and
    per 1000 USD when ranking by price). Ranked by cost, the last column is USD per hour of the devices and per
    million generated tokens instead."""
    cost = res.rank_by == "cost"
    title, row_precision = _llm_title(res, model, "recommended")
    t = new_table(title)
    name_column(t, "devices", min_width=12)
    number_column(t, "tokens/s\nper req.")
    burst = max((r.burst_prompts for r in res.recommendations), default=1) > 1
    number_column(t, "burst\nTTFT" if burst else "TTFT")
    number_column(t, "GB per\ndevice")
    word_column(t, "bound")
    if cost:
        number_column(t, "USD\nper hour")
        number_column(t, "USD per M\ntokens")
    else:
        number_column(t, "tokens/s\nper kW")
    priced = res.rank_by == "price"
    if priced:
        number_column(t, "tokens/s\nper k$")
    for r in res.recommendations:
        row = [_devices(r, row_precision), f"{r.tokens_per_s:,.1f}",
               format_seconds(r.ttft_s), f"{r.memory_required_bytes / 1e9:,.1f}", r.bound]
        row += [fmt_dollars(r.usd_per_hour), fmt_dollars(r.usd_per_million)] if cost else \
            [f"{r.tokens_per_s_per_watt * 1e3:,.1f}"]
        if priced:
            row.append(f"{r.tokens_per_s / r.price_usd * 1e3:,.1f}" if r.price_usd else "-")
        t.add_row(*row)
    return t


# what stops one more request, in one short word: the per-user decode rate, the step token budget, ...
LIMIT_WORDS = {"decode rate": "rate", "token budget": "budget", "memory": "memory", "TTFT": "TTFT"}
LIMIT_HEADER = "limit"


def serving_table(res: RecommendResult, model: str, width: int = NARROW_COLUMNS) -> Table:
    """Serving plans, best first: one replica (count x id), requests it serves at once and what stops one more,
    tokens/s per request, TTFT (one new prompt, chunked beside the decodes), tokens/s per GPU, USD per million
    generated tokens (rented or bought, as asked), and with a request rate the replicas and the fleet's USD per
    hour. Where that is
    wider than ``width`` columns (device ids whole), the limit column is left out (``--json``: ``limited_by``)."""
    table = _serving_table(res, model, with_limit=True)
    return table if natural_width(table) <= width else _serving_table(res, model, with_limit=False)


def has_limit_column(table: Table) -> bool:
    return any(c.header == LIMIT_HEADER for c in table.columns)


def _serving_table(res: RecommendResult, model: str, with_limit: bool) -> Table:
    title, row_precision = _llm_title(res, model, "serving plans (continuous batching)")
    t = new_table(title)
    recs = res.recommendations
    name_column(t, "replica", min_width=12)
    number_column(t, "req.\nat once")
    if with_limit:
        word_column(t, LIMIT_HEADER)
    number_column(t, "tokens/s\nper req.")
    number_column(t, "TTFT")
    number_column(t, "tokens/s\nper GPU")
    priced = any(r.usd_per_million is not None for r in recs)
    fleet = any(r.requests_per_s_target is not None for r in recs)
    if priced:
        number_column(t, "$ per M\ntokens")
    if fleet:
        number_column(t, "repli-\ncas")
    hourly = priced and (fleet or res.rank_by == "cost")
    if hourly:
        number_column(t, "fleet\n$/hour" if fleet else "$ per\nhour")
    for r in recs:
        row = [_devices(r, row_precision), f"{r.concurrent_requests:,}"]
        if with_limit:
            row.append(LIMIT_WORDS.get(r.limited_by, r.limited_by))
        row += [f"{r.tokens_per_s_per_request:,.1f}", format_seconds(r.ttft_s), f"{r.tokens_per_s_per_gpu:,.0f}"]
        if priced:
            row.append(fmt_dollars(r.usd_per_million))
        if fleet:
            row.append(f"{r.replicas:,}")
        if hourly:
            row.append(fmt_dollars(r.usd_per_hour))
        t.add_row(*row)
    return t


def serving_lines(table: Table) -> list[str]:
    """What a serving table's TTFT and limit mean."""
    limit = ("limit: what stops one more request (rate: the per-request tokens/s, budget: the step's tokens, "
             "memory, TTFT)") if has_limit_column(table) else \
        "limit column left out at this width: a wider terminal or --json (limited_by) gives what stops one more"
    return ["TTFT: a prompt arriving alone, prefilled in chunks beside the running requests (arrivals in a burst "
            "wait for each other: without --serving, --batch N gives the burst TTFT of N prompts at once)", limit]


def render_recommendations(res: RecommendResult, out) -> None:
    """``recommend MODEL``'s output on the rich console ``out``."""
    table = recommendations_table(res, out.width)
    out.print(table)
    shown = has_error_column(table)
    for line in (calibration_line(res), power_mode_line(res), error_band_line(res, shown),
                 borrowed_line(res, shown)):
        if line:
            bullet(out, line, mark=" ", style="dim")
    for line in advice_lines(res):
        bullet(out, line)
    if res.rank_by == "cost":
        out.print(prices_table(res))
    if res.no_price:
        out.print(no_price_table(res))
    if res.rejected:
        out.print(rejected_table(res))


def render_llm_recommendations(res: RecommendResult, model: str, out) -> None:
    """``recommend --llm``'s output on the rich console ``out`` (serving plans, or the fewest devices)."""
    from ..recommend import LLMServingRecommendation

    serving = bool(res.recommendations) and isinstance(res.recommendations[0], LLMServingRecommendation)
    table = serving_table(res, model, out.width) if serving else llm_recommendations_table(res, model)
    out.print(table)
    lines = [calibration_line(res), power_mode_line(res)] + (serving_lines(table) if serving else [])
    if not serving and any(r.bound == "compute" for r in res.recommendations):
        lines.append("compute-bound decode at a small batch: the matrix products' tensor-core tiles run mostly "
                     "empty (one row per sequence), not the arithmetic saturated; 'tops-advisor llm MODEL -H DEVICE' "
                     "shows the split")
    for line in lines:
        if line:
            bullet(out, line, mark=" ", style="dim")
    if res.rank_by == "cost":
        out.print(prices_table(res))
    if res.no_price:
        out.print(no_price_table(res))
    if res.rejected:
        out.print(rejected_table(res))
