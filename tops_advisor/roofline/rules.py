"""Ordered rule tables: which of several rates (or factors, or floors) an operator takes, read top to bottom.

A table is a tuple of ``Rule``: a name, the operators it applies to, the value it gives them and why. The
first rule that applies to an operator wins (``first_match``), so a table lists the most specific case first
and ends with a rule that applies to every operator (``always``). ``which_rule`` names the winner per
operator, to see why an operator got its rate.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

import numpy as np

from .arrays import OpArrays

C = TypeVar("C")


@dataclass(frozen=True)
class Rule(Generic[C]):
    """One case of a table: ``applies(a, context)`` is a boolean per operator of ``a``; ``value(a, context)`` a
    number or an array over all of ``a`` (only its rows where the rule wins are used)."""

    name: str
    applies: Callable[[OpArrays, C], np.ndarray]
    value: Callable[[OpArrays, C], np.ndarray | float]
    why: str


def always(a: OpArrays, _context: object) -> np.ndarray:
    """Every operator: the last rule of a table."""
    return np.ones(len(a), dtype=bool)


def _winners(rules: Sequence[Rule[C]], a: OpArrays, context: C) -> list[np.ndarray]:
    """Per rule, the operators for which it is the first that applies."""
    taken = np.zeros(len(a), dtype=bool)
    out = []
    for rule in rules:
        wins = np.asarray(rule.applies(a, context), dtype=bool) & ~taken
        taken |= wins
        out.append(wins)
    if not taken.all():
        raise ValueError(f"no rule of {[r.name for r in rules]} applies to operators {np.flatnonzero(~taken)}")
    return out


def first_match(rules: Sequence[Rule[C]], a: OpArrays, context: C, dtype: type = np.float64) -> np.ndarray:
    """Per operator of ``a``: the value of the first rule (top to bottom) that applies to it."""
    out = np.zeros(len(a), dtype=dtype)
    for rule, wins in zip(rules, _winners(rules, a, context), strict=True):
        if wins.any():
            out[wins] = np.broadcast_to(rule.value(a, context), wins.shape)[wins]
    return out


def which_rule(rules: Sequence[Rule[C]], a: OpArrays, context: C) -> np.ndarray:
    """Per operator of ``a``: the name of the rule ``first_match`` takes its value from."""
    names = np.empty(len(a), dtype=object)
    for rule, wins in zip(rules, _winners(rules, a, context), strict=True):
        names[wins] = rule.name
    return names
