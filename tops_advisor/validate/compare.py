"""Put a measurement beside predictions (pure: no torch).

``compare_latency`` gives one row per (batch, mode): measured median and spread, predicted from datasheet
defaults and with calibration, and the relative errors. ``compare_by_kind`` lines up the measured kernel
time per operator kind (from torch.profiler's per-ATen-operator times) with the predicted device time of the
same kind, and the bound the predictor gave that kind.

Error = (predicted - measured) / measured, so +20% means the prediction was 20% too slow.
"""

from __future__ import annotations

import re
import statistics

from pydantic import BaseModel, ConfigDict, computed_field, field_serializer

from ..workload import OP_KINDS


def relative_error(predicted: float | None, measured: float | None) -> float | None:
    if predicted is None or not measured:
        return None
    return (predicted - measured) / measured


class LatencyRow(BaseModel):
    """One (batch, mode): measured median and spread, predicted from defaults and with calibration. Seconds.
    ``model_dump()`` adds the relative errors."""

    model_config = ConfigDict(frozen=True)

    model: str
    batch: int
    dtype: str
    mode: str
    measured_s: float
    spread_s: tuple[float, float] | None
    default_s: float
    calibrated_s: float | None
    bound: str

    @computed_field
    @property
    def err_default(self) -> float | None:
        return relative_error(self.default_s, self.measured_s)

    @computed_field
    @property
    def err_calibrated(self) -> float | None:
        return relative_error(self.calibrated_s, self.measured_s)

    @field_serializer("spread_s")
    def _spread_list(self, spread: tuple[float, float] | None) -> list[float] | None:
        return list(spread) if spread else None


def compare_latency(measurement, predictions: dict[str, tuple]) -> list[LatencyRow]:
    """``measurement``: a ``measure.Measurement`` (or anything with ``latency_s(mode)``, ``spread_s(mode)``,
    model, batch, dtype); ``predictions``: mode -> (prediction from defaults, calibrated prediction or None).
    Modes the measurement lacks (graph on the CPU, a failed batch) give no row."""
    rows = []
    for mode, (default, calibrated) in predictions.items():
        measured = measurement.latency_s(mode)
        if measured is None:
            continue
        rows.append(LatencyRow(
            model=measurement.model, batch=measurement.batch, dtype=measurement.dtype, mode=mode,
            measured_s=measured, spread_s=measurement.spread_s(mode), default_s=default.latency_s,
            calibrated_s=calibrated.latency_s if calibrated is not None else None,
            bound=(calibrated or default).bound))
    return rows


# --- per operator kind --------------------------------------------------------------------------------
_CASTS = ("to", "_to_copy", "_to_dtype", "type_as")  # elementwise in the counter, like the casts they are
_KIND_PATTERNS: tuple[tuple[str, re.Pattern], ...] = (
    ("attention", re.compile(r"attention|flash|sdpa")),
    ("conv", re.compile(r"conv")),
    ("matmul", re.compile(r"^(linear|mm|addmm|bmm|baddbmm|matmul|einsum|dot|vdot|mv|addmv|_addmm_activation)$")),
    ("softmax", re.compile(r"softmax")),
    ("norm", re.compile(r"(batch|layer|group|rms|instance)_norm")),
    ("pool", re.compile(r"pool")),
    ("embedding", re.compile(r"embedding")),
    ("reduction", re.compile(r"^(sum|mean|amax|amin|max|min|argmax|argmin|var|std|var_mean|std_mean|prod)$")),
    ("copy", re.compile(r"^(cat|stack|clone|contiguous|copy_|constant_pad_nd|pad|reflection_pad\w*|"
                        r"replication_pad\w*|upsample\w*|_upsample\w*|index\w*|_unsafe_index\w*|gather|"
                        r"scatter\w*|take|roll|flip|repeat|repeat_interleave|pixel_(un)?shuffle|"
                        r"channel_shuffle|im2col|col2im|\w+_copy)$")),
)


def aten_kind(name: str) -> str:
    """The roofline's operator kind for a profiler ATen name: 'aten::cudnn_convolution' -> 'conv'.
    Anything unrecognised that runs kernels (add, gelu, casts, ...) is elementwise."""
    op = name.split("::", 1)[-1]
    if op in _CASTS:
        return "elementwise"
    for kind, pattern in _KIND_PATTERNS:
        if pattern.search(op):
            return kind
    return "elementwise"


def measured_by_kind(kernels_by_op: dict[str, dict]) -> dict[str, float]:
    """Seconds of kernel time per operator kind. Uses each operator's ``outer_device_us`` (calls made by the
    model, not from inside another ATen operator: every kernel once); records without it (older files) fall
    back to ``self_device_us``, which counts each kernel under the innermost operator."""
    use_outer = any("outer_device_us" in v for v in kernels_by_op.values())
    key = "outer_device_us" if use_outer else "self_device_us"
    out: dict[str, float] = {}
    for name, v in kernels_by_op.items():
        us = v.get(key, 0.0) or 0.0
        if us > 0:
            kind = aten_kind(name)
            out[kind] = out.get(kind, 0.0) + us * 1e-6
    return out


class KindRow(BaseModel):
    """Measured kernel time of one operator kind beside its predicted device time (seconds, shares of the
    totals). ``model_dump()`` adds the relative error."""

    model_config = ConfigDict(frozen=True)

    kind: str
    measured_s: float
    predicted_s: float
    bound: str          # the bound holding most of the predicted time of this kind ("-" when none predicted)
    measured_share: float
    predicted_share: float

    @computed_field
    @property
    def error(self) -> float | None:
        return relative_error(self.predicted_s, self.measured_s) if self.measured_s else None


def predicted_by_kind(prediction) -> dict[str, tuple[float, str]]:
    """kind -> (predicted device seconds, bound holding most of that time), from ``Prediction.ops``."""
    time_s: dict[str, float] = {}
    by_bound: dict[str, dict[str, float]] = {}
    for op in prediction.ops:
        time_s[op.kind] = time_s.get(op.kind, 0.0) + op.latency_s
        b = by_bound.setdefault(op.kind, {})
        b[op.bound] = b.get(op.bound, 0.0) + op.latency_s
    return {k: (t, max(by_bound[k], key=by_bound[k].get)) for k, t in time_s.items()}


def compare_by_kind(kernels_by_op: dict[str, dict], prediction) -> list[KindRow]:
    """Measured kernel time per operator kind beside the predicted device time, largest measured first.
    Use a graph-mode prediction: its per-operator times are device times, like the profiler's kernels."""
    measured = measured_by_kind(kernels_by_op)
    predicted = predicted_by_kind(prediction)
    total_m = sum(measured.values()) or 1.0
    total_p = sum(t for t, _ in predicted.values()) or 1.0
    kinds = [k for k in OP_KINDS if k in measured or k in predicted]
    rows = [KindRow(kind=k, measured_s=measured.get(k, 0.0), predicted_s=predicted.get(k, (0.0, "-"))[0],
                    bound=predicted.get(k, (0.0, "-"))[1], measured_share=measured.get(k, 0.0) / total_m,
                    predicted_share=predicted.get(k, (0.0, "-"))[0] / total_p) for k in kinds]
    return sorted(rows, key=lambda r: (r.measured_s, r.predicted_s), reverse=True)


def error_summary(errors: list[float | None]) -> dict | None:
    """Median and worst absolute relative error, and how many; None when there are none."""
    vals = [abs(e) for e in errors if e is not None]
    if not vals:
        return None
    return {"median_abs_error": statistics.median(vals), "worst_abs_error": max(vals), "n": len(vals)}
