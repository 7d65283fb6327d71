"""Rich rendering of a recommendation: the table people read in five seconds, then the rejections."""

from __future__ import annotations

from rich.table import Table

from ..formatting import format_seconds
from ..recommend import RecommendResult


def recommendations_table(res: RecommendResult) -> Table:
    t = Table(title=f"Recommended ({'; '.join(res.notes)})", title_justify="left")
    for col in ("#", "device", "dtype", "batch", "latency", "samples/s", "TOPS (of peak)", "bound", "per W",
                "per k$", "calibrated"):
        t.add_column(col, justify="left" if col in ("device", "dtype", "bound", "calibrated") else "right",
                     no_wrap=True)
    for i, r in enumerate(res.recommendations, 1):
        t.add_row(str(i), r.hardware, r.dtype, str(r.batch), format_seconds(r.latency_s),
                  f"{r.throughput_per_s:,.0f}", f"{r.attainable_ops_per_s / 1e12:.1f} ({r.utilisation:.0%})",
                  r.bound, f"{r.throughput_per_watt:,.1f}",
                  f"{r.throughput_per_kusd:,.0f}" if r.throughput_per_kusd else "-",
                  "yes" if r.calibrated else "no")
    return t


def advice_lines(res: RecommendResult, n: int = 3) -> list[str]:
    return [f"{r.hardware}: {r.advice[0]}" for r in res.recommendations[:n] if r.advice]


def rejected_table(res: RecommendResult) -> Table:
    t = Table(title="Rejected", title_justify="left")
    t.add_column("device")
    t.add_column("why")
    for r in res.rejected:
        t.add_row(r.hardware, r.reason)
    return t


def llm_recommendations_table(res: RecommendResult, model: str) -> Table:
    t = Table(title=f"{model}: recommended ({'; '.join(res.notes)})", title_justify="left")
    for col in ("#", "device", "devices", "tokens/s", "per token", "TTFT", "GB/device", "bound", "tokens/s/kW",
                "calibrated"):
        t.add_column(col, justify="left" if col in ("device", "bound", "calibrated") else "right", no_wrap=True)
    for i, r in enumerate(res.recommendations, 1):
        t.add_row(str(i), r.hardware, str(r.devices), f"{r.tokens_per_s:,.1f}", format_seconds(r.tpot_s),
                  format_seconds(r.ttft_s), f"{r.memory_required_bytes / 1e9:,.1f}", r.bound,
                  f"{r.tokens_per_s_per_watt * 1e3:,.1f}", "yes" if r.calibrated else "no")
    return t
