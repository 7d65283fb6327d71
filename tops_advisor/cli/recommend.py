"""`tops-advisor recommend`: rank the devices that meet a target for a model."""

from __future__ import annotations

import click

from ..units import PRECISIONS
from .common import (
    catalog_option,
    console,
    echo_json,
    get_catalog,
    json_option,
    load_model_arg,
    model_options,
)


@click.command()
@click.argument("model", required=False)
@click.option("--llm", "llm_config", help="Instead of MODEL: an LLM config.json or preset (llama3-8b, ...).")
@click.option("--tokens-per-s", type=float, help="LLM: decode tokens/s per request to reach.")
@click.option("--ttft", help="LLM: time to first token to stay under, with units (500ms).")
@click.option("--prompt", type=int, help="LLM: prompt tokens (for TTFT).")
@click.option("--generate", type=int, help="LLM: generated tokens per request.")
@click.option("--max-devices", type=int, default=8, show_default=True, help="LLM: most devices per replica.")
@click.option("--latency", help="Latency target per batch, with units: 10ms, 0.5s, 250us.")
@click.option("--throughput", type=float, help="Throughput target in samples/s.")
@click.option("--batch", "-b", type=int, help="Fixed batch (default: search for the best batch).")
@click.option("--dtype", default="fp16", show_default=True,
              help=f"One of {', '.join(PRECISIONS)}, several comma-separated, or 'auto'.")
@click.option("--segment", help="edge, workstation or datacenter.")
@click.option("--max-power", help="Maximum board power, e.g. 60W.")
@click.option("--max-price", type=float, help="Maximum list price in USD.")
@click.option("--hardware", "-H", "hardware_names", multiple=True, help="Limit to these devices; repeatable.")
@click.option("--mode", type=click.Choice(["graph", "eager"]), default="graph", show_default=True)
@click.option("--rank-by", type=click.Choice(["efficiency", "latency", "throughput", "price"]),
              default="efficiency", show_default=True, help="efficiency = samples/s per watt of TDP.")
@click.option("--top", type=int, help="Show only the best N.")
@click.option("--no-calibration", is_flag=True, help="Use datasheet defaults even where a calibration exists.")
@click.option("--strict", is_flag=True, help="Fail on operators the counter does not know.")
@model_options
@catalog_option
@json_option
def recommend(model, llm_config, tokens_per_s, ttft, prompt, generate, max_devices, latency, throughput, batch,
              dtype, segment, max_power, max_price, hardware_names, mode, rank_by, top, no_calibration, strict,
              task, seq, input_shape, catalog_dirs, as_json):
    """Rank the devices that run MODEL, or an LLM (--llm), within the targets.

    MODEL is a .py file (build_model/example_inputs) or timm:NAME, torchvision:NAME, hf:PATH_OR_ID."""
    from ..api import ModelCosts, calibration_for
    from ..errors import InputError
    from ..recommend import AUTO_DTYPES, Constraints
    from ..recommend import recommend as run_recommend
    from ..units import parse_latency_s, parse_power_w, parse_precision

    dtypes = AUTO_DTYPES if dtype.strip().lower() == "auto" else tuple(
        parse_precision(d) for d in dtype.split(","))
    catalog = get_catalog(catalog_dirs)
    limit = tuple(catalog.get(n).id for n in hardware_names)
    c = Constraints(
        latency_s=parse_latency_s(latency) if latency else None, throughput_per_s=throughput, batch=batch,
        dtypes=dtypes, segment=segment.lower() if segment else None,
        max_power_w=parse_power_w(max_power) if max_power else None, max_price_usd=max_price,
        hardware=limit, mode=mode, rank_by=rank_by, top=top)
    if llm_config:
        return _recommend_llm(llm_config, c, tokens_per_s, ttft, batch or 1, prompt, generate, max_devices,
                              catalog, no_calibration, as_json)
    if model is None:
        raise InputError("give a MODEL file (build_model/example_inputs) or --llm CONFIG",
                         hint="e.g. tops-advisor recommend examples/resnet50.py --latency 10ms")
    costs = ModelCosts(load_model_arg(model, task, seq, input_shape), strict=strict)
    res = run_recommend(costs.at, list(catalog), c,
                        calibration_of=lambda hw: calibration_for(hw, use=not no_calibration))
    if costs.unsupported_ops:
        res.notes.append("unsupported operators counted as zero: "
                         + ", ".join(f"{k} x{v}" for k, v in costs.unsupported_ops.items()))
    from ..accuracy import expected_error, model_family

    family = model_family(costs.at(1, dtypes[0] if dtypes[0] in ("fp32", "fp16", "bf16") else "fp16"))
    bands = {cal: expected_error(family, mode, cal) for cal in (False, True)}
    if as_json:
        d = res.model_dump()
        for rec in d["recommendations"]:
            rec["expected_error"] = bands[rec["calibrated"]]
        echo_json(d)
        return
    from ..render.recommend import advice_lines, recommendations_table, rejected_table

    out = console()
    out.print(recommendations_table(res))
    for line in advice_lines(res):
        out.print(f"  - {line}")
    for cal, band in bands.items():
        if band and any(r.calibrated == cal for r in res.recommendations):
            out.print(f"  [dim]{'calibrated' if cal else 'uncalibrated'} rows: {band['text']}[/dim]")
    if res.rejected:
        out.print(rejected_table(res))


def _recommend_llm(config, c, tokens_per_s, ttft, batch, prompt, generate, max_devices, catalog, no_calibration,
                   as_json):
    from ..api import calibration_for
    from ..errors import InputError
    from ..llm import load_config
    from ..recommend import recommend_llm
    from ..units import parse_latency_s

    if tokens_per_s is not None and tokens_per_s <= 0:
        raise InputError(f"--tokens-per-s must be greater than zero, got {tokens_per_s}")
    cfg = load_config(config)
    res = recommend_llm(cfg, list(catalog), c, tokens_per_s=tokens_per_s,
                        ttft_s=parse_latency_s(ttft) if ttft else None, batch=batch, prompt=prompt,
                        generate=generate, max_devices=max_devices,
                        calibration_of=lambda hw: calibration_for(hw, use=not no_calibration))
    if as_json:
        echo_json(res.model_dump())
        return
    from ..render.recommend import llm_recommendations_table, rejected_table

    out = console()
    out.print(llm_recommendations_table(res, cfg.name if hasattr(cfg, "name") else str(config)))
    if res.rejected:
        out.print(rejected_table(res))
