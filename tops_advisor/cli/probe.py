"""`tops-advisor probe`: measure this machine's GPU (or CPU) and write a calibration."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..errors import InputError, ProbeError
from ..render.console import console
from .common import catalog_option, echo_json, get_catalog, json_option


@click.command("probe")
@click.option("--device", type=click.Choice(["cuda", "cpu"]), default="cuda", show_default=True,
              help="Probe the first CUDA GPU or this CPU (through torch).")
@click.option("--quick/--full", "quick", default=True, show_default=True,
              help="Quick (under 20 s on an H200) or full (under 90 s: more shapes, every precision's grid).")
@click.option("--sustained", "sustained_s", type=float, metavar="SECONDS",
              help="Also hold a heavy GEMM load this long: clocks, power, throttling, TOPS per watt.")
@click.option("--save", is_flag=True, help="Save the calibration in the user's data directory.")
@click.option("--output", type=click.Path(path_type=Path, dir_okay=False), help="Write the calibration here.")
@click.option("--all-gpus", is_flag=True,
              help="Also measure the links between devices: NCCL all-reduce/all-gather bus bandwidth, peer copies, "
                   "small all-reduce latency, NVLink topology (with --device cpu: gloo between CPU processes).")
@click.option("--world-size", type=int, metavar="N",
              help="Ranks for --all-gpus (default: every visible GPU; 2 processes with --device cpu).")
@click.option("--links-only", is_flag=True,
              help="With --all-gpus: measure only the links; --output/--save add them to the existing file.")
@click.option("--timeout", "timeout_s", type=float, default=120.0, show_default=True, metavar="SECONDS",
              help="With --all-gpus: stop every rank after this long (a hung or failed rank is named).")
@json_option
@catalog_option
def probe(device: str, quick: bool, sustained_s: float | None, save: bool, output: Path | None, all_gpus: bool,
          world_size: int | None, links_only: bool, timeout_s: float, as_json: bool,
          catalog_dirs: tuple[Path, ...]) -> None:
    """Measure what this card really delivers and compare it with its datasheet.

    Progress goes to stderr. Ctrl-C stops, prints what was measured and writes no calibration.
    """
    if sustained_s is not None and sustained_s <= 0:
        raise InputError(f"--sustained {sustained_s:g}: give a positive number of seconds, e.g. --sustained 30")
    mode = "quick" if quick else "full"
    catalog = get_catalog(catalog_dirs)
    if all_gpus or world_size is not None or links_only:
        _probe_all(device, mode, sustained_s, save, output, world_size, links_only, timeout_s, as_json, catalog)
        return
    from ..probe.all_gpus import calibration_targets, write_calibration
    from ..probe.report import probe_report
    from ..probe.runner import run_probe

    command = f"tops-advisor probe --device {device} --{mode}" + \
        (f" --sustained {sustained_s:g}" if sustained_s else "")
    result = run_probe(device, mode, sustained_s=sustained_s, catalog=catalog, command=command)
    report = probe_report(result, catalog)
    targets = calibration_targets(output, save, result.hardware)
    saved: list[str] = []
    if targets and result.interrupted:
        click.echo("interrupted: no calibration written", err=True)
    elif targets:
        try:
            saved = write_calibration(result.calibration, targets)
        except ProbeError:
            _show(report, as_json, saved)
            raise
    _show(report, as_json, saved, result.calibration)
    for path in saved:
        click.echo(f"calibration written to {path}", err=True)
    if result.interrupted:
        sys.exit(130)


def _show(report, as_json: bool, saved: list[str], calibration=None, links=None, skipped: str | None = None,
          all_gpus: bool = False) -> None:
    """JSON, or the tables (``all_gpus``: the links' table; the probe's own was printed before them)."""
    from ..probe.report import links_report

    if as_json:
        extra = {"links": links_report(links) if links else None, "links_skipped": skipped} if all_gpus else {}
        echo_json({**report, **extra, "saved_to": saved,
                   "calibration": calibration.model_dump(mode="json") if calibration else None})
        return
    from ..render.probe import render_links, render_probe

    if not all_gpus:
        render_probe(report, console())
    elif links is not None:
        render_links(links_report(links), console())
    elif skipped:
        console().print(f"links: {skipped}")


def _probe_all(device, mode, sustained_s, save, output, world_size, links_only, timeout_s, as_json, catalog) -> None:
    """``--all-gpus``: see ``probe.all_gpus``."""
    from ..probe.all_gpus import INTERRUPTED, probe_all_gpus
    from ..render.probe import render_probe

    command = f"tops-advisor probe --all-gpus --device {device} --{mode}" + \
        (f" --world-size {world_size}" if world_size else "") + (" --links-only" if links_only else "")
    on_probe = None if as_json else (lambda r: render_probe(r.report, console()))
    run = probe_all_gpus(device, mode, catalog, sustained_s=sustained_s, world_size=world_size,
                         links_only=links_only, timeout_s=timeout_s, output=output, save=save, command=command,
                         on_probe=on_probe)
    if run.interrupted:
        if run.interrupted == "probe":
            if not as_json:
                render_probe(run.report, console())
            _show(run.report, as_json, [], None, None, run.skipped, all_gpus=True)
        click.echo(INTERRUPTED[run.interrupted], err=True)
        sys.exit(130)
    try:
        saved = run.save()
    except ProbeError:
        _show(run.report, as_json, [], None, run.links, run.skipped, all_gpus=True)
        raise
    _show(run.report, as_json, saved, run.calibration, run.links, run.skipped, all_gpus=True)
    for path in saved:
        click.echo(f"calibration written to {path}", err=True)
