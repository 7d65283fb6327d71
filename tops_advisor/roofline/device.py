"""What a device can attain: datasheet peaks scaled by defaults, or the probe's measurements.

``DevicePerf`` is the one place where Hardware, Calibration and the defaults meet; the predictor reads only it.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field, replace

import numpy as np

from ..calibration import Calibration
from ..catalog import Hardware
from .defaults import DEFAULTS, GemmTile, RooflineDefaults
from .inflight import defaults_for as inflight_defaults
from .inflight import inflight_scale
from .l2 import l2_capacity_bytes
from .power_limit import power_limit_note


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
    # measured GEMMs per precision: (log2 m, log2 n, log2 k) rows, dims and measured seconds (from the probe)
    gemm_samples: dict[str, tuple] = field(default_factory=dict)
    assumptions: tuple[str, ...] = field(default_factory=tuple)
    defaults: RooflineDefaults = DEFAULTS  # the per-operator factors the predictor applies on this device
    l2_bytes: float = 0.0                  # usable L2 for reused activations (0: no L2 reuse; roofline/l2.py)
    l2_bandwidth_bytes_per_s: float = 0.0  # read bandwidth of data the L2 holds

    @property
    def compute_units(self) -> int:
        return self.hardware.compute_units or int(self.defaults.compute_units_unknown.value)


def matmul_fraction(hw: Hardware, d: RooflineDefaults):
    """The MAMF default for this card: its architecture's, else its vendor's, else the generic one."""
    by_arch = d.matmul_fraction_by_architecture.value.get(hw.architecture)
    return by_arch or d.matmul_fraction.value.get(hw.vendor.upper(), d.matmul_fraction_other)


_FP16_ACCUMULATE = {"fp16": "fp16_fp16acc", "bf16": "fp16_fp16acc", "fp8": "fp8_fp16acc"}


def half_rate(hw: Hardware, precision: str) -> bool:
    """True where the card runs ``precision`` (FP32 accumulate) at half its FP16-accumulate rate (GeForce)."""
    fast = hw.dense_tops.get(_FP16_ACCUMULATE.get(precision, ""))
    own = hw.dense_tops.get(precision)
    return fast is not None and own is not None and own * 2.0 <= fast * 1.01


def fp16_accumulate(perf: DevicePerf) -> DevicePerf:
    """``perf`` as kernels that accumulate half-precision products in FP16 see it: on a card that runs FP32
    accumulation at half its FP16-accumulate rate (``half_rate``: GeForce), fp16 takes the ``fp16_fp16acc``
    peak in the datasheet (so the convolution factor's intensity and the power limit read it too) and its
    attainable rate; elsewhere ``perf`` unchanged. Who accumulates in FP16: ``llm/engines.py`` (engines on
    cuBLAS's CUBLAS_COMPUTE_16F), ``tensorrt.py`` (the builder keeps the fastest tactic, FP16-accumulating
    ones included)."""
    hw, fast = perf.hardware, _FP16_ACCUMULATE["fp16"]
    if not half_rate(hw, "fp16") or fast not in perf.matrix_ops_per_s:
        return perf
    dense = {**hw.dense_tops, "fp16": hw.dense_tops[fast]}
    sparse = {**hw.sparse_tops, "fp16": hw.sparse_tops[fast]} if fast in hw.sparse_tops else hw.sparse_tops
    fast_hw = hw.model_copy(update={"dense_tops": dense, "sparse_tops": sparse})
    share = perf.matrix_ops_per_s[fast] / (hw.dense_tops[fast] * 1e12)
    notes = tuple(n for n in perf.assumptions if not n.startswith(("fp16 matrix peak", f"{fast} matrix peak")))
    notes += (f"fp16 matrix peak = {share:.0%} of the FP16-accumulate peak {hw.dense_tops[fast]:g} TFLOPS "
              f"({precision_fraction(hw, fast, perf.defaults).source})",)
    return replace(perf, hardware=fast_hw, assumptions=notes,
                   matrix_ops_per_s={**perf.matrix_ops_per_s, "fp16": perf.matrix_ops_per_s[fast]})


def both_orientations(perf: DevicePerf) -> DevicePerf:
    """``perf`` with each tensor-core tile also run transposed (rows and columns swapped, same quality): a
    builder that times every tactic (TensorRT: ``TENSORRT.tactics``) has both, so a product with few columns
    (a convolution with 64 output channels) runs a tall tile instead of padding a wide one. GEMV-like tiles
    (``skinny_tile_rows``) and square ones are kept as they are."""
    d = perf.defaults
    tiles = d.gemm_tiles.value
    have = {(t.rows, t.cols) for t in tiles}
    extra = tuple(GemmTile(t.cols, t.rows, t.quality) for t in tiles
                  if t.rows > d.skinny_tile_rows.value and (t.cols, t.rows) not in have)
    if not extra:
        return perf
    both = replace(d.gemm_tiles, value=tiles + extra, source=d.gemm_tiles.source + ", each also transposed")
    return replace(perf, defaults=replace(d, gemm_tiles=both))


def shared_int32_fp32(hw: Hardware, d: RooflineDefaults) -> bool:
    """True where half the FP32 lanes are shared with INT32 (GA10x, AD10x, GB20x): 128 FP32 lanes per SM,
    from the FP32 peak, SMs and boost clock, on an architecture in ``shared_int32_fp32_architectures``."""
    if hw.architecture not in d.shared_int32_fp32_architectures.value or not hw.compute_units or not hw.boost_clock_mhz:
        return False
    lanes = hw.dense_tops["fp32"] * 1e12 / (2.0 * hw.compute_units * hw.boost_clock_mhz * 1e6)
    per_unit = d.shared_int32_fp32_lanes_per_unit.value
    return abs(lanes - per_unit) < 0.05 * per_unit


def precision_fraction(hw: Hardware, precision: str, d: RooflineDefaults):
    """The large-GEMM fraction of one precision's peak: a measurement of this architecture and precision,
    else the shared-INT32 FP32, half-rate GeForce tensor or GeForce FP16-accumulate fraction where the card has
    that datapath, else the card's MAMF default (``matmul_fraction``)."""
    measured = d.matmul_fraction_by_architecture_precision.value.get((hw.architecture, precision))
    if measured is not None:
        return measured
    if precision == "fp32" and shared_int32_fp32(hw, d):
        return d.shared_int32_fp32_matmul_fraction
    if half_rate(hw, precision):
        return d.half_rate_matmul_fraction
    if precision in _FP16_ACCUMULATE.values() and any(half_rate(hw, p) for p in _FP16_ACCUMULATE):
        return d.fp16_accumulate_matmul_fraction
    return matmul_fraction(hw, d)


def bandwidth_fraction(hw: Hardware, d: RooflineDefaults):
    """The copy-bandwidth default for this card: the first (architecture, memory type) rule that matches,
    else its memory family's."""
    memory = hw.memory_type.upper()
    for architecture, prefix, value in d.bandwidth_fraction_rules.value:
        if (architecture is None or architecture == hw.architecture) and memory.startswith(prefix.upper()):
            return value
    return d.bandwidth_fraction.value[memory_family(hw.memory_type)]


def memory_family(memory_type: str) -> str:
    """'HBM', 'LPDDR' or 'GDDR' (every other memory type)."""
    t = memory_type.upper()
    if "HBM" in t:
        return "HBM"
    if "LPDDR" in t:
        return "LPDDR"
    return "GDDR"


@dataclass
class _Rates:
    """The device-level numbers while they are being resolved (defaults first, then measurements)."""

    matrix: dict[str, float]
    bandwidth: float
    floor_s: float
    gap_s: float
    eager_s: float
    kind_floor: dict[str, float]
    notes: list[str]


def _datasheet_rates(hw: Hardware, d: RooflineDefaults) -> _Rates:
    frac = matmul_fraction(hw, d)
    bw = bandwidth_fraction(hw, d)
    by_precision = {p: precision_fraction(hw, p, d) for p in hw.dense_tops}
    clock = hw.clock_scale
    notes = [f"matrix peaks = {frac.value:.0%} of datasheet dense ({frac.source})",
             f"bandwidth = {bw.value:.0%} of datasheet ({bw.source})"]
    notes += [f"{p} matrix peak = {f.value:.0%} of datasheet dense ({f.source})"
              for p, f in by_precision.items() if f is not frac]
    if clock != 1.0:
        notes.append(f"compute peaks at the sustained {hw.sustained_clock_mhz:.0f} MHz, x{clock:.3f} the rated "
                     f"boost {hw.boost_clock_mhz:.0f} MHz ({hw.citation('sustained_clock_mhz')})")
    cycles = floor_clock_scale(hw, d)
    if cycles != 1.0:
        notes.append(_floor_clock_note(hw, d))
    return _Rates(
        matrix={p: t * 1e12 * by_precision[p].value * clock for p, t in hw.dense_tops.items()},
        bandwidth=hw.memory_bandwidth_bytes_per_s * bw.value, floor_s=d.kernel_floor_s.value * cycles,
        gap_s=d.kernel_gap_s.value * cycles, eager_s=d.eager_op_s.value,
        kind_floor={k: v * cycles for k, v in d.kind_floor_s.value.items()}, notes=notes)


def floor_clock_scale(hw: Hardware, d: RooflineDefaults) -> float:
    """How much longer this card takes for the kernel floors and gap than the card they were measured on: they
    are cycle counts, so reference clock / this card's clock (its boost x its sustained/boost ratio); 1 where
    the catalog gives no boost clock."""
    if not hw.boost_clock_mhz:
        return 1.0
    return d.kernel_floor_reference_clock_mhz.value / (hw.boost_clock_mhz * hw.clock_scale)


def _floor_clock_note(hw: Hardware, d: RooflineDefaults) -> str:
    """The assumption line of ``floor_clock_scale`` (a card with a boost clock)."""
    return (f"kernel floors and gaps x{floor_clock_scale(hw, d):.2f}: fixed cycle counts measured at "
            f"{d.kernel_floor_reference_clock_mhz.value:.0f} MHz, run at "
            f"{hw.boost_clock_mhz * hw.clock_scale:.0f} MHz (kernel_floor_reference_clock_mhz)")


def _calibrated_rates(hw: Hardware, cal: Calibration, d: RooflineDefaults) -> _Rates:
    r = _datasheet_rates(hw, d)
    r.notes = []   # the datasheet notes give way to the measurements
    if not cal.kernel_graph_us and floor_clock_scale(hw, d) != 1.0:   # no probe of the floors replaces it
        r.notes.append(_floor_clock_note(hw, d))
    ratios = [cal.measured_tops[p] / hw.dense_tops[p] for p in cal.measured_tops if p in hw.dense_tops]
    frac = matmul_fraction(hw, d)
    fill = statistics.median(ratios) if ratios else frac.value
    r.matrix = {p: t * 1e12 * fill for p, t in hw.dense_tops.items()}
    r.matrix.update({p: tops * 1e12 for p, tops in cal.measured_tops.items() if p in r.matrix})
    missing = sorted(set(hw.dense_tops) - set(cal.measured_tops))
    if missing:
        r.notes.append(f"not measured, scaled by the median measured/datasheet ratio {fill:.2f}: "
                       f"{', '.join(missing)}")
    r.bandwidth = cal.memory_bandwidth_bytes_per_s
    sus = cal.sustained
    if sus is not None and sus.throttled and sus.precision in cal.measured_tops:
        burst = cal.measured_tops[sus.precision]
        r.notes.append(f"burst rates: under a sustained {sus.precision} load this card ran at "
                       f"{sus.tops_median:.0f} TOPS ({sus.tops_median / burst:.0%} of the measured "
                       f"{burst:.0f}; {', '.join(sus.throttle_reasons) or 'throttled'})")
    if cal.kernel_graph_us:
        # the probe times a trivial kernel; real kernels' floor and gap scale with it
        # (it replaces the clock scaling of the datasheet rates: the probe timed this card's own cycles)
        scale = cal.kernel_graph_us * 1e-6 / d.tiny_kernel_reference_s.value
        r.floor_s, r.gap_s = d.kernel_floor_s.value * scale, d.kernel_gap_s.value * scale
        r.kind_floor = {k: v * scale for k, v in d.kind_floor_s.value.items()}
    if cal.module_call_us:
        # the module stack measures what a model's eager host time is made of: scale in proportion
        r.eager_s = r.eager_s * cal.module_call_us * 1e-6 / d.eager_module_call_reference_s.value
    elif cal.kernel_eager_us:
        # a model's operator also pays nn.Module and Python overhead: scale, don't replace
        fixed = d.eager_host_fixed_share.value
        launch = cal.kernel_eager_us * 1e-6 / d.eager_launch_reference_s.value
        r.eager_s = r.eager_s * (fixed + (1.0 - fixed) * launch)
    return r


def power_mode_note(hw: Hardware) -> str:
    """Which power mode a module's rates are for: its GPU clock, active SMs, memory clock and budget."""
    m = hw.get_power_mode(hw.power_mode)
    which = "the datasheet's; --power-mode picks another" if hw.at_datasheet_mode else "--power-mode"
    return (f"power mode {m.name} ({which}): GPU {m.gpu_clock_mhz:g} MHz on {m.active_compute_units} SMs, "
            f"memory clock {m.memory_clock_mhz:g} MHz, {m.power_w:g} W budget")


def gemm_samples(cal: Calibration, d: RooflineDefaults) -> dict[str, tuple]:
    """The probe's long GEMMs per precision: (log2 coordinates, dims, seconds). Short ones are dominated by the
    timing's fixed cost (events, L2 flush), so only those over ``gemm_sample_min_s`` inform predictions."""
    samples: dict[str, tuple] = {}
    for p in {s.precision for s in cal.gemm_samples}:
        rows = [s for s in cal.gemm_samples if s.precision == p
                and 2.0 * s.m * s.n * s.k * s.batch / (s.tops * 1e12) >= d.gemm_sample_min_s.value]
        if not rows:
            continue
        coords = np.log2(np.array([[s.m, s.n, s.k * s.batch] for s in rows], dtype=np.float64))
        dims = np.array([[s.m, s.n, s.k, s.batch] for s in rows], dtype=np.float64)
        seconds = np.array([2.0 * s.m * s.n * s.k * s.batch / (s.tops * 1e12) for s in rows])
        samples[p] = (coords, dims, seconds)
    return samples


def device_perf(hw: Hardware, calibration: Calibration | None = None, calibration_source: str = "",
                defaults: RooflineDefaults = DEFAULTS, power_mode: str | None = None) -> DevicePerf:
    """Resolve attainable rates: measured where the calibration has them, ``defaults`` elsewhere. ``power_mode``
    (a module's nvpmodel mode, e.g. '15W'): the device at that mode's GPU clock, active SMs and memory clock
    (``Hardware.at_power_mode``); ``hw`` may also already be the device in a mode."""
    if power_mode is not None:
        hw = hw.at_power_mode(power_mode)
    d = inflight_defaults(hw, defaults)
    r = _calibrated_rates(hw, calibration, d) if calibration is not None else _datasheet_rates(hw, d)
    if hw.power_modes:
        r.notes.append(power_mode_note(hw))
    if hw.power_limited and calibration is None:
        r.notes.append(power_limit_note(hw))
    if d is not defaults:
        r.notes.append(f"16-bit elementwise, copy, pooling and reduction kernels at the shares "
                       f"{inflight_scale(hw, defaults):.1f}x the H200's bytes in flight per SM allow (roofline/inflight.py)")
    l2_bytes = l2_capacity_bytes(hw, d)
    if l2_bytes and abs(l2_bytes - d.l2_reference_bytes.value) > 1.0:   # the reference's reuse is in the shares
        r.notes.append(f"L2 reuse beyond the H200's: activations read within {l2_bytes / 1e6:.0f} MB of traffic of "
                       f"their write are read at the L2's {hw.l2_bandwidth_gb_s:.0f} GB/s (roofline/l2.py; "
                       f"l2_bandwidth_gb_s in hardware_db/{hw.id}.toml)")
    if not hw.compute_units:
        r.notes.append(f"compute units not in the catalog: {d.compute_units_unknown.value:.0f} "
                       f"({d.compute_units_unknown.source})")
    return DevicePerf(
        hardware=hw, matrix_ops_per_s=r.matrix,
        vector_ops_per_s=hw.dense_tops["fp32"] * 1e12 * hw.clock_scale * d.vector_fraction.value,
        bandwidth_bytes_per_s=r.bandwidth, kernel_floor_s=r.floor_s, kind_floor_s=r.kind_floor,
        kernel_gap_s=r.gap_s, eager_op_s=r.eager_s, eager_extra_kernel_s=d.eager_extra_kernel_s.value,
        eager_no_kernel_op_s=d.eager_no_kernel_op_s.value, calibrated=calibration is not None,
        calibration_source=calibration_source, assumptions=tuple(r.notes),
        gemm_samples=gemm_samples(calibration, d) if calibration is not None else {}, defaults=d,
        l2_bytes=l2_bytes, l2_bandwidth_bytes_per_s=(hw.l2_bandwidth_gb_s or 0.0) * 1e9)
