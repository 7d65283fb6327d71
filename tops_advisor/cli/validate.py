"""`tops-advisor validate`: run a model on the local GPU and put the measurement beside the prediction."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..units import format_seconds, parse_batches, parse_precision
from .common import catalog_option, console, echo_json, err_console, get_catalog, json_option

MEASURABLE_DTYPES = ("fp32", "fp16", "bf16")
CPU_NOTE = ("CPU measurement beside a {hw} prediction: this tests the plumbing (loading, timing, profiling, "
            "alignment), it says nothing about the predictor's accuracy")


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:+.0%}"


@click.command()
@click.argument("model", type=click.Path(path_type=Path))
@click.option("--batch", "-b", "batch_text", default="1,8,32", show_default=True,
              help="Comma-separated batch sizes to measure.")
@click.option("--dtype", default="fp16", show_default=True, help="fp16, bf16 or fp32.")
@click.option("--mode", type=click.Choice(["graph", "eager", "both"]), default="both", show_default=True,
              help="eager: plain PyTorch forward; graph: the forward captured once and replayed as a CUDA graph.")
@click.option("--calibration", "calibration_path", type=click.Path(path_type=Path),
              help="Calibration file from `tops-advisor probe` (default: saved or shipped one for the device).")
@click.option("--per-op", is_flag=True,
              help="Profile one forward per batch and line up kernel time per operator kind with the prediction.")
@click.option("--plot", "plot_path", type=click.Path(path_type=Path),
              help="Write a parity plot, predicted vs measured (.png/.svg/.pdf).")
@click.option("--device", type=click.Choice(["cuda", "cpu"]), default="cuda", show_default=True,
              help="cpu: the same pipeline on the CPU, to test the plumbing (needs --hardware).")
@click.option("--hardware", "-H", "hardware_name",
              help="Catalog device to predict for (default: the local GPU, matched by name).")
@click.option("--repeats", type=click.IntRange(1), default=30, show_default=True, help="Timed iterations.")
@click.option("--warmup", type=click.IntRange(0), default=10, show_default=True, help="Untimed iterations first.")
@catalog_option
@json_option
def validate(model, batch_text, dtype, mode, calibration_path, per_op, plot_path, device, hardware_name, repeats,
             warmup, catalog_dirs, as_json):
    """Measure MODEL (a .py file) on this machine's GPU and compare with the prediction for that GPU."""
    from ..accuracy import expected_error, model_family
    from ..api import ModelCosts, calibration_for
    from ..errors import InputError, UnknownHardwareError, UnsupportedPrecisionError

    batches = parse_batches(batch_text)
    dtype = parse_precision(dtype, MEASURABLE_DTYPES)
    if plot_path is not None:
        from ..render.plot import check_plot_path

        check_plot_path(plot_path)
    if device == "cpu" and mode == "graph":
        raise InputError("graph mode replays CUDA graphs, which the CPU does not have; use --mode eager or both")
    if device == "cpu" and not hardware_name:
        raise InputError("--device cpu needs --hardware ID: the catalog device whose prediction to put beside "
                         "the CPU measurement (a plumbing test, not accuracy)")

    from ..counting import load_model_file
    from ..validate import measure as M
    from ..validate.compare import compare_by_kind, compare_latency

    M.check_device(device)
    catalog = get_catalog(catalog_dirs)
    if hardware_name:
        hw = catalog.get(hardware_name)
    else:
        from ..probe.runner import match_catalog

        name = M.device_name(device)
        hw_id = match_catalog(name, catalog)
        if hw_id is None:
            raise UnknownHardwareError(f"this GPU ({name}) is not in the catalog, so there is nothing to "
                                       "predict it with", hint="pass --hardware ID for the closest device "
                                       "(tops-advisor hardware list), or add a device file with --catalog")
        hw = catalog.get(hw_id)
    if dtype not in hw.dense_tops:
        raise UnsupportedPrecisionError(f"{hw.id} has no {dtype} peak; it has {', '.join(hw.dense_tops)}")
    cal, source = calibration_for(hw, calibration_path)
    from ..roofline import device_perf, predict

    perf_default = device_perf(hw)
    perf_cal = device_perf(hw, cal, source) if cal else None

    model_file = load_model_file(model)
    costs = ModelCosts(model, base_dtype=dtype)
    modes = ("graph", "eager") if mode == "both" else (mode,)
    if device == "cpu":
        modes = tuple(m for m in modes if m != "graph")
    say = err_console()

    def progress(m):
        if m.error:
            say.print(f"[yellow]batch {m.batch}: {m.error}; going on with the others[/yellow]")
        else:
            say.print(f"batch {m.batch}: " + ", ".join(f"{md} {format_seconds(m.latency_s(md))}"
                                                      for md in modes))

    say.print(f"measuring {model} on {M.device_name(device)} ({device}), {dtype}, batches "
              f"{', '.join(map(str, batches))}; predicting for {hw.id}")
    measured = M.measure_batches(model_file, batches, dtype, repeats=repeats, warmup=warmup, profile=per_op,
                                 device=device, modes=modes, model_name=str(model), progress=progress)
    rows, per_kind, family = [], [], None
    for m in measured:
        if m.error:
            continue
        w = costs.at(m.batch, dtype)
        family = family or model_family(w)
        preds = {md: (predict(w, hw, mode=md, perf=perf_default),
                      predict(w, hw, mode=md, perf=perf_cal) if perf_cal else None) for md in modes}
        rows += compare_latency(m, preds)
        if per_op and m.kernels_by_op is not None:
            graph = predict(w, hw, mode="graph", perf=perf_cal or perf_default)
            per_kind.append((m.batch, compare_by_kind(m.kernels_by_op, graph)))
    note = CPU_NOTE.format(hw=hw.id) if device == "cpu" else ""
    bands = {md: expected_error(family, md, perf_cal is not None) for md in modes} if family else {}
    if plot_path is not None and rows:
        from ..validate.plot import parity_plot

        parity_plot([r.model_dump() for r in rows], plot_path, title=f"{Path(model).stem} on {hw.id}")

    if as_json:
        echo_json({
            "model": str(model), "hardware": hw.id, "device": device, "dtype": dtype, "modes": list(modes),
            "calibration_source": source if perf_cal else "", "note": note, "family": family,
            "expected_error": {md: b for md, b in bands.items() if b},
            "rows": [r.model_dump() for r in rows],
            "failed": [{"batch": m.batch, "error": m.error} for m in measured if m.error],
            "per_op": [{"batch": b, "kinds": [k.model_dump() for k in ks]} for b, ks in per_kind],
            "environment": M.environment(device, command="tops-advisor " + " ".join(sys.argv[1:])), "runs": [m.model_dump() for m in measured],
            "plot": str(plot_path) if plot_path else None,
        })
    else:
        _render(rows, measured, per_kind, hw, source if perf_cal else "", note, bands)
        if plot_path is not None and rows:
            say.print(f"parity plot written to {plot_path}")
    if not rows:
        raise click.exceptions.Exit(1)


def _render(rows, measured, per_kind, hw, source, note, bands) -> None:
    from rich.table import Table

    out = console()
    cal = f"calibrated ({source})" if source else "calibrated: no calibration for this device"
    t = Table(title=f"measured on this machine vs predicted for {hw.name}", title_justify="left")
    for col in ("batch", "mode", "measured", "spread (min-max)", "predicted (defaults)", "error",
                "predicted (calibrated)", "error", "bound"):
        t.add_column(col, justify="left" if col in ("mode", "bound") else "right")
    for r in rows:
        spread = f"{format_seconds(r.spread_s[0])} - {format_seconds(r.spread_s[1])}" if r.spread_s else "-"
        t.add_row(str(r.batch), r.mode, format_seconds(r.measured_s), spread, format_seconds(r.default_s),
                  _pct(r.err_default), format_seconds(r.calibrated_s) if r.calibrated_s else "-",
                  _pct(r.err_calibrated), r.bound)
    for m in measured:
        if m.error:
            t.add_row(str(m.batch), "", m.error, "", "", "", "", "", "")
    out.print(t)
    out.print(f"  [dim]error = (predicted - measured) / measured; {cal}[/dim]")
    for band in bands.values():
        if band:
            out.print(f"  [dim]{band['text']}[/dim]")
    for batch, kinds in per_kind:
        k = Table(title=f"batch {batch}: kernel time per operator kind (one eager forward, torch.profiler) vs "
                        "predicted device time (graph mode)", title_justify="left")
        for col in ("kind", "measured", "share", "predicted", "share", "error", "predicted bound"):
            k.add_column(col, justify="left" if col in ("kind", "predicted bound") else "right")
        for r in kinds:
            k.add_row(r.kind, format_seconds(r.measured_s) if r.measured_s else "-", f"{r.measured_share:.0%}",
                      format_seconds(r.predicted_s) if r.predicted_s else "-", f"{r.predicted_share:.0%}",
                      _pct(r.error), r.bound)
        out.print(k)
    if note:
        out.print(f"[bold yellow]note:[/bold yellow] {note}")
