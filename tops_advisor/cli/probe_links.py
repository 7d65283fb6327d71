"""`tops-advisor probe --all-gpus`: the single-device probe plus the links between this machine's devices.

Decisions (docs/probe.md, "Several GPUs"):
- ``--all-gpus`` means "every GPU there is": on a machine with one GPU it says so on stderr, measures that GPU
  as a plain probe would, and exits 0 (``--links-only``: nothing to measure, exit 0).
- ``--world-size N`` is a demand: fewer than N visible GPUs (or N < 2) is an error, exit 2.
- ``--links-only`` skips the single-device probe; ``--output``/``--save`` then add ``links`` to the
  calibration already in that file (there must be one: a calibration needs the single-device numbers).
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..calibration import (
    Calibration,
    calibration_filename,
    default_calibration_dir,
    load_calibration,
    save_calibration,
)
from ..errors import InputError, ProbeError
from .common import console, echo_json


def _say(msg: str) -> None:
    sys.stderr.write(f"probe: {msg}\n")
    sys.stderr.flush()


def _ranks(device: str, world_size: int | None) -> tuple[int | None, str | None]:
    """(ranks to run, or None to skip the links; why they are skipped)."""
    from ..probe.distributed import device_count

    if world_size is not None and world_size < 2:
        raise InputError(f"--world-size {world_size}: links need at least 2 ranks")
    if device == "cpu":
        return world_size or 2, None
    available = device_count("cuda")
    if world_size is not None:
        if world_size > available:
            raise ProbeError(f"--world-size {world_size}, but only {available} CUDA GPU"
                             f"{'s are' if available != 1 else ' is'} visible",
                             hint="leave --world-size out to use every visible GPU, or check CUDA_VISIBLE_DEVICES")
        return world_size, None
    if available == 0:
        raise ProbeError("no CUDA GPU is visible", hint="use --device cpu to run the gloo path on CPU processes")
    if available == 1:
        return None, "only 1 GPU is visible: peer links need 2 or more, so they were not measured"
    return available, None


def _hardware_id(device: str, catalog) -> str:
    from ..probe.kit import cpu_model
    from ..probe.runner import match_catalog

    if device == "cpu":
        return f"CPU {cpu_model()}"
    import torch

    name = torch.cuda.get_device_name(0)
    return match_catalog(name, catalog) or name


def _targets(output: Path | None, save: bool, hardware: str) -> list[Path]:
    return ([output] if output else []) + ([default_calibration_dir() / calibration_filename(hardware)] if save else [])


def _topology(device: str, n: int):
    if device != "cuda":
        return None
    from ..probe.nvml import import_nvml
    from ..probe.topology import read_topology

    try:
        return read_topology(import_nvml(), n)
    except ProbeError as exc:
        from ..calibration import Topology

        return Topology(notes=(f"{exc} (topology not reported)",))


def probe_all(device: str, mode: str, sustained_s: float | None, save: bool, output: Path | None,
              world_size: int | None, links_only: bool, timeout_s: float, as_json: bool, catalog) -> None:
    from ..probe.distributed import run_links

    if timeout_s is None or timeout_s <= 0:
        raise InputError(f"--timeout {timeout_s:g}: give a positive number of seconds, e.g. --timeout 120")
    if links_only and sustained_s:
        raise InputError("--sustained measures one device; it does not go with --links-only")
    n, skipped = _ranks(device, world_size)
    command = f"tops-advisor probe --all-gpus --device {device} --{mode}" + \
        (f" --world-size {world_size}" if world_size else "") + (" --links-only" if links_only else "")

    report: dict = {}
    calibration: Calibration | None = None
    existing: dict[Path, Calibration] = {}
    if links_only and (output or save):  # check the files to add the links to before measuring
        hardware = _hardware_id(device, catalog)
        for path in _targets(output, save, hardware):
            if not Path(path).is_file():
                raise ProbeError(f"no calibration at {path} to add the links to",
                                 hint="run `tops-advisor probe --all-gpus` (without --links-only) to write one")
            old = load_calibration(path)
            if old.hardware != hardware:
                raise ProbeError(f"calibration {path} was measured on {old.hardware!r}, not on this machine's "
                                 f"{hardware!r}", hint="give --output a calibration of this device")
            existing[path] = old
    elif not links_only:
        from ..probe.report import probe_report, render_probe
        from ..probe.runner import run_probe

        result = run_probe(device, mode, sustained_s=sustained_s, catalog=catalog, command=command)
        report, calibration, hardware = probe_report(result, catalog), result.calibration, result.hardware
        if result.interrupted:
            _show(report, None, skipped, as_json, [], None, probe_table=True)
            click.echo("interrupted: no calibration written", err=True)
            sys.exit(130)
        if not as_json:
            render_probe(report, console())
        if device == "cuda":
            import torch

            torch.cuda.empty_cache()  # the probe's buffers on GPU 0 are not needed while the ranks run

    links = None
    if n is not None:
        try:
            links = run_links(device, mode, n, timeout_s=timeout_s, progress=_say,
                              topology=_topology(device, n)).links
        except KeyboardInterrupt:
            click.echo("interrupted: every rank was stopped; no calibration written", err=True)
            sys.exit(130)
    else:
        _say(skipped)

    saved: list[str] = []
    if links_only:
        for path, old in existing.items():
            if links is not None:
                calibration = old.model_copy(update={"links": links})
                saved.append(str(save_calibration(calibration, path)))
    else:
        targets = _targets(output, save, hardware)
        if targets and calibration is None:
            _show(report, links, skipped, as_json, saved, None)
            raise ProbeError("too little was measured to write a calibration (need a matrix rate and the copy "
                             "bandwidth); see the notes above")
        if calibration is not None:
            calibration = calibration.model_copy(update={"links": links})
        for path in targets:
            saved.append(str(save_calibration(calibration, path)))
    _show(report, links, skipped, as_json, saved, calibration)
    for path in saved:
        click.echo(f"calibration written to {path}", err=True)


def _show(report: dict, links, skipped: str | None, as_json: bool, saved: list[str], calibration,
          probe_table: bool = False) -> None:
    """JSON, or the links table (the probe's own table was printed before the links were measured)."""
    from ..probe.distributed import links_report, render_links

    if as_json:
        echo_json({**report, "links": links_report(links) if links else None, "links_skipped": skipped,
                   "saved_to": saved, "calibration": calibration.model_dump(mode="json") if calibration else None})
        return
    if probe_table and report:
        from ..probe.report import render_probe

        render_probe(report, console())
    if links is not None:
        render_links(links_report(links), console())
    elif skipped:
        console().print(f"links: {skipped}")
