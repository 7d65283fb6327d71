"""Close-match suggestions for misspelt names."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

# Explicit default: looser than difflib's own 0.6, so that a short id can match its long form ("a100" scores
# 0.44 against "a100-sxm4-80gb"); unrelated names ("banana") still score under it.
CUTOFF = 0.4


def closest(name: str, choices: Iterable[str], n: int = 3) -> list[str]:
    """The choices closest to ``name``, best first (case-insensitive)."""
    by_lower: dict[str, str] = {}
    for c in choices:
        by_lower.setdefault(c.lower(), c)
    hits = difflib.get_close_matches(name.lower(), list(by_lower), n=n, cutoff=CUTOFF)
    return [by_lower[h] for h in hits]


def did_you_mean(name: str, choices: Iterable[str], n: int = 3) -> str | None:
    """A hint line such as "did you mean: rtx-4090, rtx-3090?", or None."""
    hits = closest(name, choices, n)
    return f"did you mean: {', '.join(hits)}?" if hits else None
