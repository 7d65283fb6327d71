"""`tops-advisor analyze`: predict what a model really gets on one device."""

from __future__ import annotations

from pathlib import Path

import click

from ..units import PRECISIONS, parse_precision
from .common import (
    catalog_option,
    console,
    echo_json,
    err_console,
    get_catalog,
    json_option,
    load_model_arg,
    model_options,
)

COUNTED = ("fp32", "fp16", "bf16")


@click.command()
@click.argument("model")
@click.option("--hardware", "-H", "hardware_name", required=True, help="Catalog id or alias (e.g. h200, 4090).")
@click.option("--batch", "-b", type=int, default=1, show_default=True, help="Batch size.")
@click.option("--dtype", default="fp16", show_default=True, help=f"One of {', '.join(PRECISIONS)}.")
@click.option("--mode", type=click.Choice(["graph", "eager"]), default="graph", show_default=True,
              help="graph: CUDA graphs / compiled (no host launch cost); eager: plain PyTorch.")
@click.option("--calibration", "calibration_path", type=click.Path(path_type=Path),
              help="Calibration file from `tops-advisor probe` (default: saved or shipped one for the device).")
@click.option("--no-calibration", is_flag=True, help="Use datasheet defaults even if a calibration exists.")
@click.option("--tf32", is_flag=True, help="fp32 matmuls in TF32 (torch.backends.cuda.matmul.allow_tf32).")
@click.option("--plot", "plot_path", type=click.Path(path_type=Path), help="Write a roofline chart (.png/.svg).")
@click.option("--top", type=int, default=10, show_default=True, help="Operators to list.")
@click.option("--strict", is_flag=True, help="Fail on operators the counter does not know or values it must assume.")
@model_options
@catalog_option
@json_option
def analyze(model, hardware_name, batch, dtype, mode, calibration_path, no_calibration, tf32, plot_path, top,
            strict, task, seq, input_shape, catalog_dirs, as_json):
    """Predict latency, attainable TOPS and the binding limit of MODEL on one device.

    MODEL is a .py file (build_model/example_inputs) or timm:NAME, torchvision:NAME, hf:PATH_OR_ID."""
    from ..advice import advise
    from ..api import calibration_for
    from ..counting import count
    from ..errors import InputError
    from ..roofline import device_perf, predict
    from ..scaling import retype

    if batch <= 0:
        raise InputError(f"--batch must be a positive integer, got {batch}")
    dtype = parse_precision(dtype)
    hw = get_catalog(catalog_dirs).get(hardware_name)
    if dtype not in hw.dense_tops:
        from ..errors import UnsupportedPrecisionError

        raise UnsupportedPrecisionError(f"{hw.id} has no {dtype} peak; it has {', '.join(hw.dense_tops)}")
    if plot_path is not None:
        from ..render.plot import check_plot_path

        check_plot_path(plot_path)
    cal, source = calibration_for(hw, calibration_path, use=not no_calibration)
    base = dtype if dtype in COUNTED else "fp16"
    workload = count(load_model_arg(model, task, seq, input_shape), batch=batch, dtype=base, strict=strict)
    if base != dtype:
        workload = retype(workload, dtype)
    perf = device_perf(hw, cal, source)
    pred = predict(workload, hw, mode=mode, tf32_matmul=tf32, perf=perf)
    other = predict(workload, hw, mode="graph" if mode == "eager" else "eager", tf32_matmul=tf32, perf=perf)
    advice = advise(pred, hw, other)
    from ..accuracy import expected_error, model_family  # error band from docs/accuracy.md (validate)

    band = expected_error(model_family(workload), mode, pred.calibrated, hardware=hw)
    if plot_path is not None:
        from ..render.plot import roofline_plot

        roofline_plot(pred, perf, plot_path)
    if as_json:
        d = pred.model_dump()
        d["advice"] = advice
        d["unsupported_ops"] = dict(workload.unsupported_ops)
        d["assumptions"] = list(workload.assumptions)
        d["notes"] = list(workload.notes)
        d["plot"] = str(plot_path) if plot_path else None
        d["expected_error"] = band
        echo_json(d)
        return
    from ..render.analyze import render_analysis

    out = console()
    render_analysis(pred, hw.name, advice, band, top, out)
    for line in [*workload.notes, *(f"assumed: {a} (--strict refuses)" for a in workload.assumptions)]:
        out.print(f"  [dim]{line}[/dim]")
    if plot_path is not None:
        err_console().print(f"roofline chart written to {plot_path}")
