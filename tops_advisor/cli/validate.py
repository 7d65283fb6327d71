"""`tops-advisor validate`: run a model on the local GPU and put the measurement beside the prediction (a
forward pass at several batches, or with ``--train`` one training step)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..errors import InputError
from ..kinds import Mode
from ..units import parse_batches, parse_precision
from .common import (
    console,
    echo_json,
    err_console,
    get_catalog,
    load_model_arg,
    model_command_options,
    one_device_option,
)

DEFAULT_BATCHES = "1,8,32"
DEFAULT_MODE = "both"


@click.command()
@click.argument("model")
@click.option("--batch", "-b", "batch_text",
              help=f"Comma-separated batch sizes to measure [default: {DEFAULT_BATCHES}]; with --train one batch "
                   "size.")
@click.option("--dtype",
              help="fp16, bf16, fp32, or amp (the fp32 model under torch.autocast fp16) [default: fp16]; with "
                   "--train fp32, tf32, bf16, amp (autocast fp16 and a GradScaler) or amp-bf16 [default: fp32].")
@click.option("--mode", type=click.Choice(["graph", "eager", "both", "compiled"]),
              help="eager: plain PyTorch forward; graph: the forward captured once and replayed as a CUDA graph; "
                   f"compiled: torch.compile (default mode) captured and replayed as a CUDA graph [default: "
                   f"{DEFAULT_MODE}]. --train measures eager steps, or compiled ones (torch.compile(model)).")
@click.option("--train", is_flag=True,
              help="Measure one training step (forward and loss, backward, optimizer step) and its peak memory.")
@click.option("--optimizer", help="With --train: adamw (default), adam, sgd, adamw-fused, adamw-8bit.")
@click.option("--checkpointing", is_flag=True, help="With --train: the library's gradient checkpointing.")
@click.option("--channels-last", is_flag=True,
              help="Model and inputs (with --train: and batch) in channels-last memory format, measured and predicted so.")
@click.option("--lora", "lora_text",
              help="With --train: LoRA adapters, e.g. r=16 or r=16,alpha=32,targets=q_proj+v_proj.")
@click.option("--calibration", "calibration_path", type=click.Path(path_type=Path),
              help="Calibration file from `tops-advisor probe` (default: saved or shipped one for the device).")
@click.option("--per-op", is_flag=True,
              help="Profile one forward per batch and line up kernel time per operator kind with the prediction.")
@click.option("--plot", "plot_path", type=click.Path(path_type=Path),
              help="Write a parity plot, predicted vs measured (.png/.svg/.pdf).")
@click.option("--device", type=click.Choice(["cuda", "cpu"]), default="cuda", show_default=True,
              help="cpu: the same pipeline on the CPU, to test the plumbing (needs --hardware).")
@one_device_option(required=False, help="Catalog device to predict for (default: the local GPU, matched by name).")
@click.option("--repeats", type=click.IntRange(1), default=30, show_default=True, help="Timed iterations.")
@click.option("--warmup", type=click.IntRange(0), default=10, show_default=True, help="Untimed iterations first.")
@model_command_options
def validate(model, batch_text, dtype, mode, train, optimizer, checkpointing, channels_last, lora_text, calibration_path, per_op,
             plot_path, device, hardware_name, repeats, warmup, task, seq, input_shape, catalog_dirs, as_json):
    """Measure MODEL on this machine's GPU and compare with the prediction for that GPU.

    MODEL is a .py file (build_model/example_inputs) or timm:NAME, torchvision:NAME, hf:PATH_OR_ID."""
    command = "tops-advisor " + " ".join(sys.argv[1:])
    if train:
        setup = _train_setup(dtype, optimizer, checkpointing, lora_text, mode, per_op, plot_path, channels_last)
        batch = _one_batch(batch_text)
        _validate_train(load_model_arg(model, task, seq, input_shape), batch, setup, get_catalog(catalog_dirs),
                        hardware_name, calibration_path, device, repeats, warmup, command, as_json, mode or "eager")
        return
    given = [name for name, v in (("--optimizer", optimizer), ("--checkpointing", checkpointing),
                                  ("--lora", lora_text)) if v]
    if given:
        raise InputError(f"{given[0]} applies to a training step; add --train to measure one")
    from ..validate.run import MEASURABLE_DTYPES, run_validation

    batches = parse_batches(batch_text or DEFAULT_BATCHES)
    dtype = parse_precision(dtype or "fp16", MEASURABLE_DTYPES)
    if plot_path is not None:
        from ..render.plot import check_plot_path

        check_plot_path(plot_path)
    say = err_console()
    report = run_validation(load_model_arg(model, task, seq, input_shape), batches, dtype,
                            get_catalog(catalog_dirs), mode=mode or DEFAULT_MODE, hardware_name=hardware_name,
                            calibration_path=calibration_path, per_op=per_op, plot_path=plot_path, device=device,
                            repeats=repeats, warmup=warmup, command=command, progress=say.print,
                            channels_last=channels_last)
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


def _one_batch(batch_text: str | None) -> int:
    if batch_text is None:
        raise InputError("--train measures one training step: give its batch size, e.g. --batch 32")
    batches = parse_batches(batch_text)
    if len(batches) != 1:
        raise InputError(f"--train measures one batch size at a time, got --batch {batch_text}; e.g. --batch "
                         f"{batches[-1]}")
    return batches[0]


def _train_setup(dtype, optimizer, checkpointing, lora_text, mode, per_op, plot_path, channels_last=False):
    """The TrainSetup the options name; InputError for an option --train does not take."""
    from ..train import TrainSetup, parse_lora, parse_optimizer, parse_train_precision

    if mode not in (None, "eager", "compiled"):
        raise InputError(f"--train measures eager or compiled training steps; --mode {mode} applies to forward "
                         "passes", hint="--mode eager or --mode compiled")
    if per_op or plot_path is not None:
        raise InputError(f"{'--per-op' if per_op else '--plot'} applies to forward passes, not to --train")
    return TrainSetup(precision=parse_train_precision(dtype or "fp32"),
                      optimizer=parse_optimizer(optimizer or "adamw"), checkpointing=checkpointing,
                      lora=parse_lora(lora_text) if lora_text else None, channels_last=channels_last)


def _validate_train(source, batch, setup, catalog, hardware_name, calibration_path, device, repeats, warmup,
                    command, as_json, mode: str = "eager") -> None:
    from ..validate.train_run import run_train_validation

    report = run_train_validation(source, batch, setup, catalog, hardware_name=hardware_name,
                                  calibration_path=calibration_path, device=device, repeats=repeats, warmup=warmup,
                                  command=command, mode=Mode(mode), progress=err_console().print)
    if as_json:
        from ..render.json_units import to_json

        echo_json(to_json(report))
    else:
        from ..render.validate import render_train_validation

        render_train_validation(report, console())
    if report.measured.error:
        raise click.exceptions.Exit(1)
