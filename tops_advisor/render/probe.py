"""Rich rendering of the probe's reports (``probe.report.probe_report`` and ``links_report``)."""

from __future__ import annotations

from typing import Any

from ..formatting import fmt_optional
from .tables import bullet, name_column, new_table, number_column, word_column


def render_probe(report: dict[str, Any], console) -> None:
    """Rich tables on ``console``."""
    title = f"{report['device']} -> {report['hardware']}" + ("" if report["matched_catalog"] else " (not in catalog)")
    t = new_table(f"Matrix throughput in TOPS: {title}")
    word_column(t, "precision")
    number_column(t, "measured")
    name_column(t, "best shape", min_width=12)
    number_column(t, "at\n8192^3")
    number_column(t, "data-\nsheet")
    number_column(t, "% of\ndatasheet")
    small = report["backend"] == "cpu"
    fmt = "{:.3g}" if small else "{:.1f}"
    for row in report["precisions"]:
        frac = row["fraction_of_datasheet"]
        t.add_row(row["precision"], fmt_optional(row["measured_tops"], fmt), row["best_shape"],
                  fmt_optional(row["article_8192_tops"], fmt), fmt_optional(row["datasheet_tops"], "{:g}"),
                  fmt_optional(None if frac is None else 100 * frac, "{:.0f}%"))
    console.print(t)
    b = new_table("Memory (GB = 1e9 bytes; copy counts bytes read + written)")
    name_column(b, "transfer", min_width=16)
    number_column(b, "GB/s")
    number_column(b, "datasheet\nGB/s")
    number_column(b, "% of\ndatasheet")
    for row in report["bandwidth"]:
        frac = row["fraction_of_datasheet"]
        b.add_row(row["what"], fmt_optional(row["gb_s"], "{:.0f}" if not small else "{:.3g}"),
                  fmt_optional(row["datasheet_gb_s"], "{:g}"), fmt_optional(None if frac is None else 100 * frac, "{:.0f}%"))
    console.print(b)
    console.print(f"Per-kernel cost: eager {fmt_optional(report['kernel_eager_us'], '{:.2f}')} us, "
                  f"CUDA graph {fmt_optional(report['kernel_graph_us'], '{:.2f}')} us; per module call "
                  f"{fmt_optional(report.get('module_call_us'), '{:.1f}')} us")
    s = report["sustained"]
    if s:
        console.print(f"Sustained {s['precision']} for {s['seconds']:.0f} s: {s['tops_start']:.1f} -> "
                      f"{s['tops_end']:.1f} TOPS (median {s['tops_median']:.1f}); SM clock "
                      f"{fmt_optional(s['sm_clock_mhz_min'], '{:.0f}')}-{fmt_optional(s['sm_clock_mhz_max'], '{:.0f}')} MHz; "
                      f"power {fmt_optional(s['power_w_median'], '{:.0f}')} W; max {fmt_optional(s['temperature_c_max'], '{:.0f}')} C; "
                      f"{fmt_optional(s['tops_per_watt'], '{:.2f}')} TOPS/W; throttled: {'yes' if s['throttled'] else 'no'}")
    st = report["state"]
    if st:
        console.print(f"Card: driver {st['driver_version']}, CUDA {st['cuda_driver_version']}, SM clock "
                      f"{fmt_optional(st['sm_clock_mhz'], '{:.0f}')}/{fmt_optional(st['sm_clock_max_mhz'], '{:.0f}')} MHz, memory clock "
                      f"{fmt_optional(st['mem_clock_mhz'], '{:.0f}')}/{fmt_optional(st['mem_clock_max_mhz'], '{:.0f}')} MHz, power "
                      f"{fmt_optional(st['power_draw_w'], '{:.0f}')}/{fmt_optional(st['power_limit_w'], '{:.0f}')} W, "
                      f"{fmt_optional(st['temperature_c'], '{:.0f}')} C, PCIe gen {st['pcie_gen']}/{st['pcie_gen_max']} "
                      f"x{st['pcie_width']}/{st['pcie_width_max']}; torch {report['environment'].get('torch')}")
    for w in report["warnings"]:
        bullet(console, w, mark="warning:", indent=0, style="yellow")
    for n in report["notes"]:
        bullet(console, n, mark="note:", indent=0)


def render_links(report: dict[str, Any], console) -> None:
    """The collectives table, the best bus bandwidth, the peer copies and the notes on ``console``."""
    title = (f"Peer links: {report['world_size']} ranks, {report['backend']} ({report['device']}, "
             f"{report['dtype']})" + (f", {report['topology']}" if report["topology"] else ""))
    t = new_table(title)
    name_column(t, "collective", min_width=12)
    for col in ("size", "time", "algbw\nGB/s", "busbw\nGB/s"):
        number_column(t, col)
    for row in report["collectives"]:
        t.add_row(row["collective"].replace("_graph", " (graph)").replace("_", "-"), row["size"], f"{row['time_us']:.1f} us",
                  f"{row['algbw_gb_s']:.3g}", f"{row['busbw_gb_s']:.3g}")
    console.print(t)
    line = (f"best bus bandwidth: all-reduce {report['all_reduce_busbw_gb_s']:.3g} GB/s"
            + (f", all-gather {report['all_gather_busbw_gb_s']:.3g} GB/s" if report["all_gather_busbw_gb_s"] else "")
            + f"; smallest all-reduce {report['all_reduce_latency_us']:.1f} us"
            + (f" (in a CUDA graph {report['all_reduce_graph_latency_us']:.1f} us)"
               if report.get("all_reduce_graph_latency_us") else ""))
    console.print(line)
    if report["p2p"]:
        p = new_table("Peer-to-peer copies (one direction)")
        for col in ("from", "to", "GB/s"):
            number_column(p, col)
        word_column(p, "peer access")
        for c in report["p2p"]:
            p.add_row(str(c["src"]), str(c["dst"]), f"{c['gb_s']:.0f}",
                      {True: "yes", False: "no", None: "?"}[c["peer_access"]])
        console.print(p)
    for note in report["notes"]:
        console.print(f"note: {note}")
