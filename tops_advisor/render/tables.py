"""The house table: light rules, no side borders, two spaces between columns; names fold, numbers never do.

Every table fits an 80-column terminal (``tests/test_render_width.py``): a column of names (``name_column``) folds
onto more lines when space runs short; a column of numbers (``number_column``) keeps its width, so that rich never
cuts a number to '12.…'.
"""

from __future__ import annotations

from rich import box
from rich.table import Table

# Narrowest a folding name column may get: a device id such as 'jetson-agx-orin-32gb' folds once at 10.
NAME_MIN_WIDTH = 10


def new_table(title: str | None = None, **kwargs) -> Table:
    """A table in the house style (title on the left, a rule under the header, 2 spaces between columns)."""
    return Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False,
                 padding=(0, 1, 0, 0), **kwargs)


def name_column(t: Table, header: str, min_width: int = NAME_MIN_WIDTH, **kwargs) -> None:
    """A column of names or sentences: folds onto more lines rather than widen the table."""
    t.add_column(header, overflow="fold", min_width=min_width, **kwargs)


def number_column(t: Table, header: str, **kwargs) -> None:
    """A right-aligned column of numbers: never wrapped or cut (the name columns give way)."""
    t.add_column(header, justify="right", no_wrap=True, **kwargs)


def word_column(t: Table, header: str, **kwargs) -> None:
    """A left-aligned column of one short word per cell (a kind, a bound, yes/no): never wrapped or cut."""
    t.add_column(header, no_wrap=True, **kwargs)


def bullet(out, text: str, mark: str = "-", style: str | None = None, indent: int = 2) -> None:
    """One list item on the rich console ``out``, continuation lines hanging under its first word (``text`` is
    printed as it is: no markup, no highlighting)."""
    from rich.text import Text

    grid = Table.grid(padding=(0, 1, 0, 0))
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")
    grid.add_row(" " * indent + mark, Text(text, style=style or ""))
    out.print(grid)
