"""`tops-advisor hardware ...`: list, show, compare and validate catalog devices; print the file schema."""

from __future__ import annotations

import typing
from pathlib import Path

import click

from ..catalog.schema import Segment
from ..render.console import console
from ..units import PEAK_KEYS
from .common import catalog_option, echo_json, get_catalog, json_option, prices_option

SEGMENTS = typing.get_args(Segment)
EXIT_INVALID = 1


@click.group()
def hardware() -> None:
    """The hardware catalog: peaks, memory, bandwidth and power of each device, with sources."""


@hardware.command("list")
@click.option("--segment", type=click.Choice(SEGMENTS), help="Only devices of this segment.")
@click.option("--min-memory", "min_memory_gb", type=float, metavar="GB",
              help="Only devices with at least this much memory (GB = 1e9 bytes).")
@click.option("--precision", help=f"Only devices with a dense peak in this precision ({', '.join(PEAK_KEYS)}).")
@catalog_option
@json_option
def list_(segment, min_memory_gb, precision, catalog_dirs, as_json):
    """List the devices in the catalog."""
    from ..errors import InputError
    from ..render.hardware import device_record
    from ..units import parse_precision

    if min_memory_gb is not None and min_memory_gb < 0:
        raise InputError(f"--min-memory must be zero or more GB, got {min_memory_gb:g}")
    if precision is not None:
        precision = parse_precision(precision, allowed=PEAK_KEYS)
    devices = [hw for hw in get_catalog(catalog_dirs)
               if (segment is None or hw.segment == segment)
               and (min_memory_gb is None or hw.memory_gb >= min_memory_gb)
               and (precision is None or precision in hw.dense_tops)]
    if as_json:
        echo_json([device_record(hw) for hw in devices])
        return
    from ..render.hardware_tables import list_table

    out = console()
    out.print(list_table(devices, precision, out.width))
    if not devices:
        click.echo("no device matches these filters", err=True)


@hardware.command()
@click.argument("device")
@prices_option
@catalog_option
@json_option
def show(device, prices_file, catalog_dirs, as_json):
    """Everything known about DEVICE (an id or alias), with the source of each number and its prices."""
    from ..catalog.prices import device_prices, load_prices
    from ..render.hardware import (
        device_record,
        no_price_lines,
        price_source_lines,
        prices_record,
        source_lines,
    )
    from ..render.hardware_tables import prices_table, show_tables
    from ..render.tables import bullet

    catalog = get_catalog(catalog_dirs)
    hw = catalog.get(device)
    shipped, user = load_prices(catalog, prices_file)
    report = device_prices(hw, shipped, user)
    if as_json:
        echo_json({**device_record(hw), **prices_record(report)})
        return
    out = console()
    origin = catalog.origins.get(hw.id)
    out.print(f"[bold]{hw.name}[/bold] ({hw.id})" + (f"  from {origin}" if origin else ""))
    if hw.aliases:
        out.print(f"aliases: {', '.join(hw.aliases)}")
    for table in show_tables(hw):
        out.print(table)
    if report.prices:
        out.print(prices_table(report))
    for line in no_price_lines(report):
        bullet(out, line, indent=0)
    if hw.notes:
        out.print("[bold]Notes[/bold]")
        for n in hw.notes:
            bullet(out, n, indent=0)
    out.print("[bold]Sources[/bold]")
    for line in source_lines(hw) + price_source_lines(report, hw):
        out.print(line, highlight=False, markup=False)


@hardware.command()
@click.argument("devices", nargs=-1, required=True)
@catalog_option
@json_option
def compare(devices, catalog_dirs, as_json):
    """Compare DEVICES side by side: dense and sparse peaks, bandwidth, memory, power, TOPS/W."""
    from ..errors import InputError
    from ..render.hardware import compare_record

    catalog = get_catalog(catalog_dirs)
    chosen = []
    for name in devices:
        hw = catalog.get(name)
        if hw.id not in (c.id for c in chosen):
            chosen.append(hw)
    if len(chosen) < 2:
        raise InputError(f"compare needs at least two different devices, got {', '.join(devices)}",
                         hint=f"use 'tops-advisor hardware show {devices[0]}' for one device")
    if as_json:
        echo_json([compare_record(hw) for hw in chosen])
        return
    from ..catalog.prices import PriceKind, device_prices, load_prices
    from ..render.hardware_tables import compare_tables

    shipped, user = load_prices(catalog)
    purchases = {hw.id: device_prices(hw, shipped, user).cheapest(PriceKind.PURCHASE) for hw in chosen}
    out = console()
    for table in compare_tables(chosen, out.width, purchases):
        out.print(table)


def _validate_paths(paths: tuple[Path, ...]) -> list[dict]:
    """One result per file: {path, ok, id, error}. Directories expand to their *.toml files."""
    from ..catalog import load_hardware_file
    from ..catalog.schema import normalise_name
    from ..errors import CatalogError

    results: list[dict] = []
    for path in paths:
        if path.is_dir():
            files = sorted(p for p in path.glob("*.toml") if p.is_file())
            if not files:
                results.append({"path": str(path), "ok": False, "id": None,
                                "error": f"{path}: no .toml device files in this directory"})
                continue
        elif path.exists():
            files = [path]
        else:
            results.append({"path": str(path), "ok": False, "id": None, "error": f"{path}: no such file or directory"})
            continue
        seen: dict[str, tuple[str, Path]] = {}  # normalised id -> (id, file), within this path
        for f in files:
            try:
                hw = load_hardware_file(f)
            except CatalogError as exc:
                results.append({"path": str(f), "ok": False, "id": None, "error": str(exc)})
                continue
            key = normalise_name(hw.id)
            if key in seen:
                other_id, other_file = seen[key]
                results.append({"path": str(f), "ok": False, "id": hw.id,
                                "error": f"{f}: id {hw.id!r} names the same device as {other_id!r} ({other_file}); "
                                         "ids must differ by more than dashes"})
                continue
            seen[key] = (hw.id, f)
            results.append({"path": str(f), "ok": True, "id": hw.id, "error": None})
    return results


@hardware.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@catalog_option
@json_option
@click.pass_context
def validate(ctx, paths, catalog_dirs, as_json):
    """Check device files (or directories of them); exit 1 if any is invalid."""
    results = _validate_paths(paths)
    if as_json:
        echo_json(results)
    else:
        for r in results:
            if r["ok"]:
                click.echo(f"OK     {r['path']} ({r['id']})")
            else:
                click.echo(f"ERROR  {r['error']}")
        bad = sum(not r["ok"] for r in results)
        click.echo(f"{len(results) - bad} valid, {bad} invalid", err=True)
    if any(not r["ok"] for r in results):
        ctx.exit(EXIT_INVALID)


@hardware.command()
@click.option("--json", "as_json", is_flag=True,
              help="Print JSON only on stdout (the schema is JSON either way; accepted like on every command).")
def schema(as_json):
    """Print the JSON Schema of a device file (point your editor's TOML/YAML schema support at it).

    It describes the file format, which no catalog changes: there is no --catalog here."""
    from ..catalog import Hardware

    echo_json(Hardware.model_json_schema())
