"""What a device can attain: datasheet peaks scaled by defaults, or the probe's measurements.

``DevicePerf`` is the one place where Hardware and Calibration meet; the predictor reads only this.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from ..calibration import Calibration
from ..catalog import Hardware
from . import defaults as D


@dataclass(frozen=True)
class DevicePerf:
    """Attainable rates of one device in base units, with where each came from."""

    hardware: Hardware
    matrix_ops_per_s: dict[str, float]     # best large-GEMM rate per precision
    vector_ops_per_s: float                # non-tensor rate for elementwise work
    bandwidth_bytes_per_s: float           # attainable DRAM bandwidth (large copy)
    kernel_device_s: float                 # per-kernel device cost (graph replay)
    eager_op_s: float                      # host cost per eager operator
    eager_extra_kernel_s: float
    eager_no_kernel_op_s: float
    calibrated: bool
    calibration_source: str = ""
    assumptions: tuple[str, ...] = field(default_factory=tuple)

    @property
    def compute_units(self) -> int:
        return self.hardware.compute_units or 100


def _memory_family(memory_type: str) -> str:
    t = memory_type.upper()
    if "HBM" in t:
        return "HBM"
    if "LPDDR" in t:
        return "LPDDR"
    return "GDDR"


def device_perf(hw: Hardware, calibration: Calibration | None = None, calibration_source: str = "") -> DevicePerf:
    """Resolve attainable rates: measured where the calibration has them, defaults elsewhere."""
    notes: list[str] = []
    frac = D.MATMUL_FRACTION.get(hw.vendor.upper(), D.MATMUL_FRACTION_OTHER)
    matrix = {p: t * 1e12 * frac.value for p, t in hw.dense_tops.items()}
    bw_default = D.BANDWIDTH_FRACTION[_memory_family(hw.memory_type)]
    bandwidth = hw.memory_bandwidth_bytes_per_s * bw_default.value
    kernel_s, eager_s = D.KERNEL_DEVICE_S.value, D.EAGER_OP_S.value
    calibrated = calibration is not None
    if calibration is not None:
        ratios = [calibration.measured_tops[p] / hw.dense_tops[p]
                  for p in calibration.measured_tops if p in hw.dense_tops]
        fill = statistics.median(ratios) if ratios else frac.value
        matrix = {p: t * 1e12 * fill for p, t in hw.dense_tops.items()}
        for p, tops in calibration.measured_tops.items():
            if p in matrix:
                matrix[p] = tops * 1e12
        missing = sorted(set(hw.dense_tops) - set(calibration.measured_tops))
        if missing:
            notes.append(f"not measured, scaled by the median measured/datasheet ratio {fill:.2f}: "
                         f"{', '.join(missing)}")
        bandwidth = calibration.memory_bandwidth_bytes_per_s
        if calibration.kernel_graph_us:
            kernel_s = calibration.kernel_graph_us * 1e-6
        if calibration.kernel_eager_us:
            eager_s = calibration.kernel_eager_us * 1e-6
    else:
        notes.append(f"matrix peaks = {frac.value:.0%} of datasheet dense ({frac.source})")
        notes.append(f"bandwidth = {bw_default.value:.0%} of datasheet ({bw_default.source})")
    vector = hw.dense_tops["fp32"] * 1e12 * D.VECTOR_FRACTION.value
    return DevicePerf(
        hardware=hw, matrix_ops_per_s=matrix, vector_ops_per_s=vector, bandwidth_bytes_per_s=bandwidth,
        kernel_device_s=kernel_s, eager_op_s=eager_s, eager_extra_kernel_s=D.EAGER_EXTRA_KERNEL_S.value,
        eager_no_kernel_op_s=D.EAGER_NO_KERNEL_OP_S.value, calibrated=calibrated,
        calibration_source=calibration_source, assumptions=tuple(notes),
    )
