"""Rich rendering of a ``ValidationReport``: measured beside predicted, per batch and mode, and kernel time per
operator kind; and of a ``TrainValidationReport``: one training step, part by part, and its peak memory."""

from __future__ import annotations

from rich.table import Table

from ..formatting import MISSING, fmt_gb, fmt_signed_percent, format_seconds, format_seconds_or_missing
from ..train.workload import NOT_MODELLED
from ..validate.run import ValidationReport
from ..validate.train_compare import PEAK_MEMORY, TrainValidationReport
from .tables import bullet, new_table, number_column, word_column


def _spread(spread_s: tuple[float, float] | None) -> str:
    """'1.21-1.45 ms': min and max of the timed runs in one unit (that of the larger)."""
    if not spread_s:
        return "-"
    lo, hi = spread_s
    text = format_seconds(hi)
    value, unit = text.split(" ")
    scale = {"s": 1.0, "ms": 1e-3, "us": 1e-6}[unit]
    return f"{lo / scale:.3g}-{value} {unit}"


def _predicted(seconds: float | None, error: float | None) -> str:
    """'1.23 ms +25%' (the prediction and its error against the measurement), or '-'."""
    return "-" if not seconds else f"{format_seconds(seconds)} {fmt_signed_percent(error)}"


def latency_table(report: ValidationReport) -> Table:
    """One row per (batch, mode): measured median and spread, predicted from datasheet defaults and with the
    calibration, each with its error, and the predicted bound. Batches that failed are listed under it."""
    layout = ", channels-last" if report.channels_last else ""
    t = new_table(f"measured on this machine vs predicted for {report.hardware_name}{layout}")
    number_column(t, "batch")
    word_column(t, "mode")
    number_column(t, "measured")
    number_column(t, "min-max")
    number_column(t, "predicted,\ndefaults")
    number_column(t, "predicted,\ncalibrated")
    word_column(t, "bound")
    for r in report.rows:
        t.add_row(str(r.batch), r.mode, format_seconds(r.measured_s), _spread(r.spread_s),
                  _predicted(r.default_s, r.err_default), _predicted(r.calibrated_s, r.err_calibrated), r.bound)
    return t


def kinds_table(batch: int, kinds) -> Table:
    """Kernel time per operator kind at one batch (``compare.KindRow``s)."""
    k = new_table(f"batch {batch}: kernel time per operator kind, measured (one eager forward, torch.profiler) "
                  "vs predicted device time (graph mode)")
    word_column(k, "kind")
    for col in ("measured", "share", "predicted", "share", "error"):
        number_column(k, col)
    word_column(k, "bound")
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
    for m in report.runs:
        if m.error:
            bullet(out, f"batch {m.batch} did not run: {m.error}", mark="!")
    bullet(out, f"error = (predicted - measured) / measured; {cal}", mark=" ", style="dim")
    for band in report.expected_error.values():
        bullet(out, band.text, mark=" ", style="dim")
    for at in report.per_op:
        out.print(kinds_table(at.batch, at.kinds))
    if report.note:
        bullet(out, report.note, mark="note:", indent=0)



# --- a training step ------------------------------------------------------------------------------------
def _amount(row, value: float | None) -> str:
    """Seconds, or bytes on the peak memory's row; '-' when not measured."""
    if value is None:
        return MISSING
    return fmt_gb(value) if row.part == PEAK_MEMORY else format_seconds(value)


def train_table(report: TrainValidationReport) -> Table:
    """The step, its parts and the peak memory: measured, predicted with its error, what binds the part."""
    t = new_table(f"one training step at batch {report.batch}, measured on this machine vs predicted for "
                  f"{report.hardware_name}")
    word_column(t, "part")
    number_column(t, "measured")
    number_column(t, "predicted")
    number_column(t, "error")
    word_column(t, "bound")
    for r in report.rows:
        t.add_row(r.part, _amount(r, r.measured), _amount(r, r.predicted), fmt_signed_percent(r.error), r.bound)
    return t


def _train_notes(report: TrainValidationReport) -> list[str]:
    m, p = report.measured, report.prediction
    notes = [f"{report.setup}; loss: {report.loss}"]
    if m.step_spread_s:
        notes.append(f"{m.repeats} timed steps back to back, min-max {_spread(m.step_spread_s)}; the first step "
                     f"took {format_seconds(m.first_step_s)}")
    if m.skipped_steps:
        notes.append(f"GradScaler lowered its scale {m.loss_scale[0]:g} -> {m.loss_scale[1]:g} while timing: some "
                     "timed steps skipped the optimizer (their optimizer part is near empty)")
    if m.steady_peak_bytes is not None:
        notes.append("peak memory: torch.cuda.max_memory_allocated over the steps after the first, beside the "
                     "counted step's live tensors (not modelled: " + "; ".join(NOT_MODELLED) + ")")
    fits = "fits" if p.fits_memory else "does not fit"
    notes.append(f"predicted: {fmt_gb(p.memory_required_bytes)} with the runtime reserve, {fits} in "
                 f"{fmt_gb(p.memory_capacity_bytes)}; MFU {p.mfu:.1%}")
    source = report.calibration_source
    notes.append("error = (predicted - measured) / measured; predicted "
                 + (f"with the calibration ({source})" if source else "from datasheet defaults (no calibration)"))
    return notes


def render_train_validation(report: TrainValidationReport, out) -> None:
    """The table and its notes on the rich console ``out``."""
    out.print(train_table(report))
    if report.measured.error:
        bullet(out, f"the step did not run on {report.device}: {report.measured.error}", mark="!")
    for note in _train_notes(report):
        bullet(out, note, mark=" ", style="dim")
    if report.note:
        bullet(out, report.note, mark="note:", indent=0)
