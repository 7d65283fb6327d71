"""The rich consoles every command prints on, and how wide they are.

Width, in this order:
1. ``$COLUMNS`` when it is set to a positive integer (``COLUMNS=80 tops-advisor ...`` to check a narrow terminal);
2. the terminal's width when stdout is a terminal;
3. ``PIPED_WIDTH_COLUMNS`` (120) when stdout is piped or redirected.

Rich on its own falls back to 80 columns whenever stdout is not a terminal, so ``tops-advisor ... > out.txt``
would fold names a wider window shows whole. 120 columns is a choice, not a measurement: wide enough that every
table here is laid out at its natural width (``tests/render/test_width.py`` checks each stays within it), and
narrow enough to read in a side-by-side diff or a log viewer. Every table also fits 80 columns by folding names,
never numbers (the same test).
"""

from __future__ import annotations

import os
import sys

PIPED_WIDTH_COLUMNS = 120
NARROW_COLUMNS = 80   # the terminal width every table must fit


def output_width(stream=None, environ=None) -> int:
    """Columns to lay tables out in for ``stream`` (default stdout); see the module docstring."""
    environ = os.environ if environ is None else environ
    columns = environ.get("COLUMNS", "").strip()
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    stream = sys.stdout if stream is None else stream
    try:
        if stream.isatty():
            return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, ValueError, OSError):  # a captured stream (tests) has no terminal
        pass
    return PIPED_WIDTH_COLUMNS


def console(width: int | None = None):
    """A rich console on stdout for tables: ``output_width()`` columns, no soft wrapping of long lines."""
    from rich.console import Console

    return Console(soft_wrap=False, width=width or output_width())


def err_console():
    """A rich console on stderr (progress, notes about written files)."""
    from rich.console import Console

    return Console(stderr=True, width=output_width(sys.stderr))
