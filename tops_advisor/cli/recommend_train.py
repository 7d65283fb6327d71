"""`tops-advisor recommend MODEL --train`: rank devices for training a model (one counted step, every card)."""

from __future__ import annotations

from dataclasses import replace

import click

from .common import echo_json, load_model_arg

TRAIN_OPTIONS = ("optimizer", "checkpointing", "channels_last", "lora", "step_time", "samples_per_s", "max_time", "samples",
                 "devices", "strategy")
TRAIN_ONLY = tuple(o for o in TRAIN_OPTIONS if o != "channels_last")   # --channels-last ranks inference too


def train_options(fn):
    """The options of ``recommend --train`` (refused without it)."""
    for option in reversed((
        click.option("--train", is_flag=True, help="Rank devices for training MODEL (one optimizer step at --batch "
                                                   "per GPU; --dtype fp32|tf32|bf16|amp|amp-bf16, default amp)."),
        click.option("--optimizer", help="--train: adamw (default), adam, sgd, adamw-fused, adamw-8bit."),
        click.option("--checkpointing", is_flag=True, help="--train: gradient checkpointing."),
        click.option("--channels-last", is_flag=True,
                     help="Model and input (--train: and batch) channels-last (NHWC convolutions; eager and graph)."),
        click.option("--lora", metavar="r=N", help="--train: LoRA adapters of rank N, other weights frozen."),
        click.option("--step-time", help="--train: most time per optimizer step, with units (200ms)."),
        click.option("--samples-per-s", type=float, help="--train: samples/s to reach (all GPUs together)."),
        click.option("--max-time", help="--train: longest the run may take (12h, 3d) for --samples."),
        click.option("--samples", type=float, help="--train: samples the run trains on (with --max-time)."),
        click.option("--devices", type=click.IntRange(min=1), help="--train: GPUs per card kind (data parallel)."),
        click.option("--strategy", help="--train with --devices: ddp (default) or fsdp."),
    )):
        fn = option(fn)
    return fn


def run_training(model, c, dtype_given: str | None, batch: int | None, options: dict, catalog, no_calibration: bool,
                 as_json: bool, task, seq, input_shape, pricing=None) -> None:
    """Count one training step of ``model`` and rank the catalog for it, then render."""
    from ..api import calibration_for, training_step
    from ..errors import InputError
    from ..llm import is_llm_spec
    from ..recommend.training import TrainTargets, recommend_training
    from ..render.progress import progress
    from ..train import TrainSetup, parse_lora, parse_optimizer, parse_train_precision
    from ..units import parse_duration_s, parse_latency_s

    if batch is None:
        raise InputError("--train needs --batch (samples per optimizer step on each GPU)", hint="e.g. --batch 64")
    setup = TrainSetup(parse_train_precision(dtype_given or "amp"), parse_optimizer(options["optimizer"] or "adamw"),
                       options["checkpointing"], parse_lora(options["lora"]) if options["lora"] else None,
                       options["channels_last"])
    targets = TrainTargets(
        step_time_s=parse_latency_s(options["step_time"]) if options["step_time"] else None,
        samples_per_s=options["samples_per_s"], samples=options["samples"],
        max_time_s=parse_duration_s(options["max_time"], "--max-time") if options["max_time"] else None,
        devices=options["devices"] or 1, strategy=(options["strategy"] or "ddp").strip().lower())
    with progress(f"counting a training step of {model} at batch {batch}", enabled=not as_json):
        llm = is_llm_spec(model)
        step, units = training_step(model if llm else load_model_arg(model, task, seq, input_shape), batch, setup,
                                    seq=seq if llm else None, mode=c.mode)
    targets = replace(targets, fsdp_units=units)
    cals = {hw.id: calibration_for(hw, use=not no_calibration)[0] for hw in catalog}
    recs, rejected = recommend_training(step, list(catalog), c, targets, cals, pricing)
    from ..render.train import recommend_training_json, render_training_recommendations

    if as_json:
        echo_json(recommend_training_json(recs, rejected, step, targets))
        return
    from ..render.console import console

    render_training_recommendations(recs, rejected, step, targets, console(), c.rank_by)

