"""``tops-advisor validate`` as a library call: measure a model file on this machine, predict it for the
matching catalog device, and put the two side by side (``run_validation`` -> ``ValidationReport``).

The model file is imported once: the same loaded module is measured and counted. Counting goes through
``api.ModelCosts`` (two counted batches, the others extrapolated), exactly as ``benchmarks/reports/accuracy.py`` does.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, computed_field

from ..accuracy import ErrorBand, expected_error
from ..errors import InputError, UnknownHardwareError, UnsupportedPrecisionError
from ..formatting import format_seconds
from ..kinds import Mode
from .compare import KindRow, LatencyRow, compare_by_kind, compare_latency

MEASURABLE_DTYPES = ("fp32", "fp16", "bf16", "amp")   # amp: autocast to fp16 (the fp16 peak)
CPU_NOTE = ("CPU measurement beside a {hw} prediction: this tests the plumbing (loading, timing, profiling, "
            "alignment), it says nothing about the predictor's accuracy")


class KindsAtBatch(BaseModel):
    """Kernel time per operator kind at one batch, measured beside predicted."""

    model_config = ConfigDict(frozen=True)

    batch: int
    kinds: tuple[KindRow, ...]


class ValidationReport(BaseModel):
    """What ``validate`` measured and predicted, in seconds; ``render.json_units.to_json`` gives the command's
    ``--json`` output."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    model: str
    hardware: str
    hardware_name: str = Field(exclude=True)  # for the table's title
    device: str
    dtype: str
    channels_last: bool = False   # model and inputs in channels-last memory format
    modes: tuple[str, ...]
    calibration_source: str       # "" when no calibration was used
    note: str
    family: str | None
    expected_error: dict[str, ErrorBand]
    rows: tuple[LatencyRow, ...]
    per_op: tuple[KindsAtBatch, ...]
    environment: dict[str, str]
    runs: tuple  # validate.measure.Measurement (imports torch, so not named in the annotation)
    plot: str | None

    @computed_field
    @property
    def failed(self) -> list[dict]:
        """Batches that did not run (out of memory, or the model's own failure with ``keep_going``)."""
        return [{"batch": m.batch, "error": m.error} for m in self.runs if m.error]


def check_request(device: str, mode: str, hardware_name: str | None) -> None:
    """InputError (one line) for a combination that cannot run."""
    if device == "cpu" and mode in ("graph", "compiled"):
        raise InputError(f"{mode} mode replays CUDA graphs, which the CPU does not have; use --mode eager or both")
    if device == "cpu" and not hardware_name:
        raise InputError("--device cpu needs --hardware ID: the catalog device whose prediction to put beside "
                         "the CPU measurement (a plumbing test, not accuracy)")


def local_hardware(device: str, catalog, hardware_name: str | None):
    """The catalog device to predict for: the one named, else this GPU matched by its name."""
    from ..probe.runner import match_catalog
    from .measure import device_name

    if hardware_name:
        return catalog.get(hardware_name)
    name = device_name(device)
    hw_id = match_catalog(name, catalog)
    if hw_id is None:
        raise UnknownHardwareError(f"this GPU ({name}) is not in the catalog, so there is nothing to "
                                   "predict it with", hint="pass --hardware ID for the closest device "
                                   "(tops-advisor hardware list), or add a device file with --catalog")
    return catalog.get(hw_id)


def measured_line(m, modes: tuple[str, ...]) -> str:
    """One progress line per measured batch."""
    if m.error:
        return f"batch {m.batch}: {m.error}; going on with the others"
    return f"batch {m.batch}: " + ", ".join(f"{md} {format_seconds(m.latency_s(md))}" for md in modes)


def run_validation(model, batches: list[int], dtype: str, catalog, *, mode: str = "both",
                   hardware_name: str | None = None, calibration_path: str | Path | None = None,
                   per_op: bool = False, plot_path: Path | None = None, device: str = "cuda", repeats: int = 30,
                   warmup: int = 10, command: str = "", progress: Callable[[str], None] | None = None,
                   channels_last: bool = False) -> ValidationReport:
    """Measure ``model`` (a model file or library spec, or a ``counting.load_model`` result) at each batch on
    ``device``, predict each for the catalog device (datasheet defaults
    and calibrated), line them up; see ``ValidationReport``. ``mode``: graph, eager, both or compiled
    (torch.compile + CUDA graph, predicted from inductor's kernels). ``channels_last``: model and inputs in
    channels-last memory format, measured and predicted so (``ModelCosts``)."""
    from ..api import ModelCosts, calibration_for
    from ..counting import load_model
    from ..roofline import device_perf
    from . import measure as M

    say = progress or (lambda _line: None)
    check_request(device, mode, hardware_name)
    M.check_device(device)
    hw = local_hardware(device, catalog, hardware_name)
    peak = "fp16" if dtype == "amp" else dtype
    if peak not in hw.dense_tops:
        raise UnsupportedPrecisionError(f"{hw.id} has no {peak} peak; it has {', '.join(hw.dense_tops)}")
    cal, source = calibration_for(hw, calibration_path)
    perf = (device_perf(hw), device_perf(hw, cal, source) if cal else None)  # (defaults, calibrated)
    model_file = load_model(model)  # the one import of the user's file: measured and counted
    costs = ModelCosts(model_file, base_dtype=dtype, channels_last=channels_last)
    modes = tuple(m for m in ((Mode.GRAPH, Mode.EAGER) if mode == "both" else (Mode(mode),)) if device == "cuda" or m != Mode.GRAPH)
    say(f"measuring {model_file.label} on {M.device_name(device)} ({device}), {dtype}, batches "
        f"{', '.join(map(str, batches))}; predicting for {hw.id}")
    measured = M.measure_batches(model_file, batches, dtype, repeats=repeats, warmup=warmup, profile=per_op,
                                 device=device, modes=modes, model_name=model_file.label,
                                 progress=lambda m: say(measured_line(m, modes)), channels_last=channels_last)
    rows, kinds, family = _compare(measured, costs, hw, dtype, modes, perf, per_op)
    bands = {md: expected_error(family, md, perf[1] is not None, dtype=dtype) for md in modes} if family else {}
    if plot_path is not None and rows:
        from .plot import parity_plot

        parity_plot([r.model_dump() for r in rows], plot_path, title=f"{model_file.stem} on {hw.id}")
    return ValidationReport(
        model=model_file.label, hardware=hw.id, hardware_name=hw.name, device=device, dtype=dtype,
        channels_last=channels_last, modes=modes,
        calibration_source=source if perf[1] else "", note=CPU_NOTE.format(hw=hw.id) if device == "cpu" else "",
        family=family, expected_error={md: b for md, b in bands.items() if b}, rows=tuple(rows),
        per_op=tuple(kinds), environment=M.environment(device, command=command), runs=tuple(measured),
        plot=str(plot_path) if plot_path else None)


def _compare(measured, costs, hw, dtype: str, modes: tuple[str, ...], perf: tuple, per_op: bool
             ) -> tuple[list[LatencyRow], list[KindsAtBatch], str | None]:
    """Latency rows, kernel time per kind (with ``per_op``) and the model's family, over the batches that ran."""
    from ..accuracy import model_family
    from ..roofline import predict

    perf_default, perf_cal = perf
    rows: list[LatencyRow] = []
    kinds: list[KindsAtBatch] = []
    family = None
    for m in measured:
        if m.error:
            continue
        w = costs.at(m.batch, dtype)
        family = family or model_family(w)
        at = {md: costs.at(m.batch, dtype, mode=md) for md in modes}   # compiled: inductor's kernels
        preds = {md: (predict(at[md], hw, mode=md, perf=perf_default),
                      predict(at[md], hw, mode=md, perf=perf_cal) if perf_cal else None) for md in modes}
        rows += compare_latency(m, preds)
        if per_op and m.kernels_by_op is not None:
            graph = predict(w, hw, mode="graph", perf=perf_cal or perf_default)
            kinds.append(KindsAtBatch(batch=m.batch, kinds=tuple(compare_by_kind(m.kernels_by_op, graph))))
    return rows, kinds, family
