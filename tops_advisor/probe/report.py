"""Turn probe results into reports: plain data, the ``--json`` output and what ``render/probe.py`` prints.

``probe_report``: measured vs datasheet per precision, bandwidth, overheads, card state, warnings.
``links_report``: the collectives and peer copies of ``probe --all-gpus``.
"""

from __future__ import annotations

from typing import Any

from ..errors import TopsAdvisorError
from ..formatting import size_name
from .kit import device_label
from .nvml import SLOWDOWN_REASONS
from .runner import ProbeResult

# Warn when a measured rate is below this fraction of the datasheet (the article saw 60-80% as normal).
LOW_FRACTION = 0.5
# Warn when the card's maximum SM clock is below this fraction of the catalog's boost clock.
LOW_CLOCK_FRACTION = 0.9
# Warn when the card's power limit (NVML) is below this fraction of the catalog's TDP. A default, not a
# sourced figure: a limit a few percent under the TDP is a board or driver variant, not worth a warning;
# one 10% or more under it was set down (nvidia-smi -pl, a cloud's cap) and costs sustained clocks.
LOW_POWER_LIMIT_FRACTION = 0.9


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
        if hw is not None and f.power_limit_w and f.power_limit_w < LOW_POWER_LIMIT_FRACTION * hw.tdp_w:
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
        "state": result.facts.model_dump() if result.facts else None,
        "environment": result.environment,
        "precisions": precisions, "bandwidth": bandwidth,
        "kernel_eager_us": None if result.kernel_eager_s is None else result.kernel_eager_s * 1e6,
        "kernel_graph_us": None if result.kernel_graph_s is None else result.kernel_graph_s * 1e6,
        "module_call_us": None if result.module_call_s is None else result.module_call_s * 1e6,
        "sustained": result.sustained.model_dump(exclude={"samples"}) if result.sustained else None,
        "warnings": probe_warnings(result, hw), "notes": list(result.notes),
    }


def links_report(links) -> dict[str, Any]:
    """Plain data for ``--json`` and the table, from a calibration's ``Links``."""
    from .topology import describe

    return {"world_size": links.world_size, "backend": links.backend, "device": links.device,
            "dtype": links.dtype, "link_kind": links.link_kind or None,
            "all_reduce_busbw_gb_s": links.all_reduce_busbw_gb_s,
            "all_gather_busbw_gb_s": links.all_gather_busbw_gb_s,
            "all_reduce_latency_us": links.all_reduce_latency_us,
            "all_reduce_graph_latency_us": links.all_reduce_graph_latency_us,
            "topology": describe(links.topology) if links.topology else None,
            "collectives": [{"collective": c, "size": size_name(s.bytes), **s.model_dump()}
                            for c, samples in (("all_reduce", links.small_all_reduce + links.all_reduce),
                                               ("all_reduce_graph", links.small_all_reduce_graph),
                                               ("all_gather", links.all_gather)) for s in samples],
            "p2p": [c.model_dump() for c in links.p2p], "notes": list(links.notes)}
