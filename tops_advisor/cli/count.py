"""``tops-advisor count MODEL``: operations and bytes per operator of a model file or a library model."""

from __future__ import annotations

import warnings

import click

from .common import console, echo_json, json_option, load_model_arg, model_options


@click.command("count")
@click.argument("model")
@click.option("--batch", type=int, default=1, show_default=True, help="Batch size.")
@click.option("--dtype", default="fp32", show_default=True,
              help="Precision: fp32, tf32, fp16, bf16 (run as such); fp8, int8, int4, fp4 (fp16 shapes, bytes "
                   "scaled).")
@click.option("--per-op", is_flag=True, help="One row per operator type instead of per module.")
@click.option("--depth", type=click.IntRange(min=1), default=2, show_default=True,
              help="Module path components per row (per-module table).")
@click.option("--strict", is_flag=True,
              help="Fail when an operator has no counting formula or counting must assume a value.")
@model_options
@json_option
def count(model: str, batch: int, dtype: str, per_op: bool, depth: int, strict: bool, task, seq, input_shape,
          as_json: bool) -> None:
    """Count operations (a multiply-add is 2) and minimal bytes per operator of MODEL. Nothing is computed and
    no weight memory is allocated.

    MODEL is a .py file (build_model/example_inputs) or timm:NAME, torchvision:NAME, hf:PATH_OR_ID."""
    from ..counting import UnsupportedOpWarning
    from ..counting import count as count_model
    from ..render.counting import ops_table, summary_lines, unsupported_warning
    from ..render.progress import progress

    with progress(f"counting {model} at batch {batch}", enabled=not as_json), warnings.catch_warnings():
        warnings.simplefilter("ignore", UnsupportedOpWarning)  # the CLI prints its own one-line warning below
        workload = count_model(load_model_arg(model, task, seq, input_shape), batch=batch, dtype=dtype,
                               strict=strict)
    message = unsupported_warning(workload)
    if message:
        click.echo(message, err=True)
    if as_json:
        echo_json(workload.model_dump())
        return
    out = console()
    out.print(ops_table(workload, by="op" if per_op else "module", depth=depth))
    for line in summary_lines(workload):
        out.print(line, highlight=False)
