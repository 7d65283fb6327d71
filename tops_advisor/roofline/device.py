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
    kernel_floor_s: float                  # shortest time an extra kernel of an operator takes
    kind_floor_s: dict[str, float]         # shortest time one operator of each kind takes (+ "depthwise")
    kernel_gap_s: float                    # idle gap between back-to-back kernels (graph replay)
    eager_op_s: float                      # host cost per eager operator
    eager_extra_kernel_s: float
    eager_no_kernel_op_s: float
    calibrated: bool
    calibration_source: str = ""
    # measured GEMMs per precision: (log2 m, log2 n, log2 k) rows and measured seconds (from the probe)
    gemm_samples: dict[str, tuple] = field(default_factory=dict)
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
    floor_s, gap_s, eager_s = D.KERNEL_FLOOR_S.value, D.KERNEL_GAP_S.value, D.EAGER_OP_S.value
    kind_floor = {**D.KIND_FLOOR_S, "depthwise": D.DEPTHWISE_FLOOR_S, "batch_norm_fp32": D.BATCH_NORM_FP32_FLOOR_S}
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
        sus = calibration.sustained
        if sus is not None and sus.throttled and sus.precision in calibration.measured_tops:
            burst = calibration.measured_tops[sus.precision]
            notes.append(f"burst rates: under a sustained {sus.precision} load this card ran at "
                         f"{sus.tops_median:.0f} TOPS ({sus.tops_median / burst:.0%} of the measured "
                         f"{burst:.0f}; {', '.join(sus.throttle_reasons) or 'throttled'})")
        if calibration.kernel_graph_us:
            # the probe times a trivial kernel; real kernels' floor and gap scale with it
            scale = calibration.kernel_graph_us * 1e-6 / D.TINY_KERNEL_REFERENCE_S.value
            floor_s, gap_s = floor_s * scale, gap_s * scale
            kind_floor = {k: v * scale for k, v in kind_floor.items()}
        if calibration.kernel_eager_us:
            # a model's operator also pays nn.Module and Python overhead: scale, don't replace
            eager_s = eager_s * calibration.kernel_eager_us * 1e-6 / D.EAGER_LAUNCH_REFERENCE_S.value
    else:
        notes.append(f"matrix peaks = {frac.value:.0%} of datasheet dense ({frac.source})")
        notes.append(f"bandwidth = {bw_default.value:.0%} of datasheet ({bw_default.source})")
    vector = hw.dense_tops["fp32"] * 1e12 * D.VECTOR_FRACTION.value
    samples: dict[str, tuple] = {}
    if calibration is not None:
        import numpy as np

        for p in {s.precision for s in calibration.gemm_samples}:
            # short GEMMs are dominated by the timing's fixed cost (events, L2 flush): only long ones inform
            rows = [s for s in calibration.gemm_samples if s.precision == p
                    and 2.0 * s.m * s.n * s.k * s.batch / (s.tops * 1e12) >= D.GEMM_SAMPLE_MIN_S.value]
            if not rows:
                continue
            coords = np.log2(np.array([[s.m, s.n, s.k * s.batch] for s in rows], dtype=np.float64))
            dims = np.array([[s.m, s.n, s.k, s.batch] for s in rows], dtype=np.float64)
            seconds = np.array([2.0 * s.m * s.n * s.k * s.batch / (s.tops * 1e12) for s in rows])
            samples[p] = (coords, dims, seconds)
    return DevicePerf(
        hardware=hw, matrix_ops_per_s=matrix, vector_ops_per_s=vector, bandwidth_bytes_per_s=bandwidth,
        kernel_floor_s=floor_s, kind_floor_s=kind_floor, kernel_gap_s=gap_s, eager_op_s=eager_s, eager_extra_kernel_s=D.EAGER_EXTRA_KERNEL_S.value,
        eager_no_kernel_op_s=D.EAGER_NO_KERNEL_OP_S.value, calibrated=calibrated,
        calibration_source=calibration_source, assumptions=tuple(notes), gemm_samples=samples,
    )
