"""Rich rendering of a ``ValidationReport``: measured beside predicted, per batch and mode, and kernel time per
operator kind."""

from __future__ import annotations

from rich.table import Table

from ..formatting import fmt_signed_percent, format_seconds, format_seconds_or_missing
from ..validate.run import ValidationReport


def latency_table(report: ValidationReport) -> Table:
    """One row per (batch, mode), then the batches that failed."""
    t = Table(title=f"measured on this machine vs predicted for {report.hardware_name}", title_justify="left")
    for col in ("batch", "mode", "measured", "spread (min-max)", "predicted (defaults)", "error",
                "predicted (calibrated)", "error", "bound"):
        t.add_column(col, justify="left" if col in ("mode", "bound") else "right")
    for r in report.rows:
        spread = f"{format_seconds(r.spread_s[0])} - {format_seconds(r.spread_s[1])}" if r.spread_s else "-"
        t.add_row(str(r.batch), r.mode, format_seconds(r.measured_s), spread, format_seconds(r.default_s),
                  fmt_signed_percent(r.err_default), format_seconds_or_missing(r.calibrated_s),
                  fmt_signed_percent(r.err_calibrated), r.bound)
    for m in report.runs:
        if m.error:
            t.add_row(str(m.batch), "", m.error, "", "", "", "", "", "")
    return t


def kinds_table(batch: int, kinds) -> Table:
    """Kernel time per operator kind at one batch (``compare.KindRow``s)."""
    k = Table(title=f"batch {batch}: kernel time per operator kind (one eager forward, torch.profiler) vs "
                    "predicted device time (graph mode)", title_justify="left")
    for col in ("kind", "measured", "share", "predicted", "share", "error", "predicted bound"):
        k.add_column(col, justify="left" if col in ("kind", "predicted bound") else "right")
    for r in kinds:
        k.add_row(r.kind, format_seconds_or_missing(r.measured_s), f"{r.measured_share:.0%}",
                  format_seconds_or_missing(r.predicted_s), f"{r.predicted_share:.0%}",
                  fmt_signed_percent(r.error), r.bound)
    return k


def render_validation(report: ValidationReport, out) -> None:
    """The tables and notes on the rich console ``out``."""
    source = report.calibration_source
    cal = f"calibrated ({source})" if source else "calibrated: no calibration for this device"
    out.print(latency_table(report))
    out.print(f"  [dim]error = (predicted - measured) / measured; {cal}[/dim]")
    for band in report.expected_error.values():
        out.print(f"  [dim]{band['text']}[/dim]")
    for at in report.per_op:
        out.print(kinds_table(at.batch, at.kinds))
    if report.note:
        out.print(f"[bold yellow]note:[/bold yellow] {report.note}")
