"""Human numbers: the one place base units become text. Pure (no rich, no torch, no package imports), so that
the library's own messages (recommend, advice) and render/ share it.

Decimal prefixes for operations, bytes, bandwidth and memory (G = 1e9, GB = 1e9 bytes), as the datasheets
print them; binary names (KiB, MiB, GiB = 2^10, 2^20, 2^30 bytes) only for message sizes, which are powers
of two (nccl-tests' convention). One "op" is one arithmetic operation: a multiply-add is 2.
"""

from __future__ import annotations

MISSING = "-"
KIB, MIB, GIB = 2**10, 2**20, 2**30


def sig3(value: float) -> str:
    """Three significant digits, never an exponent: 0.0123 -> '0.0123', 45.66 -> '45.7', 12345 -> '12,345'."""
    if abs(value) >= 999.5:
        return f"{value:,.0f}"
    return f"{value:.3g}"


# (unit, shown from this many seconds, seconds per unit or, below a second, units per second), largest first: a
# latency of hours or days is named so, not '9.3e+03 s'. Below a second the value is multiplied by the units per
# second (13.15e-6 * 1e6 is 13.15; dividing by 1e-6 gives 13.150000000000002, which rounds up).
_TIME_UNITS = (("d", 172_800.0, 86_400.0), ("h", 6_000.0, 3_600.0), ("min", 100.0, 60.0), ("s", 1.0, 1.0))
_SUBSECOND_UNITS = (("ms", 1e-3, 1e3), ("us", 0.0, 1e6))


def format_seconds(seconds: float) -> str:
    """Human latency, three significant digits: 12.3 ms, 45.6 us, 1.23 s, 2.58 h; 0.99951 s is '1 s', not
    '1e+03 ms' (the unit is chosen after rounding). Minutes from 100 s up, hours from 100 min, days from 48 h."""
    magnitude = abs(float(f"{seconds:.3g}"))
    for unit, floor, seconds_per_unit in _TIME_UNITS:
        if magnitude >= floor:
            return f"{sig3(seconds / seconds_per_unit)} {unit}"
    for unit, floor, units_per_second in _SUBSECOND_UNITS:
        if magnitude >= floor:
            return f"{sig3(seconds * units_per_second)} {unit}"
    return f"{sig3(seconds * 1e6)} us"


def format_seconds_or_missing(seconds: float | None) -> str:
    """``format_seconds``, or '-' for None and zero (a time not measured or not predicted)."""
    return format_seconds(seconds) if seconds else MISSING


_DECIMAL = ((1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


def _decimal(value: float, unit: str) -> str:
    """Three significant digits under the largest decimal prefix that keeps the value at 1 or more; the unit is
    chosen after rounding (999,950 is '1 M', not '1e+03 k')."""
    magnitude = abs(float(f"{value:.3g}"))
    for scale, prefix in _DECIMAL:
        if magnitude >= scale:
            return f"{sig3(value / scale)} {prefix}{unit}"
    return f"{sig3(value)} {unit}".rstrip()


def fmt_ops(ops: float) -> str:
    """8.22e9 -> '8.22 G', 1.2e12 -> '1.2 T', 8.2e17 -> '822 P', 0 -> '0'."""
    return _decimal(ops, "")


def fmt_bytes(nbytes: float) -> str:
    """Decimal bytes: 4.1e8 -> '410 MB', 1.38e11 -> '138 GB', 5.2e15 -> '5.2 PB'."""
    return _decimal(nbytes, "B")


def fmt_gb(nbytes: float) -> str:
    """Memory in a sentence: GB from 10 MB up to 1 TB (3 significant digits), MB below (kB, B under 1 MB), TB and PB above:
    1.35e10 -> '13.5 GB', 6.2e14 -> '622 TB'."""
    if nbytes >= 999.5e9 or nbytes < 1e6:
        return fmt_bytes(nbytes)
    return f"{nbytes / 1e9:.3g} GB" if nbytes >= 1e7 else f"{nbytes / 1e6:.2g} MB"


def fmt_memory(nbytes: float) -> str:
    """Memory needed or held, one decimal of GB up to 1 TB, then decimal prefixes: 4.1e10 -> '41.0 GB',
    5.2e15 -> '5.2 PB'."""
    return fmt_bytes(nbytes) if nbytes >= 999.95e9 else f"{nbytes / 1e9:.1f} GB"


def fmt_tops(ops_per_s: float) -> str:
    """A rate in TOPS (1e12 operations/s), three significant digits: 88.35e12 -> '88.3', 1979e12 -> '1,979'."""
    return sig3(ops_per_s / 1e12)


def fmt_intensity(flops: float, nbytes: float) -> str:
    """Operations per byte, 3 significant digits; '-' without bytes."""
    return f"{flops / nbytes:.3g}" if nbytes else MISSING


def fmt_number(value: float | None, digits: int = 4) -> str:
    """Datasheet figures: 989.5 -> '989.5', 1979 -> '1,979', 18000 -> '18,000', 0.2531 -> '0.2531', None -> '-'."""
    if value is None:
        return MISSING
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.{digits}g}"


def fmt_ratio(value: float | None) -> str:
    """TOPS/W and ops/byte: three significant digits (whole numbers from 100 up)."""
    if value is None:
        return MISSING
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def fmt_optional(value: float | None, fmt: str = "{:.1f}") -> str:
    """``fmt.format(value)``, or '-' for None."""
    return MISSING if value is None else fmt.format(value)


def fmt_signed_percent(fraction: float | None) -> str:
    """A relative error: 0.25 -> '+25%', -0.031 -> '-3%', None -> '-'."""
    return MISSING if fraction is None else f"{fraction:+.0%}"


def size_name(nbytes: int) -> str:
    """Message sizes (powers of two, as nccl-tests uses): 1048576 -> '1 MiB', 8 -> '8 B'."""
    for unit, div in (("GiB", GIB), ("MiB", MIB), ("KiB", KIB)):
        if nbytes >= div and nbytes % div == 0:
            return f"{nbytes // div} {unit}"
    return f"{nbytes} B"


def fmt_dollars(usd: float | None) -> str:
    """US dollars: cents from $1 ('$4.50', '$1,234.50'), whole dollars from $10,000 ('$24,875'), three significant
    digits below $1 ('$0.0303'); None -> '-'."""
    if usd is None:
        return MISSING
    if abs(usd) >= 9999.995:
        return f"${usd:,.0f}"
    return f"${usd:,.2f}" if abs(usd) >= 0.995 else f"${sig3(usd)}"
