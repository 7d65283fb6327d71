"""Close-match suggestions for misspelt names."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

# Explicit default: looser than difflib's own 0.6, so that a short id can match its long form ("a100" scores
# 0.44 against "a100-sxm4-80gb"); unrelated names ("banana") still score under it.
CUTOFF = 0.4


# Paths: one misspelt part ('exmaples' for 'examples', 'lm' for 'llm') scores 0.75 or more; the looser cutoff
# would offer any directory of the same length ('tests' for 'nonexist').
PATH_CUTOFF = 0.75


def closest(name: str, choices: Iterable[str], n: int = 3, cutoff: float = CUTOFF) -> list[str]:
    """The choices closest to ``name``, best first (case-insensitive), scoring ``cutoff`` or more."""
    by_lower: dict[str, str] = {}
    for c in choices:
        by_lower.setdefault(c.lower(), c)
    hits = difflib.get_close_matches(name.lower(), list(by_lower), n=n, cutoff=cutoff)
    return [by_lower[h] for h in hits]


def did_you_mean(name: str, choices: Iterable[str], n: int = 3) -> str | None:
    """A hint line such as "did you mean: rtx-4090, rtx-3090?", or None."""
    hits = closest(name, choices, n)
    return f"did you mean: {', '.join(hits)}?" if hits else None
