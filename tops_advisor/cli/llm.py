"""`tops-advisor llm`: an LLM's prefill, decode, memory and devices, from its config.json or a preset."""

from __future__ import annotations

from pathlib import Path

import click

from .common import catalog_option, console, echo_json, get_catalog, json_option


@click.command()
@click.argument("config")
@click.option("--hardware", "-H", "hardware_name", required=True, help="Catalog id or alias (e.g. h200, 4090).")
@click.option("--phase", type=click.Choice(["prefill", "decode"]), default="decode", show_default=True,
              help="The pass whose latency is reported: a prefill of --context tokens, or one decode step.")
@click.option("--batch", "-b", type=int, default=1, show_default=True, help="Sequences processed together.")
@click.option("--context", type=int, default=None,
              help="Tokens already cached (decode) or the prompt length (prefill). [default: 1024]")
@click.option("--prompt", type=int, default=None, help="Prompt tokens of an end-to-end request (TTFT).")
@click.option("--generate", type=int, default=None, help="Output tokens of an end-to-end request. [default: 128]")
@click.option("--weight-dtype", default=None,
              help="bf16, fp16, fp8, int8 or int4. [default: bf16, or fp16 on devices without bf16]")
@click.option("--act-dtype", default=None,
              help="What the matrix products compute in: bf16 (default; weight-only quantization), or fp8/int8 "
                   "with matching weights (W8A8).")
@click.option("--kv-dtype", default=None, help="KV-cache storage: bf16, fp16, fp8, int8, int4. [default: bf16]")
@click.option("--mode", type=click.Choice(["graph", "eager"]), default="graph", show_default=True,
              help="graph: CUDA graph replay (no host launch cost); eager: plain PyTorch.")
@click.option("--tp", type=int, default=1, show_default=True, help="Tensor parallel over N devices of this kind.")
@click.option("--kernels", "layout", type=click.Choice(["torch", "fused"]), default="torch", show_default=True,
              help="Kernel layout: plain PyTorch (HF-style, unfused) or a serving engine's fused kernels.")
@click.option("--calibration", "calibration_path", type=click.Path(path_type=Path),
              help="Calibration file from `tops-advisor probe` (default: saved or shipped one for the device).")
@click.option("--no-calibration", is_flag=True, help="Use datasheet defaults even if a calibration exists.")
@catalog_option
@json_option
def llm(config, hardware_name, phase, batch, context, prompt, generate, weight_dtype, act_dtype, kv_dtype, mode,
        tp, layout, calibration_path, no_calibration, catalog_dirs, as_json):
    """Predict an LLM's prefill and decode on one device kind: CONFIG is a config.json or a preset
    (llama2-7b, llama2-13b, llama2-70b, llama3-8b, llama3-70b, mistral-7b, mixtral-8x7b, gpt3-175b)."""
    from ..api import calibration_for
    from ..llm import analyze_llm, load_config
    from ..llm.analysis import precision_for, roofline_predictor

    cfg = load_config(config)
    hw = get_catalog(catalog_dirs).get(hardware_name)
    precision = precision_for(hw, weight_dtype, act_dtype, kv_dtype)
    cal, source = calibration_for(hw, calibration_path, use=not no_calibration)
    result = analyze_llm(cfg, hw, batch=batch, phase=phase, context=context, prompt=prompt, generate=generate,
                         precision=precision, tp=tp, mode=mode, layout=layout, calibration=cal,
                         predictor=roofline_predictor(hw, cal, source))
    if as_json:
        d = result.model_dump()
        d["calibration"] = source or None
        echo_json(d)
        return
    _render(result, hw, source)


def _gb(x: float) -> str:
    return f"{x / 1e9:.3g} GB" if x >= 1e7 else f"{x / 1e6:.2g} MB"


def _render(r, hw, source: str) -> None:
    from rich.table import Table

    from ..units import format_seconds

    m = r.memory
    what = (f"prefill of {r.prefill.context} tokens" if r.phase == "prefill"
            else f"decode step at context {r.decode.context}")
    devices = f"{r.tp} x {hw.name}" if r.tp > 1 else hw.name
    t = Table(title=f"{r.model} on {devices}: {what}, batch {r.batch}, {r.mode} mode, {r.layout} kernels",
              show_header=False, title_justify="left")
    t.add_column(style="bold")
    t.add_column()
    t.add_row("Precision", r.precision.describe())
    t.add_row("Latency", f"{format_seconds(r.latency_s)} per {'prefill' if r.phase == 'prefill' else 'step'} "
                         f"(bound: {r.bound})")
    unit = "prompt tokens/s" if r.phase == "prefill" else "output tokens/s"
    t.add_row("Throughput", f"{r.tokens_per_s:,.1f} {unit} in aggregate"
              + ("" if r.phase == "prefill" else f", {1 / r.tpot_s:,.1f} per request"))
    t.add_row("TTFT", f"{format_seconds(r.ttft_s)} (prefill of {r.prefill.context} tokens, batch {r.batch})")
    t.add_row("Time per output token", f"{format_seconds(r.tpot_s)} (decode at context {r.decode.context})")
    if r.request_latency_s is not None:
        t.add_row("Request", f"{r.prompt} prompt + {r.generate} generated tokens: "
                             f"{format_seconds(r.request_latency_s)}")
    if r.tp > 1:
        t.add_row("Tensor parallel", f"{r.tp} devices over {r.link}: {format_seconds(r.decode.communication_s)} "
                                     f"of all-reduces per decode step, {format_seconds(r.prefill.communication_s)} "
                                     f"per prefill")
    per = " per device" if r.tp > 1 else ""
    t.add_row("Memory" + per, f"{_gb(m.total_bytes)} of {_gb(m.capacity_bytes)}: weights {_gb(m.weights_bytes)}, "
                              f"KV cache {_gb(m.kv_cache_bytes)}, activations {_gb(m.activation_bytes)}, "
                              f"runtime {_gb(m.reserve_bytes)} -> "
                              + ("[green]fits[/green]" if r.fits_memory else "[red]does not fit[/red]"))
    t.add_row("KV cache per token" + per, f"{m.kv_bytes_per_token / 1e3:,.1f} kB")
    if r.max_batch == 0 and r.max_context == 0:
        t.add_row("Largest batch / context", "none: even one short sequence does not fit")
    else:
        t.add_row("Largest batch / context", f"batch {r.max_batch} at this context; {r.max_context} tokens per "
                                             f"sequence at batch {r.batch}")
    t.add_row("Devices needed", "more than 64" if r.devices_needed is None else str(r.devices_needed))
    cross = ("not up to batch 4096" if r.decode_compute_bound_batch is None
             else f"batch {r.decode_compute_bound_batch}")
    ridge = "" if r.gemm_ridge_batch is None else (f" (weight GEMMs alone: ~batch {r.gemm_ridge_batch:.0f}, "
                                                   "the datasheet ridge)")
    t.add_row("Decode turns compute-bound", cross + ridge)
    if source:
        t.add_row("Calibration", source)
    out = console()
    out.print(t)
    for reason in r.reasons:
        out.print(f"[red]Not possible:[/red] {reason}")
    if r.suggestions:
        out.print("What would make it possible:")
    for s in r.suggestions:
        out.print(f"  - {s}")
    for n in r.notes:
        out.print(f"note: {n}")
