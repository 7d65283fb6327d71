"""`tops-advisor train`: predict one training step (forward, backward, optimizer) of a model on one device."""

from __future__ import annotations

from pathlib import Path

import click

from ..train import OPTIMIZERS, TRAIN_PRECISIONS
from .common import console, echo_json, get_catalog, load_model_arg, model_command_options, one_device_option


@click.command()
@click.argument("model")
@one_device_option()
@click.option("--batch", "-b", type=int, default=1, show_default=True, help="Samples per optimizer step.")
@click.option("--dtype", default="amp", show_default=True,
              help=f"One of {', '.join(TRAIN_PRECISIONS)} (amp: fp32 weights, autocast fp16, GradScaler).")
@click.option("--optimizer", default="adamw", show_default=True, help=f"One of {', '.join(OPTIMIZERS)}.")
@click.option("--checkpointing", is_flag=True, help="Gradient checkpointing, as the model's library offers it.")
@click.option("--channels-last", is_flag=True,
              help="Model and batch in channels-last memory format (NHWC convolutions and batch norm; eager mode).")
@click.option("--lora", metavar="r=N", help="Train LoRA adapters of rank N on the linear layers (r=16[,alpha=32,"
                                             "targets=q_proj+v_proj]); every other weight frozen.")
@click.option("--devices", type=click.IntRange(min=1), default=1, show_default=True,
              help="GPUs of this kind training together (data parallel; --batch is per GPU).")
@click.option("--strategy", default="ddp", show_default=True,
              help="With --devices > 1: ddp (replicated, gradients all-reduced) or fsdp (sharded, ZeRO-3).")
@click.option("--mode", type=click.Choice(["eager", "compiled", "graph"]), default="eager", show_default=True,
              help="eager: plain PyTorch (host cost per operator and autograd node); compiled: torch.compile(model) "
                   "(inductor's fused kernels, the optimizer eager); graph: eager kernels with no host cost.")
@click.option("--calibration", "calibration_path", type=click.Path(path_type=Path),
              help="Calibration file from `tops-advisor probe` (default: saved or shipped one for the device).")
@click.option("--no-calibration", is_flag=True, help="Use datasheet defaults even if a calibration exists.")
@click.option("--strict", is_flag=True, help="Fail on operators the counter does not know.")
@model_command_options
def train(model, hardware_name, batch, dtype, optimizer, checkpointing, channels_last, lora, devices, strategy, mode,
          calibration_path, no_calibration, strict, task, seq, input_shape, catalog_dirs, as_json):
    """Predict one optimizer step of MODEL on one device: forward, backward and optimizer time, MFU,
    samples/s and peak memory by part.

    MODEL is a .py file (build_model/example_inputs; forward may return the loss, or define loss(output,
    *inputs)), timm:NAME, torchvision:NAME, hf:PATH_OR_ID, or an LLM preset or config.json (built from the
    config at --seq tokens per sequence, 2048 by default)."""
    from ..api import analyze_training, calibration_for
    from ..llm import is_llm_spec
    from ..render.counting import unsupported_warning
    from ..render.progress import progress
    from ..train import TrainSetup, parse_lora, parse_optimizer, parse_train_precision

    setup = TrainSetup(parse_train_precision(dtype), parse_optimizer(optimizer), checkpointing,
                       parse_lora(lora) if lora else None, channels_last)
    hw = get_catalog(catalog_dirs).get(hardware_name)
    cal = calibration_for(hw, calibration_path, use=not no_calibration)
    with progress(f"counting a training step of {model} at batch {batch}", enabled=not as_json):
        result = analyze_training(model if is_llm_spec(model) else load_model_arg(model, task, seq, input_shape),
                                  hw, batch=batch, setup=setup, mode=mode, calibration=cal, strict=strict,
                                  devices=devices, strategy=strategy.strip().lower(), seq=seq)
    result.require_fit()
    message = unsupported_warning(result.workload.workload)
    if message:
        click.echo(message, err=True)
    if as_json:
        from ..render.train import training_json

        echo_json(training_json(result.prediction, result.workload, result.plan))
        return
    from ..render.train import render_training

    render_training(result.prediction, hw.name, result.workload, console(), result.plan)
