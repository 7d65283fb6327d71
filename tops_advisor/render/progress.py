"""A progress line on stderr for work that takes seconds (counting a model, the catalog sweep).

It is a transient rich status line (a spinner and what is being done) that disappears when the work ends. It
shows only when stderr is a terminal and the command prints tables: with ``--json``, when stderr is piped or
captured, nothing is written, so scripts and tests see the same output as before.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def progress(message: str, *, enabled: bool = True, stream=None) -> Iterator[None]:
    """``with progress("counting model.py"):`` shows ``message`` with a spinner on stderr while the block runs.

    ``enabled=False`` (``--json``) or a stderr that is not a terminal: silent. ``stream`` replaces stderr
    (tests)."""
    from rich.console import Console

    out = Console(file=stream, stderr=stream is None)
    if not enabled or not out.is_terminal:
        yield
        return
    with out.status(message, spinner="dots"):
        yield
