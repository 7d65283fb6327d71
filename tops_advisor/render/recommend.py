"""Rich rendering of a recommendation: the table people read in five seconds, then the rejections."""

from __future__ import annotations

from rich.table import Table

from ..recommend import RecommendResult
from ..units import format_seconds


def recommendations_table(res: RecommendResult) -> Table:
    t = Table(title=f"Recommended ({'; '.join(res.notes)})", title_justify="left")
    for col in ("#", "device", "dtype", "batch", "latency", "samples/s", "TOPS", "util", "bound", "samples/s/W",
                "$ list", "samples/s/k$", "cal"):
        t.add_column(col, justify="left" if col in ("device", "dtype", "bound") else "right")
    for i, r in enumerate(res.recommendations, 1):
        t.add_row(str(i), r.hardware, r.dtype, str(r.batch), format_seconds(r.latency_s),
                  f"{r.throughput_per_s:,.0f}", f"{r.attainable_ops_per_s / 1e12:.1f}", f"{r.utilisation:.0%}",
                  r.bound, f"{r.throughput_per_watt:,.2f}",
                  f"{r.price_usd:,.0f}" if r.price_usd else "-",
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
