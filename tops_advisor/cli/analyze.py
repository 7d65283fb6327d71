"""`tops-advisor analyze`: predict what a model really gets on one device."""

from __future__ import annotations

from pathlib import Path

import click

from ..units import AMP, PRECISIONS, parse_precision
from .common import (
    console,
    cost_options,
    echo_json,
    engine_option,
    err_console,
    get_catalog,
    get_pricing,
    load_model_arg,
    mode_given,
    model_command_options,
    one_device_option,
    run_mode,
)


@click.command()
@click.argument("model")
@one_device_option()
@click.option("--batch", "-b", type=int, default=1, show_default=True, help="Batch size.")
@click.option("--dtype", default="fp16", show_default=True,
              help=f"One of {', '.join(PRECISIONS)}, or amp (an fp32 model under torch.autocast fp16).")
@click.option("--mode", type=click.Choice(["graph", "eager", "compiled"]), default="graph", show_default=True,
              help="graph: CUDA-graph replay (no host launch cost); eager: plain PyTorch; compiled: torch.compile "
                   "(inductor's fused kernels) replayed as a CUDA graph.")
@engine_option
@click.option("--opt-batch", "opt_batch", type=click.IntRange(min=1), metavar="N",
              help="--engine tensorrt: the engine was built for batch N (its profile's opt shape) and runs --batch "
                   "with the kernels TensorRT chose there (default: built for --batch).")
@click.option("--calibration", "calibration_path", type=click.Path(path_type=Path),
              help="Calibration file from `tops-advisor probe` (default: saved or shipped one for the device).")
@click.option("--no-calibration", is_flag=True, help="Use datasheet defaults even if a calibration exists.")
@click.option("--eager-host", "eager_host", metavar="PROFILE",
              help="Eager mode: price the host with a named eager host profile (reference, dle-pytorch-21.03; "
                   "docs/published.md) instead of this machine's calibration.")
@click.option("--power-mode", "power_mode", metavar="MODE",
              help="A module's power mode (Jetson nvpmodel: 15W, MAXN, ...; `hardware show DEVICE` lists them): "
                   "predict at its GPU clock, active SMs and memory clock. Default: the datasheet's mode.")
@click.option("--tf32", is_flag=True, help="fp32 matmuls in TF32 (torch.backends.cuda.matmul.allow_tf32).")
@click.option("--channels-last", is_flag=True,
              help="Model and input in channels-last memory format (eager and graph: cuDNN's NHWC convolutions; "
                   "compiled and tensorrt pick their own layout).")
@click.option("--plot", "plot_path", type=click.Path(path_type=Path), help="Write a roofline chart (.png/.svg).")
@click.option("--top", type=click.IntRange(min=1), default=10, show_default=True, help="Operators to list (N >= 1).")
@click.option("--strict", is_flag=True, help="Fail on operators the counter does not know or values it must assume.")
@cost_options
@model_command_options
@click.pass_context
def analyze(ctx, model, hardware_name, batch, dtype, mode, engine, opt_batch, calibration_path, no_calibration, eager_host, power_mode, tf32,
            channels_last, plot_path, top, strict, prices_file, electricity_usd_per_kwh, pue, life_years, task, seq, input_shape,
            catalog_dirs, as_json):
    """Predict latency, attainable TOPS and the binding limit of MODEL on one device.

    MODEL is a .py file (build_model/example_inputs) or timm:NAME, torchvision:NAME, hf:PATH_OR_ID."""
    from ..api import analyze_model, calibration_for, check_model_for_mode
    from ..render.counting import unsupported_warning
    from ..render.progress import progress
    from ..roofline.hosts import get_host_profile

    mode = run_mode(engine, mode, mode_given(ctx))
    catalog = get_catalog(catalog_dirs)
    hw = catalog.get(hardware_name)
    if power_mode is not None:
        hw = hw.at_power_mode(power_mode)
    pricing = get_pricing(catalog, prices_file, electricity_usd_per_kwh, pue, life_years)
    if plot_path is not None:
        from ..render.plot import check_plot_path

        check_plot_path(plot_path)
    cal = calibration_for(hw, calibration_path, use=not no_calibration)
    host = get_host_profile(eager_host) if eager_host else None
    with progress(f"counting {model} at batch {batch}", enabled=not as_json):
        check_model_for_mode(model, mode)
        result = analyze_model(load_model_arg(model, task, seq, input_shape), hw, batch=batch,
                               dtype=parse_precision(dtype, (*PRECISIONS, AMP)), mode=mode, calibration=cal, tf32_matmul=tf32,
                               strict=strict, host=host, pricing=pricing, channels_last=channels_last,
                               opt_batch=opt_batch)
    result.require_fit()   # a workload that does not fit is one line and exit 2, nothing predicted
    message = unsupported_warning(result.workload)
    if message:
        click.echo(message, err=True)
    if plot_path is not None:
        from ..render.plot import roofline_plot

        roofline_plot(result.prediction, result.perf, plot_path)
    if as_json:
        from ..render.json_units import analysis_json

        echo_json(analysis_json(result, plot=str(plot_path) if plot_path else None))
        return
    from ..render.analyze import render_analysis

    out = console()
    name = f"{hw.name} at power mode {hw.power_mode}" if hw.power_modes else hw.name
    render_analysis(result.prediction, name, result.advice, result.band, top, out, workload=result.workload,
                    costs=result.costs, no_price=result.no_price)
    if plot_path is not None:
        err_console().print(f"roofline chart written to {plot_path}")
