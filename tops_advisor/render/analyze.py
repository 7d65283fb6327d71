"""Rich rendering of one prediction for people."""

from __future__ import annotations

from collections import defaultdict

from rich.table import Table

from ..accuracy import ErrorBand
from ..costs import Cost, PriceKind
from ..formatting import fmt_bytes, fmt_dollars, fmt_memory, fmt_number, fmt_ops, fmt_tops, format_seconds
from ..kinds import Bound, Mode
from ..roofline import Prediction
from .tables import FittedTable, bullet, name_column, new_table, number_column, word_column

BOUND_ORDER = (Bound.COMPUTE, Bound.MEMORY, Bound.OVERHEAD)



def time_split(pred: Prediction) -> dict[str, float]:
    """The latency split so that it adds up: each operator's whole device time under the limit that binds it
    (compute, memory, or its per-kernel overhead), plus, in eager mode, the time the device waits for the host's
    launches. ``sum(time_split(pred).values()) == pred.latency_s``."""
    split = dict.fromkeys(BOUND_ORDER, 0.0)
    for o in pred.ops:
        split[o.bound] += o.latency_s
    split["host wait"] = max(pred.latency_s - pred.device_time_s, 0.0)
    return split


def time_line(pred: Prediction) -> str:
    """'927 us = 247 us compute-bound operators + 12 us memory-bound + 668 us overhead-bound' (and the host in
    eager mode, whose launching overlaps the device's work and so is not added in full)."""
    split = time_split(pred)
    parts = [f"{format_seconds(split[b])} {b}-bound" for b in BOUND_ORDER if split[b] > 0]
    text = f"{format_seconds(pred.latency_s)} = " + " + ".join(parts) + " operators"
    if pred.mode == Mode.EAGER:
        text += (f" + {format_seconds(split['host wait'])} waiting for launches (the host spends "
                 f"{format_seconds(pred.host_time_s)} launching, overlapped with the device's work)")
    return text


def cost_text(cost: Cost) -> str:
    """'$2.69/h, $0.0995 per M samples; RunPod (Community Cloud) $2.69/GPU-h, 2026-11-09' (rented), or what a bought
    card's hour is made of (the purchase paid off, the electricity its load draws) and the price it comes from."""
    p = cost.price
    if cost.kind == PriceKind.RENTAL:
        head, price = f"{fmt_dollars(cost.usd_per_hour)}/h", f"${p.usd:,.4g}/GPU-h"
    else:
        head = (f"{fmt_dollars(cost.usd_per_hour)}/h = {fmt_dollars(cost.amortisation_usd_per_hour)}/h paying off "
                f"the card + {fmt_dollars(cost.energy_usd_per_hour)}/h for {cost.power_w:,.0f} W of electricity")
        price = f"${p.usd:,.0f}/card"
    date = f", {cost.date}" + (" (older than a year)" if cost.older_than_a_year else "") if cost.date else ""
    return (f"{head}; {fmt_dollars(cost.usd_per_million)} per M {cost.unit}; price {price} from "
            f"{cost.provider or cost.source}{date}")


def summary_table(pred: Prediction, hw_name: str, costs: tuple[Cost, ...] = (), no_price: tuple[str, ...] = ()
                  ) -> Table:
    t = FittedTable(title=f"{pred.workload} on {hw_name}", show_header=False, title_justify="left", box=None,
                    padding=(0, 1, 0, 0))
    t.add_column(style="bold", no_wrap=True)
    t.add_column(overflow="fold")
    cal = f"calibrated ({pred.calibration_source})" if pred.calibrated else "datasheet defaults (no calibration)"
    rows = [
        ("settings", f"batch {pred.batch}, {pred.dtype}, {pred.mode} mode; {cal}"),
        ("latency", f"{format_seconds(pred.latency_s)} per batch, {pred.throughput_per_s:,.1f} samples/s"),
        ("time", time_line(pred)),
        ("bound", f"{pred.bound} (the largest share of the time above)"),
        ("attainable", f"{fmt_tops(pred.attainable_ops_per_s)} TOPS = {pred.utilisation:.1%} of "
                       f"{fmt_number(pred.peak_ops_per_s / 1e12)} TOPS dense {pred.precision} (datasheet)"),
        ("work", f"{fmt_ops(pred.flops)} operations, {fmt_bytes(pred.bytes)} moved, {pred.kernels:,} kernels"),
        ("memory", f"{fmt_memory(pred.memory_required_bytes)} needed of {fmt_bytes(pred.memory_capacity_bytes)}: "
                   + ("fits" if pred.fits_memory else "does not fit")),
    ]
    rows += [("rented" if c.kind == PriceKind.RENTAL else "bought", cost_text(c)) for c in costs]
    rows += [("cost", why) for why in no_price]
    for k, v in rows:
        t.add_row(k, v)
    return t


def top_ops_table(pred: Prediction, n: int = 10) -> Table:
    t = new_table(f"Top {n} operators by predicted time")
    top = pred.top_ops(n)
    name_column(t, "operator", priority=True)   # the operator's name whole before its module path
    name_column(t, "module")
    word_column(t, "kind")
    number_column(t, "time")
    number_column(t, "share")
    number_column(t, "TOPS")
    word_column(t, "bound")
    for o in top:
        t.add_row(o.name.removeprefix("aten."), o.module or "-", o.kind, format_seconds(o.latency_s),
                  f"{o.latency_s / pred.device_time_s:.1%}" if pred.device_time_s else "-",
                  fmt_tops(o.attainable_ops_per_s), o.bound)
    return t


def by_kind_table(pred: Prediction) -> Table:
    agg: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0])
    for o in pred.ops:
        a = agg[o.kind]
        a[0] += o.latency_s
        a[1] += o.flops
        a[2] += o.bytes
        a[3] += o.kernels
    t = new_table("Device time by operator kind")
    word_column(t, "kind")
    for col in ("time", "share", "operations", "bytes", "kernels"):
        number_column(t, col)
    for kind, (lat, fl, by, kern) in sorted(agg.items(), key=lambda kv: -kv[1][0]):
        t.add_row(kind, format_seconds(lat), f"{lat / pred.device_time_s:.1%}" if pred.device_time_s else "-",
                  fmt_ops(fl), fmt_bytes(by), f"{int(kern):,}")
    return t


def relevant_assumptions(pred: Prediction) -> list[str]:
    """The prediction's assumptions, less those about precisions none of its operators ran at (a calibration's
    'not measured, scaled ...: fp64, tf32' matters only to an fp64 or tf32 prediction)."""
    used = {o.precision for o in pred.ops}
    out = []
    for note in pred.assumptions:
        head, sep, listed = note.rpartition(": ")
        if note.startswith("not measured") and sep:
            kept = [p for p in listed.split(", ") if p in used]
            if not kept:
                continue
            note = f"{head}: {', '.join(kept)}"
        out.append(note)
    return out


def render_analysis(pred: Prediction, hw_name: str, advice: list[str], band: ErrorBand | None, top: int, out,
                    workload=None, costs: tuple[Cost, ...] = (), no_price: tuple[str, ...] = ()) -> None:
    """``analyze``'s output on the rich console ``out``: summary (with what the operating point costs, rented and
    bought, where the device has such prices), error band, time by kind, top operators, advice, the assumptions
    that bear on this prediction, and the counted ``workload``'s notes and assumed values."""
    out.print(summary_table(pred, hw_name, costs, no_price))
    if band:
        bullet(out, band.text, mark=" ", style="dim")
    out.print()
    out.print(by_kind_table(pred))
    out.print()
    out.print(top_ops_table(pred, top))
    out.print()
    out.print("[bold]Advice[/bold]")
    for line in advice:
        bullet(out, line)
    for note in relevant_assumptions(pred):
        bullet(out, f"assumes: {note}", mark=" ", style="dim")
    if workload is not None:
        for line in [*(n.text for n in workload.notes), *(f"assumed: {a} (--strict refuses)" for a in workload.assumptions)]:
            bullet(out, line, mark=" ", style="dim")
