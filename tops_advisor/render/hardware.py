"""Pure rendering of catalog devices: JSON records and table rows (strings). No I/O, no rich objects.

Peaks are shown in TOPS (1e12 ops/s, a multiply-add counts 2), bandwidth in GB/s (1e9 bytes/s), memory in
GB (1e9 bytes): the units the datasheets print, so a reader can check a cell against its source.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable, Mapping, Sequence

from ..catalog import Hardware, Source
from ..catalog.prices import DevicePrice, PriceKind, PriceReport
from ..formatting import MISSING, fmt_number, fmt_ratio
from ..units import PEAK_KEYS

# `hardware list` columns (without a --precision filter) and the precisions they show.
LIST_PRECISIONS: tuple[str, ...] = ("fp32", "fp16", "fp8", "int8")


def peak_precisions(devices: Iterable[Hardware]) -> list[str]:
    """Precision keys any of the devices has (dense or sparse), in the canonical table order."""
    have: set[str] = set()
    for hw in devices:
        have |= set(hw.dense_tops) | set(hw.sparse_tops)
    return [p for p in PEAK_KEYS if p in have]


def ridge_ops_per_byte(hw: Hardware, precision: str, sparse: bool = False) -> float | None:
    """Arithmetic intensity where the roofline turns from memory- to compute-bound (ops per DRAM byte)."""
    peak = hw.peak_ops_per_s(precision, sparse=sparse)
    return None if peak is None else peak / hw.memory_bandwidth_bytes_per_s


def device_record(hw: Hardware) -> dict:
    """The device as JSON: every field of the file (id, name, memory_gb, ..., power_modes, dense_tops,
    sparse_tops, sources, citations, notes), and ``power_modes_w``: each power mode's budget."""
    return {**hw.model_dump(mode="json"), "power_modes_w": list(hw.power_modes_w)}


def compare_record(hw: Hardware) -> dict:
    """The device plus the derived columns `hardware compare` shows."""
    rec = device_record(hw)
    rec["tops_per_watt"] = {
        "dense": {p: hw.tops_per_watt(p) for p in hw.dense_tops},
        "sparse": {p: hw.tops_per_watt(p, sparse=True) for p in hw.sparse_tops},
    }
    rec["ridge_ops_per_byte"] = {p: ridge_ops_per_byte(hw, p) for p in hw.dense_tops}
    return rec


def list_columns(precision: str | None = None, with_name: bool = True) -> list[str]:
    """Header of `hardware list`: id, the numeric columns, then the name (the column that may wrap)."""
    cols = ["id", "GB", "GB/s", "W"]
    if precision:
        cols += [f"{precision} dense", f"{precision} sparse", "TOPS/W"]
    else:
        cols += list(LIST_PRECISIONS)
    return cols + ["name"] if with_name else cols


def list_title(count: int, precision: str | None = None) -> str:
    what = f"{precision} peaks in TOPS, dense and 2:4 sparse" if precision else "dense peaks in TOPS"
    return f"{count} devices: memory GB, bandwidth GB/s, TDP W, {what}"


def list_row(hw: Hardware, precision: str | None = None, with_name: bool = True) -> list[str]:
    row = [hw.id, fmt_number(hw.memory_gb), fmt_number(hw.memory_bandwidth_gb_s), fmt_number(hw.tdp_w)]
    if precision:
        row += [fmt_number(hw.dense_tops.get(precision)), fmt_number(hw.sparse_tops.get(precision)),
                fmt_ratio(hw.tops_per_watt(precision))]
    else:
        row += [fmt_number(hw.dense_tops.get(p)) for p in LIST_PRECISIONS]
    return row + [hw.name] if with_name else row


def _peer(hw: Hardware) -> str:
    if not hw.peer_link:
        return "none"
    bw = f" {fmt_number(hw.peer_link_bandwidth_gb_s)} GB/s" if hw.peer_link_bandwidth_gb_s else ""
    return f"{hw.peer_link}{bw}"


def _pcie(hw: Hardware) -> str:
    if hw.pcie_gen and hw.pcie_lanes:
        bw = hw.pcie_bandwidth_bytes_per_s
        return f"Gen{hw.pcie_gen} x{hw.pcie_lanes} ({bw / 1e9:.1f} GB/s per direction)" if bw else \
            f"Gen{hw.pcie_gen} x{hw.pcie_lanes}"
    return hw.host_interface or MISSING


def compare_rows(devices: Sequence[Hardware], purchases: Mapping[str, DevicePrice | None] | None = None
                 ) -> list[list[str]]:
    """The key-parameter table: one row per parameter, one column per device (first cell = parameter).
    ``purchases``: each device's purchase price (the cheapest current one of its price file), with its date.

    For every precision any device has: the dense peak, the 2:4-sparse peak, dense TOPS per watt and the
    dense ridge point (ops/byte), so sparse marketing figures never stand in for dense ones. The sparse row is
    left out for a precision no device has a sparse peak for (fp64, fp32).
    """
    rows: list[list[str]] = [
        ["name", *(hw.name for hw in devices)],
        ["architecture", *(hw.architecture for hw in devices)],
        ["segment", *(hw.segment for hw in devices)],
        ["memory GB", *(f"{fmt_number(hw.memory_gb)} {hw.memory_type}" for hw in devices)],
        ["memory bandwidth GB/s", *(fmt_number(hw.memory_bandwidth_gb_s) for hw in devices)],
        ["TDP W", *(fmt_number(hw.tdp_w) for hw in devices)],
        ["peer link (total, bidirectional)", *(_peer(hw) for hw in devices)],
        ["PCIe", *(_pcie(hw) for hw in devices)],
        ["SMs / CUs", *(f"{hw.compute_units} {hw.compute_unit_name}" if hw.compute_units else MISSING
                        for hw in devices)],
        ["L2 MB", *(fmt_number(hw.l2_cache_mb) for hw in devices)],
        ["boost clock MHz", *(fmt_number(hw.boost_clock_mhz) for hw in devices)],
    ]
    for p in peak_precisions(devices):
        rows.append([f"{p} dense TOPS", *(fmt_number(hw.dense_tops.get(p)) for hw in devices)])
        if any(p in hw.sparse_tops for hw in devices):
            rows.append([f"{p} 2:4 sparse TOPS", *(fmt_number(hw.sparse_tops.get(p)) for hw in devices)])
        rows.append([f"{p} dense TOPS/W", *(fmt_ratio(hw.tops_per_watt(p)) for hw in devices)])
        rows.append([f"{p} ridge ops/byte", *(fmt_ratio(ridge_ops_per_byte(hw, p)) for hw in devices)])
    rows.append(["purchase price USD", *(_price((purchases or {}).get(hw.id)) for hw in devices)])
    return rows


def _price(p: DevicePrice | None) -> str:
    if p is None:
        return MISSING
    return fmt_usd(p.usd) + (f" ({p.date.isoformat()})" if p.date else "")


_SHOW_FIELDS: tuple[tuple[str, str], ...] = (
    ("vendor", ""), ("architecture", ""), ("segment", ""), ("form_factor", ""), ("launch_date", ""),
    ("memory_gb", "GB"), ("memory_type", ""), ("memory_bandwidth_gb_s", "GB/s"), ("l2_cache_mb", "MB"),
    ("l2_bandwidth_gb_s", "GB/s"),
    ("compute_units", ""), ("boost_clock_mhz", "MHz"), ("sustained_clock_mhz", "MHz"), ("burst_clock_mhz", "MHz"),
    ("sustained_tensor_clock_mhz", "MHz"), ("sustained_simt_clock_mhz", "MHz"), ("tdp_w", "W"),
    ("memory_clock_mhz", "MHz"),
    ("power_mode", ""),
    ("host_interface", ""), ("pcie_gen", ""), ("pcie_lanes", ""), ("peer_link", ""),
    ("peer_link_bandwidth_gb_s", "GB/s"), ("price_usd", "USD"), ("price_date", ""), ("price_note", ""),
)


def show_rows(hw: Hardware) -> list[list[str]]:
    """[field, value, citation] for every field the file sets."""
    rows = []
    for name, unit in _SHOW_FIELDS:
        value = getattr(hw, name)
        if value in (None, ()):
            continue
        if isinstance(value, tuple):
            text = ", ".join(fmt_number(v) for v in value)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            text = fmt_number(value)
        else:
            text = str(value)
        if name == "compute_units":
            unit = hw.compute_unit_name
        rows.append([name, f"{text} {unit}".strip(), hw.citation(name) or ""])
    return rows


POWER_MODE_COLUMNS = ("mode", "W", "GPU MHz", "SMs", "memory MHz", "CPU cores", "CPU MHz", "source")


def power_mode_rows(hw: Hardware) -> list[list[str]]:
    """One row per power mode (``POWER_MODE_COLUMNS``); the datasheet's mode marked '(datasheet)', a mode only
    some software offers followed by that software; the source by its key (the whole citation is in --json)."""
    rows = []
    for m in hw.power_modes:
        name = m.name + (" (datasheet)" if m.name == hw.datasheet_power_mode else "")
        name += f", {m.software}" if m.software else ""
        rows.append([name, fmt_number(m.power_w), fmt_number(m.gpu_clock_mhz), str(m.active_compute_units),
                     fmt_number(m.memory_clock_mhz), str(m.cpu_cores), fmt_number(m.cpu_clock_mhz),
                     m.source.split(":", 1)[0]])
    return rows


def peak_rows(hw: Hardware) -> list[list[str]]:
    """[precision, dense TOPS, 2:4 sparse TOPS, dense TOPS/W, ridge ops/byte, citation of the dense figure]."""
    rows = []
    for p in peak_precisions([hw]):
        rows.append([p, fmt_number(hw.dense_tops.get(p)), fmt_number(hw.sparse_tops.get(p)),
                     fmt_ratio(hw.tops_per_watt(p)), fmt_ratio(ridge_ops_per_byte(hw, p)),
                     hw.citation(f"dense_tops.{p}") or ""])
    return rows


def format_source(s: Source) -> str:
    extra = ", ".join(x for x in (s.publisher, s.date, s.url) if x)
    return f"[{s.key}] {s.title}" + (f" ({extra})" if extra else "")


def source_lines(hw: Hardware) -> list[str]:
    return [format_source(s) for s in hw.sources]


# --- prices (``hardware show``) ----------------------------------------------------------------------------

OLDER_THAN_A_YEAR = "older than a year"


def _source_record(p: DevicePrice) -> dict:
    if p.source is None:
        return {"key": None, "title": p.whose, "url": None, "publisher": None, "date": None}
    return p.source.model_dump(mode="json")


def price_record(p: DevicePrice, today: _dt.date) -> dict:
    """One price as JSON: kind, usd, per, provider, source, date (ISO, or null for the user's own), date_kind,
    basis, note, whose ('shipped' or 'your prices (FILE)') and older_than_a_year."""
    return {"kind": p.kind.value, "usd": p.usd, "per": p.per.value, "provider": p.provider,
            "source": _source_record(p), "date": p.date.isoformat() if p.date else None, "date_kind": p.date_kind,
            "basis": p.basis, "note": p.note, "whose": p.whose, "older_than_a_year": p.older_than_a_year(today)}


def prices_record(report: PriceReport) -> dict:
    """The ``prices`` part of ``hardware show --json``: the entries, why a kind has none, and the day
    'older than a year' is measured from."""
    return {"prices": [price_record(p, report.today) for p in report.prices],
            "no_public_price": {k.value: why for k, why in report.no_public_price.items()},
            "prices_checked_on": report.today.isoformat()}


def _price_date(p: DevicePrice, today: _dt.date) -> str:
    if p.date is None:
        return MISSING
    return f"{p.date.isoformat()} ({OLDER_THAN_A_YEAR})" if p.older_than_a_year(today) else p.date.isoformat()


def _price_source(p: DevicePrice) -> str:
    where = p.whose if p.source is None else p.source.key
    return f"{where}; {p.basis}" if p.basis else where


def price_rows(report: PriceReport) -> list[list[str]]:
    """[kind, USD, per, provider, date, source and basis], purchases first, each kind cheapest first."""
    order = sorted(report.prices, key=lambda p: (p.kind != PriceKind.PURCHASE, p.usd))
    return [[p.kind.value, fmt_usd(p.usd), p.per.value, p.provider or MISSING, _price_date(p, report.today),
             _price_source(p)] for p in order]


def price_source_lines(report: PriceReport, hw: Hardware) -> list[str]:
    """The sources of the shown prices that the device file does not list already, once each."""
    known = {s.key for s in hw.sources}
    seen: dict[str, str] = {}
    for p in report.prices:
        if p.source is not None and p.source.key not in known:
            seen.setdefault(p.source.key, format_source(p.source))
    return list(seen.values())


def no_price_lines(report: PriceReport) -> list[str]:
    return [f"no public {k.value} price: {why}" for k, why in report.no_public_price.items()]


def fmt_usd(usd: float) -> str:
    """US dollars as the source gives them: '24,875', '249', '2.69', '0.5904'."""
    return f"{usd:,.0f}" if usd >= 1000 else f"{usd:g}"
