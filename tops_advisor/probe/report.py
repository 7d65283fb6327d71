"""Turn a ProbeResult into a report: measured vs datasheet per precision, bandwidth, overheads, card state,
warnings. ``probe_report`` gives plain data (the ``--json`` output); ``render_probe`` prints it with rich.
"""

from __future__ import annotations

from typing import Any

from ..errors import TopsAdvisorError
from .kit import device_label
from .nvml import SLOWDOWN_REASONS
from .runner import ProbeResult

# Warn when a measured rate is below this fraction of the datasheet (the article saw 60-80% as normal).
LOW_FRACTION = 0.5
# Warn when the card's maximum SM clock is below this fraction of the catalog's boost clock.
LOW_CLOCK_FRACTION = 0.9


def _hardware(result: ProbeResult, catalog):
    if catalog is None or not result.matched_catalog:
        return None
    try:
        return catalog.get(result.hardware)
    except TopsAdvisorError:
        return None


def probe_warnings(result: ProbeResult, hw=None) -> list[str]:
    """The things a user should look at: throttling, a slow PCIe link, low clocks, rates far below datasheet."""
    out = []
    f = result.facts
    if f is not None:
        slow = [r for r in f.throttle_reasons if r in SLOWDOWN_REASONS]
        if slow:
            out.append(f"the card reported throttling at the start: {', '.join(slow)}")
        if f.pcie_gen and f.pcie_gen_max and f.pcie_gen < f.pcie_gen_max:
            out.append(f"PCIe link at gen {f.pcie_gen}, below its maximum gen {f.pcie_gen_max} "
                       "(links idle down to save power; the h2d figure shows whether it matters under load)")
        if f.pcie_width and f.pcie_width_max and f.pcie_width < f.pcie_width_max:
            out.append(f"PCIe link x{f.pcie_width}, narrower than its maximum x{f.pcie_width_max}")
        if hw is not None and hw.boost_clock_mhz and f.sm_clock_max_mhz and \
                f.sm_clock_max_mhz < LOW_CLOCK_FRACTION * hw.boost_clock_mhz:
            out.append(f"maximum SM clock {f.sm_clock_max_mhz:.0f} MHz is far below the boost clock "
                       f"{hw.boost_clock_mhz:.0f} MHz")
        if hw is not None and f.power_limit_w and f.power_limit_w < 0.9 * hw.tdp_w:
            out.append(f"power limit {f.power_limit_w:.0f} W is below the card's {hw.tdp_w:.0f} W")
    s = result.sustained
    if s is not None and s.throttled:
        why = ", ".join(s.throttle_reasons) or "no reason reported"
        out.append(f"throttled under sustained load ({why}): {s.tops_start:.0f} -> {s.tops_end:.0f} TOPS")
    if hw is not None:
        for p, r in result.best.items():
            peak = hw.dense_tops.get(p)
            if peak and r.tops < LOW_FRACTION * peak:
                out.append(f"{p} reaches only {100 * r.tops / peak:.0f}% of the datasheet's {peak:g} TOPS")
        if "copy" in result.bandwidth_gb_s and \
                result.bandwidth_gb_s["copy"] < LOW_FRACTION * hw.memory_bandwidth_gb_s:
            out.append(f"copy bandwidth is {result.bandwidth_gb_s['copy']:.0f} GB/s, under half the datasheet's "
                       f"{hw.memory_bandwidth_gb_s:g} GB/s")
    return out


def probe_report(result: ProbeResult, catalog=None) -> dict[str, Any]:
    """Plain data for JSON and for rendering."""
    hw = _hardware(result, catalog)
    precisions = []
    for p, r in result.best.items():
        peak = hw.dense_tops.get(p) if hw is not None else None
        art = result.article.get(p)
        precisions.append({
            "precision": p, "measured_tops": r.tops, "best_shape": r.shape,
            "article_8192_tops": art.tops if art else None, "datasheet_tops": peak,
            "fraction_of_datasheet": r.tops / peak if peak else None,
        })
    bw = dict(result.bandwidth_gb_s)
    bandwidth = []
    link = hw.pcie_bandwidth_bytes_per_s / 1e9 if hw is not None and hw.pcie_bandwidth_bytes_per_s else None
    for what, gb_s in bw.items():
        ref = (hw.memory_bandwidth_gb_s if what in ("copy", "read", "elementwise") else link) if hw else None
        bandwidth.append({"what": what, "gb_s": gb_s, "datasheet_gb_s": ref,
                          "fraction_of_datasheet": gb_s / ref if ref else None})
    return {
        "device": result.facts.name if result.facts and result.facts.name else device_label(result.environment),
        "hardware": result.hardware, "matched_catalog": result.matched_catalog, "backend": result.backend,
        "mode": result.mode, "interrupted": result.interrupted,
        "state": result.facts.to_dict() if result.facts else None,
        "environment": result.environment,
        "precisions": precisions, "bandwidth": bandwidth,
        "kernel_eager_us": None if result.kernel_eager_s is None else result.kernel_eager_s * 1e6,
        "kernel_graph_us": None if result.kernel_graph_s is None else result.kernel_graph_s * 1e6,
        "sustained": result.sustained.model_dump(exclude={"samples"}) if result.sustained else None,
        "warnings": probe_warnings(result, hw), "notes": list(result.notes),
    }


def _num(x, fmt="{:.1f}") -> str:
    return "-" if x is None else fmt.format(x)


def render_probe(report: dict[str, Any], console) -> None:
    """Rich tables on ``console``."""
    from rich.table import Table

    title = f"{report['device']} -> {report['hardware']}" + ("" if report["matched_catalog"] else " (not in catalog)")
    t = Table(title=f"Matrix throughput: {title}")
    for col in ("precision", "measured TOPS", "best shape", "8192^3 TOPS", "datasheet TOPS", "% of datasheet"):
        t.add_column(col, justify="left" if col in ("precision", "best shape") else "right")
    small = report["backend"] == "cpu"
    fmt = "{:.3g}" if small else "{:.1f}"
    for row in report["precisions"]:
        frac = row["fraction_of_datasheet"]
        t.add_row(row["precision"], _num(row["measured_tops"], fmt), row["best_shape"],
                  _num(row["article_8192_tops"], fmt), _num(row["datasheet_tops"], "{:g}"),
                  _num(None if frac is None else 100 * frac, "{:.0f}%"))
    console.print(t)
    b = Table(title="Memory (GB = 1e9 bytes; copy counts bytes read + written)")
    for col in ("transfer", "GB/s", "datasheet GB/s", "% of datasheet"):
        b.add_column(col, justify="left" if col == "transfer" else "right")
    for row in report["bandwidth"]:
        frac = row["fraction_of_datasheet"]
        b.add_row(row["what"], _num(row["gb_s"], "{:.0f}" if not small else "{:.3g}"),
                  _num(row["datasheet_gb_s"], "{:g}"), _num(None if frac is None else 100 * frac, "{:.0f}%"))
    console.print(b)
    console.print(f"Per-kernel cost: eager {_num(report['kernel_eager_us'], '{:.2f}')} us, "
                  f"CUDA graph {_num(report['kernel_graph_us'], '{:.2f}')} us")
    s = report["sustained"]
    if s:
        console.print(f"Sustained {s['precision']} for {s['seconds']:.0f} s: {s['tops_start']:.1f} -> "
                      f"{s['tops_end']:.1f} TOPS (median {s['tops_median']:.1f}); SM clock "
                      f"{_num(s['sm_clock_mhz_min'], '{:.0f}')}-{_num(s['sm_clock_mhz_max'], '{:.0f}')} MHz; "
                      f"power {_num(s['power_w_median'], '{:.0f}')} W; max {_num(s['temperature_c_max'], '{:.0f}')} C; "
                      f"{_num(s['tops_per_watt'], '{:.2f}')} TOPS/W; throttled: {'yes' if s['throttled'] else 'no'}")
    st = report["state"]
    if st:
        console.print(f"Card: driver {st['driver_version']}, CUDA {st['cuda_driver_version']}, SM clock "
                      f"{_num(st['sm_clock_mhz'], '{:.0f}')}/{_num(st['sm_clock_max_mhz'], '{:.0f}')} MHz, memory clock "
                      f"{_num(st['mem_clock_mhz'], '{:.0f}')}/{_num(st['mem_clock_max_mhz'], '{:.0f}')} MHz, power "
                      f"{_num(st['power_draw_w'], '{:.0f}')}/{_num(st['power_limit_w'], '{:.0f}')} W, "
                      f"{_num(st['temperature_c'], '{:.0f}')} C, PCIe gen {st['pcie_gen']}/{st['pcie_gen_max']} "
                      f"x{st['pcie_width']}/{st['pcie_width_max']}; torch {report['environment'].get('torch')}")
    for w in report["warnings"]:
        console.print(f"[yellow]warning:[/yellow] {w}")
    for n in report["notes"]:
        console.print(f"note: {n}", markup=False)
