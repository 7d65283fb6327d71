"""Precision names and parsing of human units at the boundary. Everything inside is in base units."""

from __future__ import annotations

import re

from .errors import InputError
from .formatting import format_seconds  # noqa: F401 - re-exported: formatting lives in formatting.py
from .suggest import did_you_mean

# Canonical precision names, in the order tables show them.
PRECISIONS: tuple[str, ...] = ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int8", "int4", "fp4")
# GeForce cards have faster tensor rates with FP16 accumulation; kept apart from fp16/fp8 (FP32 accumulate).
ACCUMULATE_VARIANTS: tuple[str, ...] = ("fp16_fp16acc", "fp8_fp16acc")
PEAK_KEYS: tuple[str, ...] = PRECISIONS + ACCUMULATE_VARIANTS

# Storage bytes per element for the dtypes a workload can be counted or predicted in.
BYTES_PER_ELEMENT: dict[str, float] = {
    "fp64": 8, "fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2, "fp8": 1, "int8": 1, "int4": 0.5, "fp4": 0.5,
}

_DTYPE_ALIASES = {
    "float64": "fp64", "double": "fp64", "float32": "fp32", "float": "fp32", "float16": "fp16",
    "half": "fp16", "bfloat16": "bf16", "float8": "fp8", "e4m3": "fp8", "float8_e4m3fn": "fp8",
    "autocast": "amp", "mixed": "amp",
}
# Automatic mixed precision: an fp32 model run under torch.autocast("cuda", torch.float16). Not a storage
# precision (no peak, no element size): the counter runs each operator in the precision autocast picks
# (counting/amp.py), so the operators carry fp16 or fp32.
AMP = "amp"


def parse_precision(text: str, allowed: tuple[str, ...] = PRECISIONS) -> str:
    """'FP16', 'float16', 'half' -> 'fp16'. Raises InputError naming the allowed names."""
    key = text.strip().lower()
    key = _DTYPE_ALIASES.get(key, key)
    if key not in allowed:
        raise InputError(f"unknown dtype {text!r}; expected one of {', '.join(allowed)}",
                         hint=did_you_mean(text, allowed))
    return key


_LATENCY_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
_POWER_UNITS = {"w": 1.0, "kw": 1e3}
_DURATION_UNITS = {"s": 1.0, "min": 60.0, "h": 3600.0, "d": 86400.0}
_QUANTITY = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[+-]?\d+)?)\s*([a-zµ]*)\s*$", re.IGNORECASE)


def _parse_quantity(text: str, units: dict[str, float], what: str, example: str) -> float:
    m = _QUANTITY.match(str(text))
    if not m or not m.group(2):
        raise InputError(f"{what} {text!r} needs a positive number with a unit "
                         f"({', '.join(units)}), e.g. {example}")
    unit = m.group(2).lower()
    if unit not in units:
        raise InputError(f"{what} {text!r} has unknown unit {m.group(2)!r}; expected one of {', '.join(units)}")
    value = float(m.group(1)) * units[unit]
    if value <= 0:
        raise InputError(f"{what} {text!r} must be greater than zero")
    return value


def parse_latency_s(text: str) -> float:
    """'10ms' -> 0.01, '0.5s' -> 0.5, '250us' -> 0.00025."""
    return _parse_quantity(text, _LATENCY_UNITS, "latency", "10ms, 0.5s or 250us")


def parse_duration_s(text: str, what: str = "duration") -> float:
    """'12h' -> 43200.0, '3d', '90min', '3600s'."""
    return _parse_quantity(text, _DURATION_UNITS, what, "12h, 3d or 90min")


def parse_power_w(text: str) -> float:
    """'60W' -> 60.0."""
    return _parse_quantity(text, _POWER_UNITS, "power", "60W")


def parse_batches(text: str) -> list[int]:
    """'1,8,32' -> [1, 8, 32]; every batch must be a positive integer."""
    out = []
    for part in str(text).split(","):
        part = part.strip()
        if not part.isdigit() or int(part) <= 0:
            raise InputError(f"batch list {text!r}: {part!r} is not a positive integer; write e.g. 1,8,32")
        out.append(int(part))
    return out
