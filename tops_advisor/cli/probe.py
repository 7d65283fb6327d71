"""`tops-advisor probe`: measure this machine's GPU (or CPU) and write a calibration."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..calibration import calibration_filename, default_calibration_dir, save_calibration
from ..errors import InputError, ProbeError
from .common import catalog_option, console, echo_json, get_catalog, json_option


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
    from ..probe.report import probe_report
    from ..probe.runner import run_probe

    if sustained_s is not None and sustained_s <= 0:
        raise InputError(f"--sustained {sustained_s:g}: give a positive number of seconds, e.g. --sustained 30")
    mode = "quick" if quick else "full"
    catalog = get_catalog(catalog_dirs)
    if all_gpus or world_size is not None or links_only:
        from .probe_links import probe_all

        probe_all(device, mode, sustained_s, save, output, world_size, links_only, timeout_s, as_json, catalog)
        return
    command = f"tops-advisor probe --device {device} --{mode}" + \
        (f" --sustained {sustained_s:g}" if sustained_s else "")
    result = run_probe(device, mode, sustained_s=sustained_s, catalog=catalog, command=command)
    report = probe_report(result, catalog)

    targets = ([output] if output else []) + \
        ([default_calibration_dir() / calibration_filename(result.hardware)] if save else [])
    saved: list[str] = []
    if targets and result.interrupted:
        click.echo("interrupted: no calibration written", err=True)
    elif targets and result.calibration is None:
        _show(report, as_json, saved)
        raise ProbeError("too little was measured to write a calibration (need a matrix rate and the copy "
                         "bandwidth); see the notes above")
    elif targets:
        for path in targets:
            saved.append(str(save_calibration(result.calibration, path)))
    _show(report, as_json, saved, result.calibration)
    for path in saved:
        click.echo(f"calibration written to {path}", err=True)
    if result.interrupted:
        sys.exit(130)


def _show(report, as_json: bool, saved: list[str], calibration=None) -> None:
    if as_json:
        echo_json({**report, "saved_to": saved,
                   "calibration": calibration.model_dump(mode="json") if calibration else None})
    else:
        from ..probe.report import render_probe

        render_probe(report, console())
