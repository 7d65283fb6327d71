"""Bytes in flight: why 16-bit memory-bound kernels reach less of the H200's bandwidth than 32-bit ones, and more of
a GeForce card's.

By Little's law a kernel streams at most (bytes it keeps in flight) / (DRAM latency); to reach a card's bandwidth
every SM must keep bandwidth / SMs x latency bytes in flight. PyTorch's elementwise, copy, pooling and reduction
kernels give each thread a fixed number of elements, so a 16-bit kernel keeps half the bytes of its 32-bit twin in
flight. On the H200 (4.8 TB/s over 132 SMs, 375 ns: 13.6 KB per SM) the 16-bit kernels reach 0.73 / 0.57 / 0.18 /
0.39 of the copy bandwidth where the 32-bit ones reach 0.91 / 0.69 / 0.36 / 0.52 (``kind_bandwidth_factor_by_width``):
the 16-bit share is what its bytes in flight allow, the 32-bit one (twice the bytes) its kernel's ceiling. A card
that needs fewer bytes in flight per SM (``inflight_scale`` > 1: an RTX 4090 needs 1008 GB/s / 128 x 254 ns =
2.0 KB) lets the same kernels go further, up to that ceiling; one that needs more (a B200) holds them back:

    16-bit share = min(32-bit share, H200 16-bit share x scale)
    32-bit share = min(32-bit share, max(32-bit share, 2 x H200 16-bit share) x scale)

On the H200 the scale is 1 and both are the measured shares. cuDNN's inference batch norm runs at one element rate
at both widths (``cudnn_batch_norm_bandwidth_factor``, profiled after blind round 26): its bytes in flight hold both,
so both scale, up to an elementwise kernel's 32-bit share (``limited_shares``). Other kinds without a width split
(the native norms, softmax, depthwise) keep their shares: the profiles do not show what limits them.
"""

from __future__ import annotations

from dataclasses import replace

from ..catalog import Hardware
from .defaults import RooflineDefaults

HALF, FULL = "16-bit", "32-bit"


def inflight_scale(hw: Hardware, d: RooflineDefaults) -> float:
    """How many times fewer bytes per SM this card needs in flight than the reference (the H200) to reach its
    DRAM bandwidth: the reference's need over datasheet bandwidth / SMs x the DRAM latency of its architecture
    and memory (``dram_latency_s``); 1 where the latency or the SM count is not known."""
    latency = dram_latency_s(hw, d)
    if latency is None or not hw.compute_units:
        return 1.0
    need = hw.memory_bandwidth_bytes_per_s / hw.compute_units * latency
    return d.inflight_reference_bytes.value / need


def dram_latency_s(hw: Hardware, d: RooflineDefaults) -> float | None:
    """The first (architecture, memory type prefix) of ``dram_latency_s`` that matches the card; None if none."""
    memory = hw.memory_type.upper()
    for architecture, prefix, latency in d.dram_latency_s.value:
        if architecture == hw.architecture and memory.startswith(prefix):
            return latency
    return None


def width_shares(table: dict[str, dict[str, float]], scale: float) -> dict[str, dict[str, float]]:
    """The per-kind (16-bit, 32-bit) shares at ``scale`` (module docstring); the table itself at 1."""
    return {kind: {HALF: min(w[FULL], w[HALF] * scale), FULL: min(w[FULL], max(w[FULL], 2.0 * w[HALF]) * scale)}
            for kind, w in table.items()}


def limited_shares(w: dict[str, float], scale: float, ceiling: float) -> dict[str, float]:
    """The (16-bit, 32-bit) shares of a kernel held by its bytes in flight at both widths (its 32-bit share about
    twice its 16-bit one on the reference), at ``scale``: each scaled, up to ``ceiling``."""
    return {HALF: min(max(ceiling, w[HALF]), w[HALF] * scale), FULL: min(max(ceiling, w[FULL]), w[FULL] * scale)}


def defaults_for(hw: Hardware, d: RooflineDefaults) -> RooflineDefaults:
    """``d`` with the width-split bandwidth shares this card's bytes in flight allow (unchanged at scale 1)."""
    scale = inflight_scale(hw, d)
    if scale == 1.0:
        return d
    note = f"; at {scale:.2f}x the H200's bytes in flight per SM (roofline/inflight.py)"
    table, bn = d.kind_bandwidth_factor_by_width, d.cudnn_batch_norm_bandwidth_factor
    return replace(d, kind_bandwidth_factor_by_width=replace(table, value=width_shares(table.value, scale),
                                                             source=table.source + note),
                   cudnn_batch_norm_bandwidth_factor=replace(
                       bn, value=limited_shares(bn.value, scale, table.value["elementwise"][FULL]),
                       source=bn.source + note + ", up to the 32-bit elementwise share"))
