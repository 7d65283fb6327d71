"""Memory-bound work: each operator's share of the attainable copy bandwidth (``BANDWIDTH_RULES``) and the
fixed per-row times of layer, group and training batch norms."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...kinds import OpKind
from ..arrays import OpArrays
from ..defaults import WIDTHS, RooflineDefaults
from ..device import DevicePerf
from ..rules import Rule, always, first_match
from .classes import CLASSES
from .common import by_width, half_dtype
from .conv import channels_last, depthwise_gradient_slowdown


@dataclass(frozen=True)
class BandwidthContext:
    d: RooflineDefaults
    cls: np.ndarray    # each operator's class (index into CLASSES)
    half: np.ndarray   # each operator is 16-bit (fp16, bf16)


def _kind_table(a: OpArrays, table: dict[str, float]) -> np.ndarray:
    return np.array([table[k] for k in OpKind])[a.kind]


def _strided(a: OpArrays, c: BandwidthContext) -> np.ndarray:
    d = c.d
    contiguous, strided = d.kind_bandwidth_factor.value, d.strided_kind_bandwidth_factor.value
    return np.array([strided.get(k, contiguous[k] * d.strided_bandwidth_factor.value) for k in OpKind])[a.kind]


def _depthwise(a: OpArrays, c: BandwidthContext) -> np.ndarray:
    return c.cls == CLASSES.index("depthwise")


def _copy_by_width(a: OpArrays, c: BandwidthContext) -> np.ndarray:
    copy = c.d.kind_bandwidth_factor.value["copy"]
    return by_width(c.d.kind_bandwidth_factor_by_width.value.get("copy", {w: copy for w in WIDTHS}), c.half)


def _cudnn_batch_norm(a: OpArrays, c: BandwidthContext) -> np.ndarray:
    """Inference batch norm in one kernel: cuDNN's (fp32, or half input with fp32 weights: autocast), not the
    native fp16 kernel and its copy (``counting/handles/vector.py``, ``batch_norm``). A training batch norm reads
    its input twice (statistics, then the normalization: the handle counts both reads), an inference one once,
    so its reads stay under 1.5x its writes; training ones in NCHW also carry channel rows."""
    reads_once = a.bytes - a.bytes_written < 1.5 * a.bytes_written
    return (a.family == "batch_norm") & (a.kernels == 1) & (a.norm_rows == 0) & reads_once


def _norm_family(a: OpArrays, c: BandwidthContext) -> np.ndarray:
    return np.isin(a.family, list(c.d.norm_bandwidth_factor.value))


def _norm_family_factor(a: OpArrays, c: BandwidthContext) -> np.ndarray:
    out = np.zeros(len(a))
    for family, widths in c.d.norm_bandwidth_factor.value.items():
        out = np.where(a.family == family, by_width(widths, c.half), out)
    return out


def _kind_by_width(a: OpArrays, c: BandwidthContext) -> np.ndarray:
    return np.isin(a.kind, [OpKind(k).position for k in c.d.kind_bandwidth_factor_by_width.value])


def _kind_by_width_factor(a: OpArrays, c: BandwidthContext) -> np.ndarray:
    out = np.zeros(len(a))
    for kind, widths in c.d.kind_bandwidth_factor_by_width.value.items():
        out = np.where(a.is_kind(OpKind(kind)), by_width(widths, c.half), out)
    return out


BANDWIDTH_RULES: tuple[Rule[BandwidthContext], ...] = (
    Rule("strided", lambda a, c: a.strided, _strided,
         "a permuted/transposed view is read uncoalesced (strided_kind_bandwidth_factor)"),
    Rule("depthwise, channels-last", lambda a, c: _depthwise(a, c) & channels_last(a), _copy_by_width,
         "channels-last depthwise convolutions move their bytes as a copy does"),
    Rule("depthwise", _depthwise,
         lambda a, c: c.d.depthwise_bandwidth_factor.value / depthwise_gradient_slowdown(a, c.d),
         "NCHW direct depthwise kernels (depthwise_bandwidth_factor; PyTorch's backward kernels slower)"),
    Rule("cuDNN batch norm", _cudnn_batch_norm,
         lambda a, c: by_width(c.d.cudnn_batch_norm_bandwidth_factor.value, c.half),
         "cuDNN's inference batch norm, one element rate at both widths (cudnn_batch_norm_bandwidth_factor)"),
    Rule("norm", _norm_family, _norm_family_factor, "batch, layer and group norms differ by operator"),
    Rule("kind and width", _kind_by_width, _kind_by_width_factor,
         "PyTorch's half-precision kernels move fewer bytes per thread"),
    Rule("kind", always, lambda a, c: _kind_table(a, c.d.kind_bandwidth_factor.value),
         "the kind's contiguous share (kind_bandwidth_factor)"),
)


def bandwidth_factors(a: OpArrays, cls: np.ndarray, d: RooflineDefaults) -> np.ndarray:
    """Per operator: the share of the attainable copy bandwidth its kernels reach (``BANDWIDTH_RULES``)."""
    return first_match(BANDWIDTH_RULES, a, BandwidthContext(d, cls, half_dtype(a)))


def bilinear_loop_s(a: OpArrays, perf: DevicePerf) -> np.ndarray:
    """PyTorch's NCHW bilinear upsampling: one thread per output position (``upsample_positions``) loops over
    batch x channels (``upsample_planes``), one memory round trip per iteration; positions beyond one wave of
    resident threads run again.
    H200 sweep (benchmarks/studies/slow-ops/slow_ops_sweep.py): 190-570 ns per iteration, 20-470 GB/s, where the copy model
    said 2-4 TB/s (LR-ASPP's 33 -> 65 upsampling at batch 128: 6.1 ms measured, 73 us predicted before)."""
    d = perf.defaults
    threads = perf.compute_units * d.resident_threads_per_unit.value
    waves = np.ceil(np.maximum(a.upsample_positions, 1.0) / threads)
    return waves * a.upsample_planes * d.bilinear_iteration_s.value


def layer_norm_rows_s(a: OpArrays, perf: DevicePerf) -> np.ndarray:
    """Per operator: the fixed time of a layer norm's rows (``norm_rows``; one thread block each in PyTorch's
    kernel, ``RooflineDefaults.layer_norm_row_s``), spread over the SMs, at this card's clock; 0 for other
    operators."""
    per_row = by_width(perf.defaults.layer_norm_row_s.value, half_dtype(a)) * _cycles_scale(perf)
    rows = np.where(a.family == "layer_norm", a.norm_rows, 0.0)
    return rows / max(perf.compute_units, 1) * per_row


def _cycles_scale(perf: DevicePerf) -> float:
    """A time measured in the H200's clock cycles on this card: the H200's boost clock over this card's
    (sustained) clock; 1 when the catalog gives no clock."""
    reference = perf.defaults.layer_norm_reference_clock_mhz.value
    hw = perf.hardware
    clock = hw.boost_clock_mhz * hw.clock_scale if hw.boost_clock_mhz else reference
    return reference / clock


def group_norm_rows_s(a: OpArrays, perf: DevicePerf) -> np.ndarray:
    """Per operator: the time of a group norm's row reductions (``norm_rows`` rows of ``norm_row_elements``
    elements, one thread block each, ``RooflineDefaults.group_norm_element_s`` per element), in waves of one
    row per SM, at this card's clock; 0 for other operators."""
    per_element = by_width(perf.defaults.group_norm_element_s.value, half_dtype(a)) * _cycles_scale(perf)
    waves = np.maximum(a.norm_rows / max(perf.compute_units, 1), 1.0)
    return np.where(a.family == "group_norm", waves * a.norm_row_elements * per_element, 0.0)


def batch_norm_rows_s(a: OpArrays, perf: DevicePerf) -> np.ndarray:
    """Per operator: the time of a training batch norm's per-channel reductions (forward statistics and the
    backward; ``norm_rows`` channels of ``norm_row_elements`` elements, one thread block each), in waves of one
    channel per SM, at this card's clock; 0 for other operators (eval batch norm has no rows). bf16 runs
    PyTorch's native kernels, fp16 and fp32 cuDNN's (``RooflineDefaults.batch_norm_element_s``)."""
    table = perf.defaults.batch_norm_element_s.value
    backward = a.family == "batch_norm_backward"
    native = a.dtype == "bf16"
    per_element = np.where(backward, np.where(native, table["backward"]["native"], table["backward"]["cudnn"]),
                           np.where(native, table["forward"]["native"], table["forward"]["cudnn"]))
    waves = np.maximum(a.norm_rows / max(perf.compute_units, 1), 1.0)
    rows = (a.norm_rows > 0) & np.isin(a.family, ("batch_norm", "batch_norm_backward"))
    return np.where(rows, waves * a.norm_row_elements * per_element * _cycles_scale(perf), 0.0)
