"""What a user asks of a device: targets (latency, throughput), filters (segment, power, price, devices) and
how to rank (``Constraints``), and the filters applied to one device (``prefilter``)."""

from __future__ import annotations

from dataclasses import dataclass

from ..catalog import Hardware
from ..errors import InputError
from ..units import format_seconds

RANK_BY = ("efficiency", "latency", "throughput", "price")
SEGMENTS = ("edge", "workstation", "datacenter")
AUTO_DTYPES = ("fp32", "fp16", "bf16", "fp8", "int8")
NOT_ASKED = "not in --hardware"  # a device the user left out: dropped, not listed as rejected


@dataclass(frozen=True)
class Constraints:
    latency_s: float | None = None          # per batch
    throughput_per_s: float | None = None   # samples/s
    batch: int | None = None                # fixed batch; None = search
    dtypes: tuple[str, ...] = ("fp16",)
    segment: str | None = None
    max_power_w: float | None = None
    max_price_usd: float | None = None
    hardware: tuple[str, ...] = ()          # limit to these ids (already resolved)
    mode: str = "graph"
    rank_by: str = "efficiency"
    max_batch: int = 1024
    top: int | None = None

    def __post_init__(self):
        if self.rank_by not in RANK_BY:
            raise InputError(f"unknown --rank-by {self.rank_by!r}; expected one of {', '.join(RANK_BY)}")
        if self.segment is not None and self.segment not in SEGMENTS:
            from ..suggest import did_you_mean

            raise InputError(f"unknown segment {self.segment!r}; expected one of {', '.join(SEGMENTS)}",
                             hint=did_you_mean(self.segment, SEGMENTS))
        if self.batch is not None and self.batch <= 0:
            raise InputError(f"--batch must be a positive integer, got {self.batch}")
        for name in ("latency_s", "throughput_per_s", "max_power_w", "max_price_usd"):
            v = getattr(self, name)
            if v is not None and v <= 0:
                raise InputError(f"{name} must be greater than zero, got {v}")
        if self.top is not None and self.top < 1:
            raise InputError(f"--top must be at least 1, got {self.top}", hint="leave --top out to show every device")


def prefilter(hw: Hardware, c: Constraints) -> str | None:
    """Why ``hw`` is ruled out before predicting anything (segment, power, price, --hardware), or None."""
    if c.hardware and hw.id not in c.hardware:
        return NOT_ASKED
    if c.segment and hw.segment != c.segment:
        return f"segment {hw.segment}, not {c.segment}"
    if c.max_power_w and hw.tdp_w > c.max_power_w:
        lowest = min(hw.power_modes_w) if hw.power_modes_w else None
        if lowest is None or lowest > c.max_power_w:
            return f"TDP {hw.tdp_w:g} W > {c.max_power_w:g} W"
    if c.max_price_usd:
        if hw.price_usd is None:
            return "no known price"
        if hw.price_usd > c.max_price_usd:
            return f"price ${hw.price_usd:,.0f} > ${c.max_price_usd:,.0f}"
    return None


def filters_text(c: Constraints) -> str:
    """The constraints in force, one clause each, in a fixed order; the dtypes always."""
    clauses = (  # (the constraint's value, or None when unset; how it reads)
        (c.latency_s and format_seconds(c.latency_s), "latency <= {}"),
        (c.throughput_per_s, "throughput >= {:g}/s"),
        (c.segment, "segment {}"),
        (c.max_power_w, "power <= {:g} W"),
        (c.max_price_usd, "price <= ${:,.0f}"),
        (c.hardware and ", ".join(c.hardware), "hardware {}"),
    )
    parts = [text.format(value) for value, text in clauses if value]
    parts.append(f"dtype {'/'.join(c.dtypes)}")
    return ", ".join(parts)
