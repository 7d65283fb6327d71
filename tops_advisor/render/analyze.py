"""Rich rendering of one prediction for people."""

from __future__ import annotations

from collections import defaultdict

from rich.table import Table

from ..formatting import format_seconds
from ..roofline import Prediction


def summary_table(pred: Prediction, hw_name: str) -> Table:
    t = Table(title=f"{pred.workload} on {hw_name}", show_header=False, title_justify="left")
    t.add_column(style="bold")
    t.add_column()
    cal = f"calibrated ({pred.calibration_source})" if pred.calibrated else "datasheet defaults (no calibration)"
    rows = [
        ("settings", f"batch {pred.batch}, {pred.dtype}, {pred.mode} mode; {cal}"),
        ("latency", format_seconds(pred.latency_s)),
        ("throughput", f"{pred.throughput_per_s:,.1f} samples/s"),
        ("attainable", f"{pred.attainable_ops_per_s / 1e12:.2f} TOPS = {pred.utilisation:.1%} of "
                       f"{pred.peak_ops_per_s / 1e12:g} TOPS dense {pred.precision} (datasheet)"),
        ("bound", f"{pred.bound}  (" + ", ".join(f"{k} {format_seconds(v)}"
                                                   for k, v in pred.time_by_bound_s.items()) + ")"),
        ("work", f"{pred.flops / 1e9:,.2f} G operations, {pred.bytes / 1e6:,.1f} MB moved, "
                 f"{pred.kernels} kernels"),
        ("memory", f"{pred.memory_required_bytes / 1e9:.2f} GB needed of {pred.memory_capacity_bytes / 1e9:.0f} GB: "
                   + ("fits" if pred.fits_memory else "DOES NOT FIT")),
    ]
    if pred.mode == "eager":
        rows.append(("host", f"{format_seconds(pred.host_time_s)} launching; device busy "
                             f"{format_seconds(pred.device_time_s)}"))
    for k, v in rows:
        t.add_row(k, v)
    return t


def top_ops_table(pred: Prediction, n: int = 10) -> Table:
    t = Table(title=f"Top {n} operators by predicted time", title_justify="left")
    for col in ("operator", "module", "kind", "time", "share", "TOPS", "bound"):
        t.add_column(col, justify="right" if col in ("time", "share", "TOPS") else "left")
    for o in pred.top_ops(n):
        t.add_row(o.name, o.module or "-", o.kind, format_seconds(o.latency_s),
                  f"{o.latency_s / pred.device_time_s:.1%}" if pred.device_time_s else "-",
                  f"{o.attainable_ops_per_s / 1e12:.2f}", o.bound)
    return t


def by_kind_table(pred: Prediction) -> Table:
    agg: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0])
    for o in pred.ops:
        a = agg[o.kind]
        a[0] += o.latency_s
        a[1] += o.flops
        a[2] += o.bytes
        a[3] += o.kernels
    t = Table(title="Time by operator kind", title_justify="left")
    for col in ("kind", "time", "share", "G ops", "MB", "kernels"):
        t.add_column(col, justify="left" if col == "kind" else "right")
    for kind, (lat, fl, by, kern) in sorted(agg.items(), key=lambda kv: -kv[1][0]):
        t.add_row(kind, format_seconds(lat), f"{lat / pred.device_time_s:.1%}" if pred.device_time_s else "-",
                  f"{fl / 1e9:,.2f}", f"{by / 1e6:,.1f}", str(int(kern)))
    return t


def render_analysis(pred: Prediction, hw_name: str, advice: list[str], band: dict | None, top: int, out) -> None:
    """``analyze``'s output on the rich console ``out``: summary, error band, time by kind, top operators,
    advice and assumptions."""
    out.print(summary_table(pred, hw_name))
    if band:
        out.print(f"  {band['text']}")
    out.print(by_kind_table(pred))
    out.print(top_ops_table(pred, top))
    out.print("[bold]Advice[/bold]")
    for line in advice:
        out.print(f"  - {line}")
    for note in pred.assumptions:
        out.print(f"  [dim]assumes: {note}[/dim]")
