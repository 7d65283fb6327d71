"""The shape of a default: ``Default`` (a value and its source), named GEMM tiles, values by operand width."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, NamedTuple, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Default(Generic[T]):
    """One default: its value (a number, or a mapping keyed by name where it varies by a key) and where the
    value comes from."""

    value: T
    source: str


class GemmTile(NamedTuple):
    """An output tile a BLAS library runs, with the share of the large-GEMM rate it reaches when full."""

    rows: int
    cols: int
    quality: float


def table(source: str, values: Mapping) -> Any:
    """A ``Default`` whose value is a mapping (each instance gets its own copy)."""
    return field(default_factory=lambda: Default(copy.deepcopy(dict(values)), source))


def by_width(bits16: float, bits32: float) -> dict[str, float]:
    """A value that differs by operand width: 16-bit (fp16, bf16) and 32-bit operators."""
    return {"16-bit": bits16, "32-bit": bits32}


def per_width(bits16: float, bits32: float, source: str) -> Any:
    """A ``Default`` whose value differs by operand width: ``by_width(bits16, bits32)``, from ``source``."""
    return table(source, by_width(bits16, bits32))


WIDTHS = ("16-bit", "32-bit")
