"""Human numbers: the one place base units become text. Pure (no rich, no torch, no package imports), so that
the library's own messages (recommend, advice) and render/ share it.

Decimal prefixes for operations, bytes, bandwidth and memory (G = 1e9, GB = 1e9 bytes), as the datasheets
print them; binary names (KiB, MiB, GiB = 2^10, 2^20, 2^30 bytes) only for message sizes, which are powers
of two (nccl-tests' convention). One "op" is one arithmetic operation: a multiply-add is 2.
"""

from __future__ import annotations

MISSING = "-"
KIB, MIB, GIB = 2**10, 2**20, 2**30


def format_seconds(seconds: float) -> str:
    """Human latency: 12.3 ms, 45.6 us, 1.23 s."""
    if seconds >= 1:
        return f"{seconds:.3g} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds * 1e6:.3g} us"


def format_seconds_or_missing(seconds: float | None) -> str:
    """``format_seconds``, or '-' for None and zero (a time not measured or not predicted)."""
    return format_seconds(seconds) if seconds else MISSING


def fmt_ops(ops: float) -> str:
    """8.22e9 -> '8.22 G', 1.2e12 -> '1.2 T', 0 -> '0'."""
    for scale, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(ops) >= scale:
            return f"{ops / scale:.3g} {prefix}"
    return f"{ops:.3g}"


def fmt_bytes(nbytes: float) -> str:
    """Decimal bytes: 4.1e8 -> '410 MB', 1.38e11 -> '138 GB'."""
    for scale, unit in ((1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "kB")):
        if abs(nbytes) >= scale:
            return f"{nbytes / scale:.3g} {unit}"
    return f"{nbytes:.3g} B"


def fmt_gb(nbytes: float) -> str:
    """Memory in a sentence: GB from 10 MB up (3 significant digits), else MB: 1.35e10 -> '13.5 GB'."""
    return f"{nbytes / 1e9:.3g} GB" if nbytes >= 1e7 else f"{nbytes / 1e6:.2g} MB"


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
