"""`tops-advisor llm`: an LLM's prefill, decode, memory and devices, from its config.json or a preset."""

from __future__ import annotations

from pathlib import Path

import click

from ..render.console import console
from .common import catalog_option, echo_json, get_catalog, json_option, one_device_option
from .llm_options import llm_precision_options


@click.command()
@click.argument("config")
@one_device_option()
@click.option("--phase", type=click.Choice(["prefill", "decode"]), default="decode", show_default=True,
              help="The pass whose latency is reported: a prefill of --context tokens, or one decode step.")
@click.option("--batch", "-b", type=int, default=1, show_default=True, help="Sequences processed together.")
@click.option("--context", type=int, default=None,
              help="Tokens already cached (decode) or the prompt length (prefill). [default: 1024]")
@click.option("--prompt", type=int, default=None, help="Prompt tokens of an end-to-end request (TTFT).")
@click.option("--generate", type=int, default=None, help="Output tokens of an end-to-end request. [default: 128]")
@click.option("--mode", type=click.Choice(["graph", "eager"]), default="graph", show_default=True,
              help="graph: CUDA graph replay (no host launch cost); eager: plain PyTorch.")
@click.option("--tp", type=int, default=1, show_default=True, help="Tensor parallel over N devices of this kind.")
@llm_precision_options
@click.option("--calibration", "calibration_path", type=click.Path(path_type=Path),
              help="Calibration file from `tops-advisor probe` (default: saved or shipped one for the device).")
@click.option("--no-calibration", is_flag=True, help="Use datasheet defaults even if a calibration exists.")
@click.option("--strict", is_flag=True, help="Refuse a config with keys that may change the cost but are not modelled.")
@catalog_option
@json_option
def llm(config, hardware_name, phase, batch, context, prompt, generate, weight_dtype, act_dtype, kv_dtype, mode,
        tp, kernels, calibration_path, no_calibration, strict, catalog_dirs, as_json):
    """Predict an LLM's prefill and decode on one device kind: CONFIG is a config.json or a preset
    (llama2-7b, llama2-13b, llama2-70b, llama3-8b, llama3-70b, mistral-7b, mixtral-8x7b, gpt3-175b)."""
    from ..accuracy import llm_expected_error
    from ..api import calibration_for
    from ..llm import analyze_llm, load_config
    from ..llm.analysis import precision_for
    from ..llm.engines import kernel_setup
    from ..render.progress import progress

    cfg = load_config(config, strict=strict)
    hw = get_catalog(catalog_dirs).get(hardware_name)
    precision = precision_for(hw, weight_dtype, act_dtype, kv_dtype)
    cal, source = calibration_for(hw, calibration_path, use=not no_calibration)
    k = kernel_setup(kernels, hw, precision, cal, source)  # an engine profile: its weight format and kernels
    with progress(f"predicting {getattr(cfg, 'name', config)} on {hw.id}", enabled=not as_json):
        result = analyze_llm(cfg, hw, batch=batch, phase=phase, context=context, prompt=prompt, generate=generate,
                             precision=k.precision, tp=tp, mode=mode, layout=k.layout, calibration=cal,
                             predictor=k.predictor)
    band = llm_expected_error(hw, cal is not None)
    if as_json:
        from ..render.json_units import to_json

        echo_json({**to_json(result), "calibration": source or None, "expected_error": to_json(band)})
        return
    from ..render.llm import render_llm

    render_llm(result, hw, source, console(), band=band)
