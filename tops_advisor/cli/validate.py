"""`tops-advisor validate`: run a model on the local GPU and put the measurement beside the prediction."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..units import parse_batches, parse_precision
from .common import console, echo_json, err_console, get_catalog, load_model_arg, model_command_options


@click.command()
@click.argument("model")
@click.option("--batch", "-b", "batch_text", default="1,8,32", show_default=True,
              help="Comma-separated batch sizes to measure.")
@click.option("--dtype", default="fp16", show_default=True,
              help="fp16, bf16, fp32, or amp (the fp32 model under torch.autocast fp16).")
@click.option("--mode", type=click.Choice(["graph", "eager", "both", "compiled"]), default="both", show_default=True,
              help="eager: plain PyTorch forward; graph: the forward captured once and replayed as a CUDA graph; "
                   "compiled: torch.compile (default mode) captured and replayed as a CUDA graph.")
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
@model_command_options
def validate(model, batch_text, dtype, mode, calibration_path, per_op, plot_path, device, hardware_name, repeats,
             warmup, task, seq, input_shape, catalog_dirs, as_json):
    """Measure MODEL on this machine's GPU and compare with the prediction for that GPU.

    MODEL is a .py file (build_model/example_inputs) or timm:NAME, torchvision:NAME, hf:PATH_OR_ID."""
    from ..validate.run import MEASURABLE_DTYPES, run_validation

    batches = parse_batches(batch_text)
    dtype = parse_precision(dtype, MEASURABLE_DTYPES)
    if plot_path is not None:
        from ..render.plot import check_plot_path

        check_plot_path(plot_path)
    say = err_console()
    report = run_validation(load_model_arg(model, task, seq, input_shape), batches, dtype, get_catalog(catalog_dirs), mode=mode,
                            hardware_name=hardware_name, calibration_path=calibration_path, per_op=per_op,
                            plot_path=plot_path, device=device, repeats=repeats, warmup=warmup,
                            command="tops-advisor " + " ".join(sys.argv[1:]), progress=say.print)
    if as_json:
        from ..render.json_units import to_json

        echo_json(to_json(report))
    else:
        from ..render.validate import render_validation

        render_validation(report, console())
        if report.plot is not None and report.rows:
            say.print(f"parity plot written to {report.plot}")
    if not report.rows:
        raise click.exceptions.Exit(1)
