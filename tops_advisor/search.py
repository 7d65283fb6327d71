"""Bisection over whole numbers, for searches whose answer flips once (a batch that fits, a step that binds)."""

from __future__ import annotations

from collections.abc import Callable


def first_true(pred: Callable[[int], bool], lo: int, hi: int) -> int:
    """The smallest n in (lo, hi] with pred(n), given pred(lo) false, pred(hi) true and pred monotone."""
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if pred(mid):
            hi = mid
        else:
            lo = mid
    return hi
