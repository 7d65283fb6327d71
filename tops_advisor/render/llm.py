"""Rich rendering of an LLM analysis (``llm.LLMAnalysis``): latency, throughput, memory, devices."""

from __future__ import annotations

from rich.table import Table

from ..accuracy import ErrorBand
from ..formatting import fmt_gb, format_seconds
from ..llm.analysis import CROSSOVER_SEARCH_MAX_BATCH
from ..llm.parallel import MAX_TP
from .tables import FittedTable, bullet


def llm_table(r, hw, source: str) -> Table:
    """The analysis as label/value rows."""
    m = r.memory
    what = (f"prefill of {r.prefill.context} tokens" if r.phase == "prefill"
            else f"decode step at context {r.decode.context}")
    devices = f"{r.tp} x {hw.name}" if r.tp > 1 else hw.name
    t = FittedTable(title=f"{r.model} on {devices}: {what}, batch {r.batch}, {r.mode} mode, {r.layout} kernels",
                    show_header=False, title_justify="left")
    t.add_column(style="bold", overflow="fold", min_width=12)
    t.add_column(overflow="fold", ratio=1)
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
    t.add_row("Memory" + per, f"{fmt_gb(m.total_bytes)} of {fmt_gb(m.capacity_bytes)}: weights {fmt_gb(m.weights_bytes)}, "
                              f"KV cache {fmt_gb(m.kv_cache_bytes)}, activations {fmt_gb(m.activation_bytes)}, "
                              f"runtime {fmt_gb(m.reserve_bytes)} -> "
                              + ("[green]fits[/green]" if r.fits_memory else "[red]does not fit[/red]"))
    t.add_row("KV cache per token" + per, f"{m.kv_bytes_per_token / 1e3:,.1f} kB")
    if r.max_batch == 0 and r.max_context == 0:
        t.add_row("Largest batch / context", "none: even one short sequence does not fit")
    else:
        t.add_row("Largest batch / context", f"batch {r.max_batch} at this context; {r.max_context} tokens per "
                                             f"sequence at batch {r.batch}")
    t.add_row("Devices needed", f"more than {MAX_TP}" if r.devices_needed is None else str(r.devices_needed))
    cross = (f"not up to batch {CROSSOVER_SEARCH_MAX_BATCH}" if r.decode_compute_bound_batch is None
             else f"batch {r.decode_compute_bound_batch}")
    ridge = "" if r.gemm_ridge_batch is None else (f" (weight GEMMs alone: ~batch {r.gemm_ridge_batch:.0f}, "
                                                   "the datasheet ridge)")
    t.add_row("Decode turns compute-bound", cross + ridge)
    why = decode_bound_note(r, hw)
    if why:
        t.add_row("Why compute-bound", why)
    if source:
        t.add_row("Calibration", source)
    return t


def decode_bound_note(r, hw) -> str | None:
    """Why a decode step below the device's ridge is labelled compute-bound, or None when it is not.

    A decode step of a few sequences does few operations per byte, yet the roofline can find it compute-bound:
    its matrix products have one row per sequence, and tensor-core kernels run whole tiles (64 or more rows), so
    the compute time is mostly padding (``roofline/efficiency.py``: GEMM tile efficiency); attention likewise
    runs one query per sequence in blocks of query rows. The label is right about the time, and misleading about
    the cause: the device's arithmetic is not saturated, and a kernel built for that shape (a GEMV, a split-K
    decode attention) would be limited by memory instead."""
    d = r.decode
    peak = hw.peak_ops_per_s(r.precision.act)
    if r.phase != "decode" or r.bound != "compute" or not d.bytes or not peak:
        return None
    intensity = d.flops / d.bytes
    ridge = peak / hw.memory_bandwidth_bytes_per_s
    if intensity >= ridge:
        return None
    useful = d.flops / d.compute_s / peak if d.compute_s else 0.0
    return (f"at batch {r.batch} a step does {intensity:.3g} operations per byte, below the {r.precision.act} ridge "
            f"of {ridge:.0f}: the time is tensor-core tiles run mostly empty (one row per sequence in tiles of 64+ "
            f"rows; attention with one query per sequence), only {useful:.1%} of the {r.precision.act} peak is "
            "useful work; kernels made for this shape (GEMV, split-K decode attention) would be memory-bound")


def render_llm(r, hw, source: str, out, band: ErrorBand | None = None) -> None:
    """The table, then why it is not possible and what would make it possible, the notes, the expected-error
    ``band`` (``accuracy.llm_expected_error``) and the warnings, on the rich console ``out``."""
    out.print(llm_table(r, hw, source))
    for reason in r.reasons:
        out.print(f"[red]Not possible:[/red] {reason}")
    if r.suggestions:
        out.print("What would make it possible:")
    for s in r.suggestions:
        bullet(out, s)
    for n in r.notes:
        bullet(out, n, mark="note:", indent=0)
    if band:
        bullet(out, band.text, mark=" ", style="dim")
    for w in r.warnings:
        bullet(out, w, mark="warning:", indent=0)
