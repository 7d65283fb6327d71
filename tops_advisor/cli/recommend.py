"""`tops-advisor recommend`: rank the devices that meet a target for a model."""

from __future__ import annotations

from pathlib import Path

import click

from ..units import PRECISIONS
from .common import (
    cost_options,
    echo_json,
    engine_option,
    get_catalog,
    get_pricing,
    load_model_arg,
    model_command_options,
    run_mode,
)
from .llm_options import llm_precision_options, serving_options
from .recommend_train import TRAIN_ONLY, TRAIN_OPTIONS, run_training, train_options

# Options that belong to one form of the command: given with the other form they would be ignored, so they are
# refused instead (`recommend MODEL --llm X --latency 10ms` would otherwise drop MODEL and --latency).
MODEL_ONLY = ("latency", "throughput", "strict", "task", "seq", "input_shape", "engine")
LLM_ONLY = ("tokens_per_s", "ttft", "prompt", "generate", "max_devices", "weight_dtype", "act_dtype", "kv_dtype",
            "kernels", "serving", "requests_per_s", "max_batched_tokens")


@click.command()
@click.argument("model", required=False)
@click.option("--llm", "llm_config", help="Instead of MODEL: an LLM config.json or preset (llama3-8b, ...).")
@click.option("--tokens-per-s", type=float, help="LLM: decode tokens/s per request to reach.")
@click.option("--ttft", help="LLM: time to first token to stay under, with units (500ms).")
@click.option("--prompt", type=int, help="LLM: prompt tokens (for TTFT).")
@click.option("--generate", type=int, help="LLM: generated tokens per request.")
@click.option("--max-devices", type=int, default=8, show_default=True, help="LLM: most devices per replica.")
@llm_precision_options
@serving_options
@click.option("--latency", help="Latency target per batch, with units: 10ms, 0.5s, 250us.")
@click.option("--throughput", type=float, help="Throughput target in samples/s.")
@click.option("--batch", "-b", type=int, help="Fixed batch (default: search for the best batch); LLM: prompts "
                                              "prefilled at once for a burst TTFT.")
@click.option("--dtype", default="fp16", show_default=True,
              help=f"One of {', '.join(PRECISIONS)}, several comma-separated, or 'auto' (the precisions the mode "
                   "runs: fp32, fp16, bf16 in plain PyTorch, which has no int8 or fp8 kernels; fp32, fp16, int8 "
                   "with --engine tensorrt, int8 where the card has an int8 peak).")
@click.option("--segment", help="edge, workstation or datacenter.")
@click.option("--max-power", help="Maximum board power, e.g. 60W (a Jetson module: its fastest power mode within it).")
@click.option("--power-mode", "power_mode", metavar="MODE",
              help="Run modules in this power mode (Jetson nvpmodel: 15W, MAXN, ...); devices without it are "
                   "left out.")
@click.option("--max-price", type=float, help="Maximum purchase price of one card in USD.")
@click.option("--hardware", "-H", "hardware_names", multiple=True, help="Limit to these devices; repeatable.")
@click.option("--mode", type=click.Choice(["graph", "eager", "compiled"]), default="graph", show_default=True,
              help="graph: CUDA-graph replay; eager: eager PyTorch; compiled: torch.compile + CUDA graph.")
@engine_option
@click.option("--rank-by", type=click.Choice(["efficiency", "latency", "throughput", "price", "cost"]),
              default="efficiency", show_default=True,
              help="efficiency = samples/s per watt of TDP; price = samples/s per 1000 USD of purchase price; "
                   "cost = cheapest per million samples, or generated tokens with --llm (with --throughput, or "
                   "--requests-per-s with --llm: the whole fleet's cost).")
@click.option("--rent/--buy", "rent", default=True, show_default=True,
              help="Costs from rental prices (USD per GPU-hour) or from buying (purchase over --life-years plus "
                   "electricity).")
@click.option("--budget", type=float, metavar="USD",
              help="Most the fleet may cost: USD per hour rented (--rent), or USD up front bought (--buy).")
@click.option("--top", type=click.IntRange(min=1), help="Show only the best N (N >= 1).")
@click.option("--no-calibration", is_flag=True, help="Use datasheet defaults even where a calibration exists.")
@click.option("--strict", is_flag=True, help="Fail on operators the counter does not know.")
@cost_options
@train_options
@model_command_options
@click.pass_context
def recommend(ctx, model, llm_config, tokens_per_s, ttft, prompt, generate, max_devices, latency, throughput, batch,
              dtype, segment, max_power, power_mode, max_price, hardware_names, mode, engine, rank_by, rent, budget, top,
              no_calibration, strict, prices_file, electricity_usd_per_kwh, pue, life_years, task, seq, input_shape,
              catalog_dirs, as_json, train, **llm_options):
    """Rank the devices that run MODEL, or an LLM (--llm), within the targets.

    MODEL is a .py file (build_model/example_inputs) or timm:NAME, torchvision:NAME, hf:PATH_OR_ID."""
    from ..api import ModelCosts, calibration_for, check_model_for_mode
    from ..recommend import Constraints, auto_dtypes
    from ..recommend import recommend as run_recommend
    from ..render.console import console
    from ..render.progress import progress
    from ..units import parse_latency_s, parse_power_w, parse_precision

    _check_form(ctx, model, llm_config)
    train_given = {k: llm_options.pop(k) for k in TRAIN_OPTIONS}
    if not train and (wrong := _given(ctx, TRAIN_ONLY)):
        from ..errors import InputError

        raise InputError(f"{', '.join(wrong)} appl{'y' if len(wrong) > 1 else 'ies'} to --train",
                         hint="add --train to rank devices for training MODEL")
    mode = _engine_mode(ctx, engine, mode, train)
    if train and llm_config:
        from ..errors import InputError

        raise InputError("--train ranks devices for a MODEL, not for --llm", hint="tops-advisor train CONFIG -H CARD")
    if train:
        catalog = get_catalog(catalog_dirs)
        c = Constraints(segment=segment.lower() if segment else None, hardware=tuple(catalog.get(n).id for n in
                        hardware_names), max_power_w=parse_power_w(max_power) if max_power else None,
                        power_mode=power_mode, mode="eager" if mode == "graph" and not _given(ctx, ("mode",)) else mode,
                        rank_by=rank_by if rank_by != "price" else "efficiency", top=top,
                        price_kind="rental" if rent else "purchase")
        return run_training(model, c, dtype if _given(ctx, ("dtype",)) else None, batch, train_given, catalog,
                            no_calibration, as_json, task, seq, input_shape,
                            get_pricing(catalog, prices_file, electricity_usd_per_kwh, pue, life_years))
    auto = dtype.strip().lower() == "auto"
    dtypes = auto_dtypes(mode) if auto else tuple(parse_precision(d) for d in dtype.split(","))
    catalog = get_catalog(catalog_dirs)
    limit = tuple(catalog.get(n).id for n in hardware_names)
    c = Constraints(
        latency_s=parse_latency_s(latency) if latency else None, throughput_per_s=throughput, batch=batch,
        dtypes=dtypes, dtype_auto=auto, segment=segment.lower() if segment else None,
        max_power_w=parse_power_w(max_power) if max_power else None, power_mode=power_mode, max_price_usd=max_price,
        hardware=limit, mode=mode, rank_by=rank_by, top=top, price_kind="rental" if rent else "purchase",
        budget_usd=budget)
    pricing = get_pricing(catalog, prices_file, electricity_usd_per_kwh, pue, life_years)
    if llm_config:
        if train_given["channels_last"]:
            from ..errors import InputError

            raise InputError("--channels-last is a memory format of convolution inputs; --llm has none",
                             hint="drop --channels-last")
        return _recommend_llm(llm_config, c, tokens_per_s, ttft, batch, prompt, generate, max_devices, catalog,
                              no_calibration, as_json, pricing, dtype=dtype if _given(ctx, ("dtype",)) else None,
                              **llm_options)
    with progress(f"counting {model} (batches 1 and 2)", enabled=not as_json):
        check_model_for_mode(model, mode)
        costs = ModelCosts(load_model_arg(model, task, seq, input_shape), strict=strict, mode=mode,
                           channels_last=train_given["channels_last"])
    with progress(f"predicting {costs.model_path} on {len(limit) or len(catalog)} devices", enabled=not as_json):
        res = run_recommend(costs.at, list(catalog), c,
                            calibration_of=lambda hw: calibration_for(hw, use=not no_calibration), pricing=pricing)
    if as_json:
        from ..render.json_units import to_json

        echo_json(to_json(res))
        return
    from ..render.recommend import render_recommendations

    render_recommendations(res, console())


def _engine_mode(ctx: click.Context, engine: str, mode: str, train: bool) -> str:
    """The prediction mode of --engine and --mode (``common.run_mode``); an engine predicts inference only."""
    if train and engine != "pytorch":
        from ..errors import InputError

        raise InputError("--engine tensorrt predicts inference; --train ranks devices for a PyTorch training step",
                         hint="drop --engine, or drop --train")
    return run_mode(engine, mode, bool(_given(ctx, ("mode",))))


def _given(ctx: click.Context, names: tuple[str, ...]) -> list[str]:
    """The options among ``names`` the user set (on the command line or through the environment)."""
    from click.core import ParameterSource

    flags = {"rent": "--rent/--buy"}   # a flag pair: one parameter
    return [flags.get(n, f"--{n.replace('_', '-')}") for n in names
            if ctx.get_parameter_source(n) not in (None, ParameterSource.DEFAULT)]


def _check_form(ctx: click.Context, model: Path | None, llm_config: str | None) -> None:
    """One form at a time: MODEL with its targets, or --llm with its targets; nothing silently ignored."""
    from ..errors import InputError

    if model is not None and llm_config:
        raise InputError(f"give MODEL ({model}) or --llm ({llm_config}), not both",
                         hint="recommend MODEL --latency 10ms, or recommend --llm CONFIG --tokens-per-s 30")
    if model is None and not llm_config:
        raise InputError("give a MODEL file (build_model/example_inputs) or --llm CONFIG",
                         hint="e.g. tops-advisor recommend examples/resnet50.py --latency 10ms")
    wrong, form, hint = ((_given(ctx, MODEL_ONLY), "a MODEL file, not to --llm",
                          "an LLM's targets are --tokens-per-s and --ttft") if llm_config else
                         (_given(ctx, LLM_ONLY), "--llm CONFIG, not to a MODEL file",
                          "a model's targets are --latency and --throughput"))
    if wrong:
        raise InputError(f"{', '.join(wrong)} appl{'y' if len(wrong) > 1 else 'ies'} to {form}", hint=hint)


def _recommend_llm(config, c, tokens_per_s, ttft, batch, prompt, generate, max_devices, catalog, no_calibration,
                   as_json, pricing, *, dtype, weight_dtype, act_dtype, kv_dtype, kernels, serving, requests_per_s,
                   max_batched_tokens):
    from ..api import calibration_for
    from ..errors import InputError
    from ..llm import load_config
    from ..recommend import LLMRun, ServingAsk, recommend_llm, recommend_serving
    from ..recommend.llm import AUTO
    from ..render.console import console
    from ..render.progress import progress
    from ..units import parse_latency_s

    if tokens_per_s is not None and tokens_per_s <= 0:
        raise InputError(f"--tokens-per-s must be greater than zero, got {tokens_per_s}")
    serving = serving or requests_per_s is not None
    if serving and batch is not None:
        raise InputError("--batch applies to the burst form (that many prompts prefilled at once), not to --serving",
                         hint="--serving finds how many requests run at once; leave --batch out")
    if max_batched_tokens is not None and not serving:
        raise InputError("--max-batched-tokens applies to --serving", hint="add --serving or --requests-per-s")
    dtypes = () if dtype is None else AUTO if dtype.strip().lower() == "auto" else tuple(dtype.split(","))
    run = LLMRun(weight=weight_dtype, act=act_dtype, kv=kv_dtype, dtypes=dtypes, kernels=kernels)
    ttft_s = parse_latency_s(ttft) if ttft else None
    ask = ServingAsk(**{k: v for k, v in (("prompt", prompt), ("generate", generate)) if v is not None},
                     tokens_per_s=tokens_per_s, ttft_s=ttft_s, requests_per_s=requests_per_s,
                     token_budget=max_batched_tokens) if serving else None
    cfg = load_config(config)
    calibration_of = lambda hw: calibration_for(hw, use=not no_calibration)  # noqa: E731
    with progress(f"planning {getattr(cfg, 'name', config)} on {len(c.hardware) or len(catalog)} device kinds",
                  enabled=not as_json):
        res = recommend_serving(cfg, list(catalog), c, ask, max_devices=max_devices, calibration_of=calibration_of,
                                run=run, pricing=pricing) if serving else \
            recommend_llm(cfg, list(catalog), c, tokens_per_s=tokens_per_s, ttft_s=ttft_s, batch=batch or 1,
                          prompt=prompt, generate=generate, max_devices=max_devices, calibration_of=calibration_of,
                          run=run, pricing=pricing)
    warnings = list(getattr(cfg, "warnings", ()))  # config keys that may change cost but are not modelled
    if as_json:
        from ..render.json_units import to_json

        echo_json({**to_json(res), "warnings": warnings})
        return
    from ..render.recommend import render_llm_recommendations
    from ..render.tables import bullet

    out = console()
    render_llm_recommendations(res, getattr(cfg, "name", str(config)), out)
    for w in warnings:
        bullet(out, w, mark="warning:", indent=0)
