"""The house table: light rules, no side borders, two spaces between columns; names fold, numbers never do.

Every table fits an 80-column terminal (``tests/render/test_width.py``): a column of names (``name_column``) folds
onto more lines when space runs short, after a '_', '.', '-', '/' or ':' (``Name``: 'max_pool2d_with_' over
'indices', never 'max_pool2d_with_indice' over 's'); a column of numbers (``number_column``) keeps its width, so
that rich never cuts a number to '12.…'.
"""

from __future__ import annotations

import io
import re

from rich import box
from rich.console import Console
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

# A name's pieces: each runs up to and including a separator, where a folded name may start a new line.
_PIECES = re.compile(r"[^_./:-]*[_./:-]+|[^_./:-]+")


class Name:
    """A cell holding one name (an operator, a module path, a device id): folds after its separators, and
    inside a piece only when the piece alone is wider than the column. Printed as it is (no markup)."""

    def __init__(self, text: str):
        self.text = text
        self.pieces = _PIECES.findall(text) or [text]

    def __str__(self) -> str:
        return self.text

    def __rich_measure__(self, console, options) -> Measurement:
        return Measurement(max(len(p) for p in self.pieces), len(self.text))

    def __rich_console__(self, console, options):
        yield Text("\n".join(self.lines(options.max_width)), no_wrap=True)

    def lines(self, width: int) -> list[str]:
        """The name folded to ``width`` columns at its separators."""
        width = max(width, 1)
        out, line = [], ""
        for piece in self.pieces:
            if line and len(line) + len(piece) > width:
                out.append(line)
                line = ""
            line += piece
            while len(line) > width:   # a piece wider than the column: folded where it must be
                out.append(line[:width])
                line = line[width:]
        return [*out, line] if line else out

# Narrowest a folding name column may get: a device id such as 'jetson-agx-orin-32gb' folds once at 10.
NAME_MIN_WIDTH = 10


class FittedTable(Table):
    """A rich Table that keeps within the width it is given.

    rich 15 squeezes a too-wide table by narrowing its wrappable columns, then measures each column again at its
    new width and adds the column's padding a second time, so a squeezed table comes out a few columns wider than
    the console and its right edge is cropped (letters lost from the last column). This takes the excess back
    from the folding columns, never from the numbers.

    A plain-text cell without spaces in a ``name_column`` is held as a ``Name`` (folds at its separators)."""

    def add_row(self, *renderables, **kwargs) -> None:
        cells = [Name(c) if isinstance(c, str) and i < len(self.columns) and getattr(self.columns[i], "_name", False)
                 and c and not any(ch.isspace() or ch == "[" for ch in c) else c for i, c in enumerate(renderables)]
        super().add_row(*cells, **kwargs)

    def _calculate_column_widths(self, console, options) -> list[int]:
        from rich._ratio import ratio_reduce

        widths = super()._calculate_column_widths(console, options)
        excess = sum(widths) - options.max_width
        foldable = [int(c.overflow == "fold" and not c.no_wrap) for c in self.columns]
        if excess > 0 and any(foldable):
            widths = ratio_reduce(excess, foldable, [w - 1 for w in widths], widths)
        return self._give_priority(console, options, widths)

    def _give_priority(self, console, options, widths: list[int]) -> list[int]:
        """Widen a priority name column (``name_column(..., priority=True)``) to its longest cell, taking the
        columns from the other name columns down to their minimum width; the table's width is unchanged."""
        widths = list(widths)
        for i, col in enumerate(self.columns):
            if not getattr(col, "_priority", False):
                continue
            want = self._measure_column(console, options, col).maximum
            for j, donor in enumerate(self.columns):
                if widths[i] >= want:
                    break
                if j == i or not getattr(donor, "_name", False) or getattr(donor, "_priority", False):
                    continue
                floor = (donor.min_width or 1) + self._get_padding_width(j)
                take = min(max(widths[j] - floor, 0), want - widths[i])
                widths[i], widths[j] = widths[i] + take, widths[j] - take
        return widths


def new_table(title: str | None = None, **kwargs) -> Table:
    """A table in the house style (title on the left, a rule under the header, 2 spaces between columns)."""
    return FittedTable(title=title, title_justify="left", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False,
                       padding=(0, 1, 0, 0), **kwargs)


def name_column(t: Table, header: str, min_width: int = NAME_MIN_WIDTH, priority: bool = False, **kwargs) -> None:
    """A column of names or sentences: folds onto more lines rather than widen the table (names after their
    separators, sentences between words). A ``priority`` column keeps its names whole while the table's other
    name columns can give way (an operator's name before its module path)."""
    t.add_column(header, overflow="fold", min_width=min_width, **kwargs)
    t.columns[-1]._name = True
    t.columns[-1]._priority = priority


def natural_width(table: Table) -> int:
    """The columns ``table`` takes when nothing folds: every name whole on one line, every number as it is."""
    return Console(width=10_000, file=io.StringIO()).measure(table).maximum


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

    grid = FittedTable.grid(padding=(0, 1, 0, 0))
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")
    grid.add_row(" " * indent + mark, Text(text, style=style or ""))
    out.print(grid)
