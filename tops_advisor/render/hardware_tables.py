"""Rich tables of catalog devices (``hardware list``, ``show``, ``compare``) from the rows ``render.hardware`` makes.

All fit an 80-column terminal: ids and names fold, numbers do not; ``compare`` of more devices than fit side by
side is printed as several tables of the same parameters.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table

from ..catalog import Hardware
from ..catalog.prices import PriceReport
from .hardware import compare_rows, list_columns, list_row, list_title, peak_rows, price_rows, show_rows
from .tables import name_column, new_table, number_column, word_column

# `hardware list` shows the devices' names only from this width up: ids are what commands take, and names
# folded into a narrow column make the table three times as long.
LIST_NAME_MIN_WIDTH = 100
# `hardware compare`: the parameter column and each device's column (an id such as 'jetson-agx-orin-64gb'
# folds once at 14; cells are numbers or a few words).
COMPARE_PARAMETER_WIDTH = 22
COMPARE_DEVICE_WIDTH = 14


def list_table(devices: Sequence[Hardware], precision: str | None, width: int) -> Table:
    """id, memory, bandwidth, TDP and peaks of each device (and its name when the console is wide)."""
    with_name = width >= LIST_NAME_MIN_WIDTH
    t = new_table(list_title(len(devices), precision))
    cols = list_columns(precision, with_name)
    for i, col in enumerate(cols):
        if i == 0 or (with_name and i == len(cols) - 1):
            name_column(t, col, min_width=12)
        else:
            number_column(t, col)
    for hw in devices:
        t.add_row(*list_row(hw, precision, with_name))
    return t


def show_tables(hw: Hardware) -> list[Table]:
    """Every field the file sets with its citation, then the peaks per precision with theirs."""
    facts = new_table()
    name_column(facts, "field", min_width=12)
    name_column(facts, "value", min_width=12)
    name_column(facts, "source", min_width=24, ratio=1)
    for row in show_rows(hw):
        facts.add_row(*row)
    peaks = new_table("Peaks in TOPS (1e12 ops/s; a multiply-add is 2 ops); ridge in ops per byte")
    name_column(peaks, "precision", min_width=9)
    for col in ("dense", "2:4 sparse", "TOPS/W", "ridge"):
        number_column(peaks, col)
    name_column(peaks, "source", min_width=24, ratio=1)
    for row in peak_rows(hw):
        peaks.add_row(*row)
    return [facts, peaks]


def compare_tables(devices: Sequence[Hardware], width: int, purchases=None) -> list[Table]:
    """The key-parameter table, one column per device; several tables when they do not all fit ``width``.
    ``purchases``: device id -> its purchase price (``compare_rows``)."""
    per_table = max(1, (width - COMPARE_PARAMETER_WIDTH - 2) // (COMPARE_DEVICE_WIDTH + 2))
    tables = []
    for start in range(0, len(devices), per_table):
        chunk = devices[start:start + per_table]
        title = "Key parameters (dense and 2:4 sparse never mixed; TOPS/W uses TDP)" if start == 0 else None
        t = new_table(title)
        name_column(t, "parameter", min_width=COMPARE_PARAMETER_WIDTH)
        for hw in chunk:
            name_column(t, hw.id, min_width=COMPARE_DEVICE_WIDTH, justify="right")
        for row in compare_rows(chunk, purchases):
            t.add_row(*row)
        tables.append(t)
    return tables


def prices_table(report: PriceReport) -> Table:
    """Purchase (USD per card) and rental (USD per GPU-hour) prices with provider, date and source."""
    t = new_table("Prices in USD: purchase per card, rental per GPU-hour")
    word_column(t, "kind")
    number_column(t, "USD")
    word_column(t, "per")
    name_column(t, "provider", min_width=10)
    name_column(t, "date", min_width=10)
    name_column(t, "source; basis", min_width=20, ratio=1)
    for row in price_rows(report):
        t.add_row(*row)
    return t
