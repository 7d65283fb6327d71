"""Roofline chart: the device's roofs, ridge points, operators sized by their time, and the whole model."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import InputError
from ..formatting import fmt_bytes, fmt_number, fmt_tops, format_seconds, sig3
from ..roofline import DevicePerf, Prediction

_COLORS = {"compute": "#d62728", "memory": "#1f77b4", "overhead": "#7f7f7f"}


def check_plot_path(path: str | Path) -> Path:
    """Fail early (before any work) when the plot cannot be written."""
    path = Path(path)
    if path.suffix.lower() not in (".png", ".svg", ".pdf"):
        raise InputError(f"plot path {path} must end in .png, .svg or .pdf")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise InputError(f"cannot write plot {path}: directory {parent} does not exist")
    import os

    if not os.access(parent, os.W_OK):
        raise InputError(f"cannot write plot {path}: directory {parent} is not writable")
    return path


# One line style per precision roof, so that roofs a few percent apart (bf16 825 over fp16 794 TOPS on an H200)
# stay distinguishable: each its own colour and dash pattern; the prediction's own precision is drawn solid.
_ROOF_STYLES = {"fp32": ("#9467bd", (0, (1, 1))), "tf32": ("#8c564b", (0, (3, 1, 1, 1))),
                "fp16": ("#2ca02c", (0, (5, 2))), "bf16": ("#ff7f0e", (0, (2, 2))),
                "fp8": ("#e377c2", (0, (6, 2, 1, 2))), "int8": ("#17becf", (0, (4, 1, 1, 1, 1, 1)))}
_SIZE_NOTE = "bubble area: the operator's share of the device time (largest = {largest})"


def roofline_plot(pred: Prediction, perf: DevicePerf, path: str | Path) -> Path:
    """Write the chart to ``path`` (png/svg/pdf): the memory roof (labelled with its bandwidth), one roof per
    precision (labelled with its rate and ridge), the operators as bubbles sized by their time and coloured by
    what binds them, and the whole model; every line has a legend entry."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = check_plot_path(path)
    fig = roofline_figure(pred, perf)
    try:
        fig.savefig(path, bbox_inches="tight")
    except OSError as exc:
        raise InputError(f"cannot write plot {path}: {exc.strerror or exc}") from None
    finally:
        plt.close(fig)
    return path


def roofline_figure(pred: Prediction, perf: DevicePerf):
    """The chart as a matplotlib figure (the caller saves and closes it)."""
    import matplotlib.pyplot as plt

    timed = [o for o in pred.ops if o.latency_s > 0 and o.bytes > 0]
    # operators with no arithmetic (copies, pads, layout changes) have no place on the intensity axis
    ops = [o for o in timed if o.flops > 0]
    data_only = [o for o in timed if o.flops <= 0]
    fig, ax = plt.subplots(figsize=(11, 6), dpi=120)
    intens = np.array([o.flops / o.bytes for o in ops])
    lo = max(min(intens.min() if len(intens) else 0.1, 0.1) / 2, 1e-2)
    x = np.logspace(np.log10(lo), 4, 200)
    _draw_roofs(ax, pred, perf, x)
    _draw_operators(ax, pred, ops, timed, data_only)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (operations per byte)")
    ax.set_ylabel("attainable TOPS (1e12 operations/s)")
    ax.set_title(f"{pred.workload} on {perf.hardware.name}: batch {pred.batch}, {pred.dtype}, {pred.mode} mode\n"
                 f"{format_seconds(pred.latency_s)}, {pred.bound}-bound, {pred.utilisation:.0%} of peak"
                 + (" (calibrated)" if pred.calibrated else " (datasheet defaults)"), fontsize=10)
    ax.grid(True, which="both", lw=0.3, alpha=0.5)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    fig.tight_layout()
    return fig


def _draw_roofs(ax, pred: Prediction, perf: DevicePerf, x) -> None:
    """The memory slope once, then each precision's flat roof from its ridge, in its own style."""
    hw, bw = perf.hardware, perf.bandwidth_bytes_per_s
    shown = [p for p in ("fp32", "tf32", "fp16", "bf16", "fp8", "int8") if p in perf.matrix_ops_per_s]
    if pred.precision not in shown and pred.precision in perf.matrix_ops_per_s:
        shown.append(pred.precision)
    top = max((perf.matrix_ops_per_s[p] for p in shown), default=bw * x[-1])
    slope_x = x[bw * x <= top * 1.05]
    where = "calibrated" if perf.calibrated else "datasheet"
    ax.plot(slope_x, bw * slope_x / 1e12, color="k", lw=1.4,
            label=f"memory roof: {fmt_bytes(bw)}/s ({where}); slope = bandwidth")
    for p in shown:
        peak = perf.matrix_ops_per_s[p]
        ridge = peak / bw
        color, dashes = _ROOF_STYLES.get(p, ("#7f7f7f", (0, (1, 2))))
        own = p == pred.precision
        roof_x = x[x >= ridge]
        ax.plot(roof_x, np.full_like(roof_x, peak / 1e12), color=color, ls="-" if own else dashes,
                lw=2.2 if own else 1.3, zorder=2 if own else 3, label=f"{p} roof {fmt_tops(peak)} TOPS, ridge {sig3(ridge)} op/B"
                                               + (" (this prediction)" if own else ""))
        if own and hw.peak_ops_per_s(p):
            ax.axhline(hw.peak_ops_per_s(p) / 1e12, color=color, lw=0.8, ls=(0, (8, 4)), alpha=0.7,
                       label=f"{p} datasheet peak {fmt_number(hw.dense_tops[p])} TOPS")


def _draw_operators(ax, pred: Prediction, ops, timed, data_only) -> None:
    """The operators as bubbles (area by time, colour by bound), the whole model as a star, and legend notes
    for what is not drawn and what a bubble's size means."""
    times = np.array([o.latency_s for o in timed])
    sizes = 20 + 400 * np.array([o.latency_s for o in ops]) / times.max() if len(ops) else []
    intens = [o.flops / o.bytes for o in ops]
    ax.scatter(intens, [o.attainable_ops_per_s / 1e12 + 1e-6 for o in ops], s=sizes,
               c=[_COLORS[o.bound] for o in ops], alpha=0.5, edgecolors="none")
    for bound, color in _COLORS.items():
        ax.scatter([], [], c=color, label=f"operators bound by {bound}")
    if len(ops):
        largest = max(ops, key=lambda o: o.latency_s)
        ax.scatter([], [], s=0, c="none", label=_SIZE_NOTE.format(
            largest=f"{format_seconds(largest.latency_s)}, {largest.name.removeprefix('aten.')}"))
    if data_only:
        ax.scatter([], [], s=0, c="none", label=f"not drawn: {len(data_only)} data-movement operators (no "
                                                f"arithmetic), {format_seconds(sum(o.latency_s for o in data_only))}")
    model_i = pred.flops / pred.bytes if pred.bytes else 1.0
    ax.scatter([model_i], [pred.attainable_ops_per_s / 1e12], marker="*", s=350, c="gold",
               edgecolors="k", zorder=5, label=f"whole model: {fmt_tops(pred.attainable_ops_per_s)} TOPS")
