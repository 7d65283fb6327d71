"""``tops-advisor validate --train`` as a library call: count and predict one training step for the matching
catalog device, measure the same step on this machine, and put them side by side
(``run_train_validation`` -> ``TrainValidationReport``).

The model is loaded once: the same source is counted (``counting.training.count_training``, on meta tensors)
and built for real (``train_step``). Counting runs first, so a setup the model cannot take (LoRA without
linear layers, checkpointing it does not offer, nothing to train) fails before anything runs on the device.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..formatting import fmt_gb, format_seconds
from ..kinds import Mode
from ..train import TrainSetup
from .run import check_request, local_hardware
from .train_compare import StepMeasurement, TrainValidationReport

CPU_NOTE = ("timed on the CPU (the host clock, no memory figures) beside a {hw} prediction: this tests the "
            "plumbing (building the model, the step, timing), it says nothing about the predictor's accuracy")


def _predict_step(source, batch: int, setup: TrainSetup, hw, calibration, calibration_source: str,
                  mode: Mode = Mode.EAGER):
    """One training step of ``source`` counted and predicted for ``hw`` in ``mode`` (eager or compiled;
    ``api.analyze_training``, with the calibration's rates when there is one): (workload, prediction)."""
    from ..api import analyze_training

    result = analyze_training(source, hw, batch=batch, setup=setup, mode=mode,
                              calibration=(calibration, calibration_source))
    return result.workload, result.prediction


def measured_line(m: StepMeasurement) -> str:
    """The progress line of a measured step."""
    if m.error:
        return f"batch {m.batch}: {m.error}"
    peak = f", peak {fmt_gb(m.steady_peak_bytes)}" if m.steady_peak_bytes is not None else ""
    return (f"batch {m.batch}: step {format_seconds(m.step_s)} (forward {format_seconds(m.forward_s)}, backward "
            f"{format_seconds(m.backward_s)}, optimizer {format_seconds(m.optimizer_s)}) over {m.repeats} "
            f"steps{peak}")


def run_train_validation(model, batch: int, setup: TrainSetup, catalog, *, hardware_name: str | None = None,
                         calibration_path: str | Path | None = None, device: str = "cuda", repeats: int = 30,
                         warmup: int = 10, command: str = "", mode: Mode = Mode.EAGER,
                         progress: Callable[[str], None] | None = None) -> TrainValidationReport:
    """Predict one training step of ``model`` (eager, or ``mode`` compiled: ``torch.compile(model)``) (a model file or library spec, or a ``counting.load_model``
    result) at ``batch`` with ``setup`` for the catalog device (the one named, else this GPU), measure it on
    ``device`` (``repeats`` timed steps after ``warmup`` untimed ones and half a second of them), and line the
    two up; see ``TrainValidationReport``."""
    from ..api import calibration_for
    from ..counting import load_model
    from . import measure as M
    from .train_step import measure_training_step

    say = progress or (lambda _line: None)
    check_request(device, Mode.EAGER, hardware_name)
    M.check_device(device)
    hw = local_hardware(device, catalog, hardware_name)
    cal, cal_source = calibration_for(hw, calibration_path)
    source = load_model(model)   # the one import of the user's file: counted and measured
    say(f"counting one training step of {source.label} at batch {batch} ({setup.describe()}); predicting for "
        f"{hw.id}")
    counted, prediction = _predict_step(source, batch, setup, hw, cal, cal_source, mode)
    say(f"measuring it on {M.device_name(device)} ({device})"
        + (", compiling first (torch.compile: a minute or so)" if mode == Mode.COMPILED else ""))
    measured = measure_training_step(source, batch, setup, device=device, repeats=repeats, warmup=warmup,
                                     warmup_s=M.WARMUP_S if warmup else 0.0, compile=mode == Mode.COMPILED)
    say(measured_line(measured))
    return TrainValidationReport(
        model=source.label, hardware=hw.id, hardware_name=hw.name, device=device, batch=batch,
        setup=setup.describe(), loss=counted.loss, calibration_source=cal_source if cal is not None else "",
        note=CPU_NOTE.format(hw=hw.id) if device == "cpu" else "", measured=measured, prediction=prediction,
        environment=M.environment(device, command=command))
