"""Roofline chart: the device's roofs, ridge points, operators sized by their time, and the whole model."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import InputError
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


def roofline_plot(pred: Prediction, perf: DevicePerf, path: str | Path) -> Path:
    """Write the chart to ``path`` (png/svg/pdf)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = check_plot_path(path)
    hw = perf.hardware
    timed = [o for o in pred.ops if o.latency_s > 0 and o.bytes > 0]
    # operators with no arithmetic (copies, pads, layout changes) have no place on the intensity axis
    ops = [o for o in timed if o.flops > 0]
    data_only = [o for o in timed if o.flops <= 0]
    fig, ax = plt.subplots(figsize=(9, 6), dpi=120)
    intens = np.array([o.flops / o.bytes for o in ops])
    lo = max(min(intens.min() if len(intens) else 0.1, 0.1) / 2, 1e-2)
    x = np.logspace(np.log10(lo), 4, 200)
    bw = perf.bandwidth_bytes_per_s
    shown = [p for p in ("fp32", "tf32", "fp16", "bf16", "fp8", "int8") if p in perf.matrix_ops_per_s]
    if pred.precision not in shown and pred.precision in perf.matrix_ops_per_s:
        shown.append(pred.precision)
    for p in shown:
        peak = perf.matrix_ops_per_s[p]
        style = "-" if p == pred.precision else ":"
        ax.plot(x, np.minimum(peak, bw * x) / 1e12, style, lw=1.6 if style == "-" else 1.0,
                label=f"{p} attainable {peak / 1e12:.0f} TOPS (ridge {peak / bw:.0f} op/B)")
        if p == pred.precision and hw.peak_ops_per_s(p):
            ax.axhline(hw.peak_ops_per_s(p) / 1e12, color="k", lw=0.8, ls="--",
                       label=f"{p} datasheet {hw.dense_tops[p]:g} TOPS")
    ax.plot(x, bw * x / 1e12, color="k", lw=0.5, alpha=0.4)
    times = np.array([o.latency_s for o in timed])
    sizes = 20 + 400 * np.array([o.latency_s for o in ops]) / times.max() if len(ops) else []
    ax.scatter(intens, [o.attainable_ops_per_s / 1e12 + 1e-6 for o in ops], s=sizes,
               c=[_COLORS[o.bound] for o in ops], alpha=0.5, edgecolors="none")
    for bound, color in _COLORS.items():
        ax.scatter([], [], c=color, label=f"operators bound by {bound}")
    if data_only:
        ax.scatter([], [], c="none", label=f"not drawn: {len(data_only)} data-movement operators (no arithmetic), "
                                           f"{sum(o.latency_s for o in data_only) * 1e6:.0f} us")
    model_i = pred.flops / pred.bytes if pred.bytes else 1.0
    ax.scatter([model_i], [pred.attainable_ops_per_s / 1e12], marker="*", s=350, c="gold",
               edgecolors="k", zorder=5, label=f"whole model: {pred.attainable_ops_per_s / 1e12:.1f} TOPS")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (operations per byte)")
    ax.set_ylabel("attainable TOPS (1e12 operations/s)")
    ax.set_title(f"{pred.workload} on {hw.name}: batch {pred.batch}, {pred.dtype}, {pred.mode} mode\n"
                 f"{pred.latency_s * 1e3:.3g} ms, {pred.bound}-bound, {pred.utilisation:.0%} of peak"
                 + (" (calibrated)" if pred.calibrated else " (datasheet defaults)"), fontsize=10)
    ax.grid(True, which="both", lw=0.3, alpha=0.5)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    try:
        fig.savefig(path)
    except OSError as exc:
        raise InputError(f"cannot write plot {path}: {exc.strerror or exc}") from None
    finally:
        plt.close(fig)
    return path
