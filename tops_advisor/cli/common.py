"""Options and helpers shared by the command modules."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from ..catalog import Catalog, load_catalog

catalog_option = click.option(
    "--catalog", "catalog_dirs", multiple=True, type=click.Path(path_type=Path),
    help="Extra directory of device files (adds or overrides by id); repeatable. Also $TOPS_ADVISOR_CATALOG.")
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON only on stdout.")
prices_option = click.option(
    "--prices", "prices_file", type=click.Path(path_type=Path), metavar="FILE",
    help="Your own prices: a TOML file of [device-id] tables with usd_per_hour and/or purchase_usd; they replace "
         "the shipped prices of that kind. Also $TOPS_ADVISOR_PRICES.")

# where each one-device command's devices are ranked side by side
_RANKING = {"analyze": "recommend MODEL", "train": "recommend MODEL --train", "llm": "recommend --llm CONFIG"}


def _one_device(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> str | None:
    """The one device of a command that predicts one; an error naming them all when -H is repeated (click
    would otherwise keep the last one silently)."""
    if len(value) > 1:
        from ..errors import InputError

        names = " ".join(f"-H {v}" for v in value)
        ranking = _RANKING.get(ctx.info_name)
        raise InputError(f"tops-advisor {ctx.info_name} predicts one device; got {names}",
                         hint="keep one -H" + (f", or rank them with 'tops-advisor {ranking} {names}'"
                                               if ranking else ""))
    return value[0] if value else None


def one_device_option(required: bool = True, help: str = "Catalog id or alias (e.g. h200-sxm, 4090)."):
    """--hardware / -H for a command that predicts one device (``_one_device``)."""
    return click.option("--hardware", "-H", "hardware_name", multiple=True, required=required,
                        callback=_one_device, help=help)


MODEL_HELP = ("MODEL is a .py file (build_model/example_inputs) or a library model by name: timm:NAME, "
              "torchvision:NAME, hf:PATH_OR_ID (a config.json or directory offline, a hub id online; the "
              "[models] extra).")


engine_option = click.option(
    "--engine", type=click.Choice(["pytorch", "tensorrt"]), default="pytorch", show_default=True,
    help="pytorch: the model as PyTorch runs it (--mode); tensorrt: an engine TensorRT builds from it (batch norm "
         "folded, fused epilogues, NHWC, fused attention, one enqueue; docs/tensorrt.md). Not with --mode.")


def run_mode(engine: str, mode: str, mode_given: bool) -> str:
    """The prediction mode of --engine and --mode: ``tensorrt`` for a TensorRT engine (which has no --mode)."""
    if engine != "tensorrt":
        return mode
    if mode_given and mode != "graph":
        from ..errors import InputError

        raise InputError(f"--engine tensorrt runs the engine's own kernels; --mode {mode} is a PyTorch run mode",
                         hint="drop --mode (an engine is enqueued once, like a CUDA graph)")
    return "tensorrt"


def mode_given(ctx: click.Context) -> bool:
    """Whether the user set --mode (on the command line or through the environment)."""
    from click.core import ParameterSource

    return ctx.get_parameter_source("mode") not in (None, ParameterSource.DEFAULT)


def model_options(fn):
    """--task, --seq and --input-shape: how a library model's inputs are built."""
    for option in reversed((
        click.option("--task", help="hf: the Auto class to build (causal-lm, masked-lm, seq2seq-lm, base, "
                                    "sequence-classification, image-classification, speech-seq2seq); "
                                    "default: the config's architectures."),
        click.option("--seq", type=click.IntRange(min=1),
                     help="hf: tokens per sequence (default 128); a model file whose example_inputs takes "
                          "sequence=: its tokens per sequence."),
        click.option("--input-shape", help="Library model: one sample's input shape, e.g. 3x288x288."),
    )):
        fn = option(fn)
    return fn


def model_command_options(fn):
    """What every command that predicts MODEL on catalog devices takes: how a library model's inputs are built
    (``model_options``), --catalog and --json."""
    return model_options(catalog_option(json_option(fn)))


def cost_options(fn):
    """--prices and the assumptions behind an owned card's cost (docs/recommend.md, 'What the work costs')."""
    for option in reversed((
        prices_option,
        click.option("--electricity-usd-per-kwh", "electricity_usd_per_kwh", type=float, metavar="USD",
                     help="Electricity price for owned cards, USD per kWh (default 0.1241: EIA US commercial "
                          "average, 2022)."),
        click.option("--pue", type=float, help="Data-centre power usage effectiveness, >= 1 (default 1.58: Uptime "
                                               "Institute industry average, 2023)."),
        click.option("--life-years", type=float, metavar="YEARS",
                     help="Years of use a purchase is paid off over (default 3)."),
    )):
        fn = option(fn)
    return fn


def get_pricing(catalog: Catalog, prices_file: Path | None, electricity_usd_per_kwh: float | None,
                pue: float | None, life_years: float | None):
    """The prices of this run (shipped, and the user's own) with the cost assumptions given on the command line."""
    from ..costs import CostSettings, load_pricing

    given = {k: v for k, v in (("electricity_usd_per_kwh", electricity_usd_per_kwh), ("pue", pue),
                               ("life_years", life_years)) if v is not None}
    return load_pricing(catalog, prices_file, CostSettings(**given))


def load_model_arg(model: str, task: str | None, seq: int | None, input_shape: str | None):
    """The model the MODEL argument names, loaded once (a file imported, a library config read)."""
    from ..counting import load_model
    from ..counting.library_models import parse_input_shape

    _refuse_llm_preset(model)
    shape = parse_input_shape(input_shape) if input_shape else None
    return load_model(model, task=task, seq=seq, input_shape=shape)


def _refuse_llm_preset(model: str) -> None:
    """An LLM preset (or a name close to one) where a model file is expected: say which command takes it."""
    from ..errors import InputError
    from ..llm import PRESETS, is_llm_spec, load_config

    text = str(model).strip()
    if text.endswith(".json") or not is_llm_spec(text):
        return
    if text.lower() not in PRESETS:
        load_config(text)   # a mistyped preset: raises with the closest preset names
    raise InputError(f"{text} is an LLM preset, not a model file",
                     hint=f"'tops-advisor llm {text} -H DEVICE' predicts its inference, 'tops-advisor train {text} "
                          f"-H DEVICE --batch B --seq S' and 'recommend {text} --train --batch B' its training")


def get_catalog(catalog_dirs: tuple[Path, ...]) -> Catalog:
    return load_catalog(catalog_dirs)


def echo_json(obj) -> None:
    """JSON on stdout, nothing else."""
    sys.stdout.write(json.dumps(obj, indent=2, default=str))
    sys.stdout.write("\n")


def console():
    """A rich console for tables (stdout): $COLUMNS, else the terminal's width, else 120 columns when piped
    (render/console.py)."""
    from ..render.console import console as stdout_console

    return stdout_console()


def err_console():
    from ..render.console import err_console as stderr_console

    return stderr_console()
