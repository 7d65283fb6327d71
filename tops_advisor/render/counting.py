"""Rendering of a counted Workload: rows per module or per operator, and totals. Decimal units
(G operations = 1e9, MB = 1e6 bytes); one operation is one arithmetic op (a multiply-add is 2)."""

from __future__ import annotations

from dataclasses import dataclass, field

from rich.table import Table

from ..formatting import fmt_bytes, fmt_intensity, fmt_ops
from ..workload import Workload
from .tables import name_column, new_table, number_column

TOP_LEVEL = "(top level)"


@dataclass
class Group:
    """Operators summed under one key (a module path or an operator name)."""

    key: str
    calls: int = 0
    flops: float = 0.0
    bytes: float = 0.0
    param_bytes: float = 0.0
    kernels: int = 0
    kinds: dict[str, int] = field(default_factory=dict)


def group_ops(w: Workload, by: str = "module", depth: int | None = 2) -> list[Group]:
    """Sum operators by module path (cut to ``depth`` components; None: the full path) or by operator
    name (``by="op"``), in order of first appearance (modules) or by operations (operators)."""
    groups: dict[str, Group] = {}
    for op in w.ops:
        if by == "op":
            key = op.name.removeprefix("aten.")
        else:
            parts = op.module.split(".") if op.module else []
            key = ".".join(parts[:depth] if depth else parts) or TOP_LEVEL
        g = groups.setdefault(key, Group(key))
        g.calls += 1
        g.flops += op.flops
        g.bytes += op.bytes
        g.param_bytes += op.param_bytes
        g.kernels += op.kernels
        g.kinds[op.kind] = g.kinds.get(op.kind, 0) + 1
    out = list(groups.values())
    if by == "op":
        out.sort(key=lambda g: (-g.flops, -g.bytes))
    return out


def ops_table(w: Workload, by: str = "module", depth: int | None = 2) -> Table:
    """One row per module (or operator), then totals: operators (calls), operations, share, bytes, weight bytes
    and operations per byte; per operator also its kind. Kernels are in ``summary_lines`` (one per operator but
    for a few fused or split ones), which keeps the table within 80 columns."""
    first = "operator" if by == "op" else "module"
    title = f"{w.name}: batch {w.batch}, {w.dtype}" + (f" ({w.source})" if w.source else "")
    t = new_table(title, show_footer=True)
    total = w.flops
    name_column(t, first, min_width=12, footer="total")
    number_column(t, "calls" if by == "op" else "ops", footer=str(len(w.ops)))
    number_column(t, "operations", footer=fmt_ops(total))
    number_column(t, "share", footer="100%" if total else "-")
    number_column(t, "bytes", footer=fmt_bytes(w.bytes))
    number_column(t, "weights", footer=fmt_bytes(sum(op.param_bytes for op in w.ops)))
    number_column(t, "ops/\nbyte", footer=fmt_intensity(total, w.bytes))
    if by == "op":
        name_column(t, "kind", min_width=8)
    for g in group_ops(w, by, depth):
        row = [g.key, str(g.calls), fmt_ops(g.flops), f"{g.flops / total:.1%}" if total else "-",
               fmt_bytes(g.bytes), fmt_bytes(g.param_bytes), fmt_intensity(g.flops, g.bytes)]
        if by == "op":
            row.append(", ".join(g.kinds))
        t.add_row(*row)
    return t


def summary_lines(w: Workload) -> list[str]:
    """The totals a reader wants first, one per line."""
    lines = [
        f"operations  {fmt_ops(w.flops)} ({w.flops:.4g}; a multiply-add counts 2)",
        f"bytes       {fmt_bytes(w.bytes)} minimal traffic, of which {fmt_bytes(sum(o.param_bytes for o in w.ops))} "
        "parameter reads",
        f"params      {w.params:,} ({fmt_bytes(w.param_bytes)} at {w.dtype})",
        f"intensity   {fmt_intensity(w.flops, w.bytes)} operations per byte",
        f"kernels     {w.kernels} launches in eager PyTorch (estimate)",
        f"activations {fmt_bytes(w.activation_peak_bytes)} peak alive at once (estimate), "
        f"inputs {fmt_bytes(w.input_bytes)}",
    ]
    if w.unsupported_ops:
        lines.append("unsupported " + ", ".join(f"{k} x{v}" for k, v in w.unsupported_ops.items())
                     + " (counted as zero operations)")
    lines += [f"note        {n}" for n in w.notes]
    lines += [f"assumed     {a} (--strict refuses)" for a in w.assumptions]
    return lines


def unsupported_warning(w: Workload) -> str | None:
    """One stderr line naming operators without a formula, or None."""
    if not w.unsupported_ops:
        return None
    listing = ", ".join(f"{k} ({v} call{'s' if v > 1 else ''})" for k, v in w.unsupported_ops.items())
    return (f"warning: no counting formula for {listing}: counted as zero operations (bytes still counted); "
            "--strict makes this an error")
