"""``probe --all-gpus`` as a library call: the single-device probe plus the links between this machine's devices.

Decisions (docs/probe.md, "Several GPUs"):
- ``--all-gpus`` means "every GPU there is": on a machine with one GPU the links are skipped with a reason,
  that GPU is measured as a plain probe would, and the run succeeds (``links_only``: nothing to measure).
- ``world_size`` is a demand: fewer than that many visible GPUs (or fewer than 2) is an error.
- ``links_only`` skips the single-device probe; the targets (``output``, ``save``) then get ``links`` added to
  the calibration already in each file (there must be one: a calibration needs the single-device numbers).

``probe_all_gpus`` measures and returns an ``AllGpusRun``; ``AllGpusRun.save`` writes the calibrations.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..calibration import (
    Calibration,
    calibration_filename,
    default_calibration_dir,
    load_calibration,
    save_calibration,
)
from ..errors import InputError, ProbeError

INTERRUPTED = {"probe": "interrupted: no calibration written",
               "links": "interrupted: every rank was stopped; no calibration written"}
TOO_LITTLE = ("too little was measured to write a calibration (need a matrix rate and the copy bandwidth); "
              "see the notes above")


def say_stderr(msg: str) -> None:
    sys.stderr.write(f"probe: {msg}\n")
    sys.stderr.flush()


def calibration_targets(output: Path | None, save: bool, hardware: str) -> list[Path]:
    """Where a calibration goes: ``output``, and the user's data directory with ``save``."""
    return ([output] if output else []) + ([default_calibration_dir() / calibration_filename(hardware)] if save else [])


def write_calibration(calibration: Calibration | None, targets: list[Path]) -> list[str]:
    """Save ``calibration`` to every target; ProbeError when there are targets and no calibration."""
    if targets and calibration is None:
        raise ProbeError(TOO_LITTLE)
    return [str(save_calibration(calibration, path)) for path in targets]


def link_ranks(device: str, world_size: int | None) -> tuple[int | None, str | None]:
    """(ranks to run, or None to skip the links; why they are skipped)."""
    from .distributed import device_count

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


def local_hardware_id(device: str, catalog) -> str:
    """This machine's device as a calibration names it: the catalog id, else the device's own name."""
    from .kit import cpu_model
    from .runner import match_catalog

    if device == "cpu":
        return f"CPU {cpu_model()}"
    import torch

    name = torch.cuda.get_device_name(0)
    return match_catalog(name, catalog) or name


def read_topology_or_note(device: str, n: int):
    """The NVLink/PCIe topology of the first ``n`` GPUs (None on the CPU); a note when NVML cannot say."""
    if device != "cuda":
        return None
    from .nvml import import_nvml
    from .topology import read_topology

    try:
        return read_topology(import_nvml(), n)
    except ProbeError as exc:
        from ..calibration import Topology

        return Topology(notes=(f"{exc} (topology not reported)",))


@dataclass
class AllGpusRun:
    """What ``probe_all_gpus`` measured. ``interrupted``: 'probe' or 'links' when Ctrl-C stopped that step
    (nothing is saved then; ``INTERRUPTED`` says so). ``existing``: with ``links_only``, the calibrations the
    links are added to, by path."""

    report: dict[str, Any] = field(default_factory=dict)   # probe_report of the single-device probe
    calibration: Calibration | None = None
    hardware: str = ""
    links: Any = None                                        # calibration.Links, or None when skipped
    skipped: str | None = None
    targets: list[Path] = field(default_factory=list)
    existing: dict[Path, Calibration] = field(default_factory=dict)
    links_only: bool = False
    interrupted: str | None = None

    def save(self) -> list[str]:
        """Write the calibration (with the links) to every target; the paths written. ProbeError when a
        calibration was asked for and too little was measured to make one."""
        if self.links_only:
            saved = []
            for path, old in self.existing.items():
                if self.links is not None:
                    self.calibration = old.model_copy(update={"links": self.links})
                    saved.append(str(save_calibration(self.calibration, path)))
            return saved
        if self.targets and self.calibration is None:
            raise ProbeError(TOO_LITTLE)
        cal = self.calibration.model_copy(update={"links": self.links}) if self.calibration is not None else None
        self.calibration = cal
        return write_calibration(cal, self.targets)


def _existing_calibrations(device: str, catalog, targets_of: Callable[[str], list[Path]]) -> dict[Path, Calibration]:
    """With ``links_only``: the calibrations to add the links to, checked before measuring."""
    hardware = local_hardware_id(device, catalog)
    existing = {}
    for path in targets_of(hardware):
        if not Path(path).is_file():
            raise ProbeError(f"no calibration at {path} to add the links to",
                             hint="run `tops-advisor probe --all-gpus` (without --links-only) to write one")
        old = load_calibration(path)
        if old.hardware != hardware:
            raise ProbeError(f"calibration {path} was measured on {old.hardware!r}, not on this machine's "
                             f"{hardware!r}", hint="give --output a calibration of this device")
        existing[path] = old
    return existing


def probe_all_gpus(device: str, mode: str, catalog, *, sustained_s: float | None = None, world_size: int | None = None,
                   links_only: bool = False, timeout_s: float = 120.0, output: Path | None = None,
                   save: bool = False, command: str = "", on_probe: Callable[[AllGpusRun], None] | None = None,
                   progress: Callable[[str], None] = say_stderr) -> AllGpusRun:
    """Probe this machine's first device (unless ``links_only``), then the links between its devices.
    ``on_probe`` sees the run once the single-device probe is done, before the links are measured."""
    from .distributed import run_links

    if timeout_s is None or timeout_s <= 0:
        raise InputError(f"--timeout {timeout_s:g}: give a positive number of seconds, e.g. --timeout 120")
    if links_only and sustained_s:
        raise InputError("--sustained measures one device; it does not go with --links-only")
    n, skipped = link_ranks(device, world_size)
    run = AllGpusRun(skipped=skipped, links_only=links_only)
    if links_only and (output or save):
        run.existing = _existing_calibrations(device, catalog, lambda hw: calibration_targets(output, save, hw))
    elif not links_only:
        _probe_first_device(run, device, mode, catalog, sustained_s, command)
        run.targets = calibration_targets(output, save, run.hardware)
        if run.interrupted:
            return run
        if on_probe:
            on_probe(run)
    if n is None:
        progress(skipped)
        return run
    try:
        run.links = run_links(device, mode, n, timeout_s=timeout_s, progress=progress,
                              topology=read_topology_or_note(device, n)).links
    except KeyboardInterrupt:
        run.interrupted = "links"
    return run


def _probe_first_device(run: AllGpusRun, device: str, mode: str, catalog, sustained_s, command: str) -> None:
    from .report import probe_report
    from .runner import run_probe

    result = run_probe(device, mode, sustained_s=sustained_s, catalog=catalog, command=command)
    run.report, run.calibration, run.hardware = probe_report(result, catalog), result.calibration, result.hardware
    if result.interrupted:
        run.interrupted = "probe"
    elif device == "cuda":
        import torch

        torch.cuda.empty_cache()  # the probe's buffers on GPU 0 are not needed while the ranks run
