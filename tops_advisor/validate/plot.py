"""Parity plot: predicted against measured latency, with the parity line and a +-15% band (matplotlib)."""

from __future__ import annotations

from pathlib import Path

_SERIES = (("default_s", "#999999", "datasheet defaults"), ("calibrated_s", "#d62728", "calibrated"))
_MARKERS = {"graph": "o", "eager": "^"}


def parity_plot(rows: list[dict], path: str | Path, title: str = "", highlight: set[str] | None = None) -> Path:
    """``rows``: dicts with mode, measured_s, default_s, calibrated_s (None allowed) and model. Models in
    ``highlight`` (e.g. a held-out family) are drawn with a black edge."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = Path(path)
    ok = [r for r in rows if r.get("measured_s")]
    fig, ax = plt.subplots(figsize=(6.5, 6), dpi=120)
    for mode, marker in _MARKERS.items():
        for key, color, label in _SERIES:
            for special in (False, True):
                pts = [(r["measured_s"] * 1e3, r[key] * 1e3) for r in ok
                       if r["mode"] == mode and r.get(key) and (r.get("model") in (highlight or ())) == special]
                if pts:
                    ax.scatter(*zip(*pts, strict=True), marker=marker, c=color, alpha=0.6, s=22,
                               edgecolors="k" if special else "none",
                               label=f"{mode}, {label}" + (" (held-out family)" if special else ""))
    if ok:
        lo = min(r["measured_s"] for r in ok) * 1e3 / 2
        hi = max(r["measured_s"] for r in ok) * 1e3 * 2
        ax.plot([lo, hi], [lo, hi], "k-", lw=0.8, label="parity")
        ax.fill_between([lo, hi], [lo * 0.85, hi * 0.85], [lo * 1.15, hi * 1.15], color="k", alpha=0.07,
                        label="+-15%")
        ax.set_xscale("log")
        ax.set_yscale("log")
    ax.set_xlabel("measured latency (ms)")
    ax.set_ylabel("predicted latency (ms)")
    if title:
        ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(True, which="both", lw=0.3, alpha=0.5)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
