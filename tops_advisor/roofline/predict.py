"""The roofline predictor: Workload x DevicePerf -> Prediction. Pure numpy, no torch.

Per operator: time = max(operations / attainable compute, bytes / attainable bandwidth) + kernels x the
per-kernel device cost. ``graph`` mode sums those (CUDA graphs: no host launch cost); ``compiled`` does the same
over the fused kernels torch.compile runs (a workload counted with the inductor lowering). ``eager`` mode also
runs the host: each operator costs host time to launch, the device runs behind the host, and the model's
latency is when the last kernel ends (the host can be the bottleneck at small batch).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from ..calibration import Calibration
from ..catalog import Hardware
from ..errors import InputError, UnsupportedEngineError
from ..kinds import Bound, Lowering, Mode, OpKind
from ..tensorrt import TENSORRT
from ..units import BYTES_PER_ELEMENT
from ..workload import Workload
from . import power_limit, rates
from .arrays import OpArrays, op_arrays, tuned_rows
from .device import (
    DevicePerf,
    both_orientations,
    device_perf,
    fp16_accumulate,
    matmul_fraction,
    precision_fraction,
)
from .l2 import l2_read_bytes, l2_speed_ratio

MODES: tuple[Mode, ...] = tuple(Mode)   # ``Mode`` and ``MODES`` stay importable from here
# ``compiled`` predicts the kernels torch.compile runs (a workload counted with the inductor lowering),
# replayed as a CUDA graph.
COMPILED_LOWERING = Lowering.INDUCTOR_CUDA
# The modes whose kernels come from a lowering of their own, and the lowering: a workload of one of these
# lowerings is predicted only in its mode (docs/compiled.md, docs/tensorrt.md).
MODE_LOWERINGS: dict[Mode, Lowering] = {Mode.COMPILED: COMPILED_LOWERING, Mode.TENSORRT: Lowering.TENSORRT}
_LOWERING_NAMES = {Lowering.INDUCTOR_CUDA: "inductor", Lowering.TENSORRT: "tensorrt", None: "eager"}
BOUNDS = (Bound.COMPUTE, Bound.MEMORY, Bound.OVERHEAD)   # index = _DeviceTimes.bound


@dataclass(frozen=True)
class OpPrediction:
    name: str
    kind: str
    module: str
    precision: str
    flops: float
    bytes: float
    kernels: int
    compute_s: float
    memory_s: float
    overhead_s: float
    latency_s: float
    bound: str

    @property
    def attainable_ops_per_s(self) -> float:
        return self.flops / self.latency_s if self.latency_s else 0.0


@dataclass(frozen=True)
class Prediction:
    """One workload on one device in one mode. Base units, in ``model_dump`` too."""

    hardware: str
    workload: str
    batch: int
    dtype: str
    precision: str                 # the peak the utilisation refers to
    mode: str
    calibrated: bool
    calibration_source: str
    latency_s: float
    device_time_s: float           # sum of per-operator device times
    host_time_s: float             # eager: host launch time; graph: 0
    flops: float
    bytes: float
    kernels: int
    peak_ops_per_s: float          # datasheet dense peak at ``precision``
    time_by_bound_s: dict[str, float]
    bound: str
    memory_required_bytes: float
    memory_capacity_bytes: float
    fits_memory: bool
    assumptions: tuple[str, ...] = ()
    _arrays: dict = field(default_factory=dict, repr=False, compare=False)
    _workload_ref: object = field(default=None, repr=False, compare=False)

    @property
    def throughput_per_s(self) -> float:
        return self.batch / self.latency_s if self.latency_s else 0.0

    @property
    def attainable_ops_per_s(self) -> float:
        return self.flops / self.latency_s if self.latency_s else 0.0

    @property
    def utilisation(self) -> float:
        return self.attainable_ops_per_s / self.peak_ops_per_s if self.peak_ops_per_s else 0.0

    @property
    def ops(self) -> list[OpPrediction]:
        """Per-operator predictions (built on demand: the vectorised path does not need them)."""
        a = self._arrays
        w: Workload = self._workload_ref
        out = []
        for i, op in enumerate(w.ops):
            out.append(OpPrediction(
                name=op.name, kind=op.kind, module=op.module, precision=a["precision"][i], flops=op.flops,
                bytes=op.bytes, kernels=op.kernels, compute_s=float(a["compute"][i]),
                memory_s=float(a["memory"][i]), overhead_s=float(a["overhead"][i]),
                latency_s=float(a["device"][i]), bound=BOUNDS[int(a["bound"][i])]))
        return out

    def top_ops(self, n: int = 10) -> list[OpPrediction]:
        return sorted(self.ops, key=lambda o: o.latency_s, reverse=True)[:n]

    def model_dump(self, with_ops: bool = True) -> dict:
        """Base units (``render/json_units.py`` makes the ms, TOPS and GB keys of ``--json``)."""
        d = {
            "hardware": self.hardware, "workload": self.workload, "batch": self.batch, "dtype": self.dtype,
            "precision": self.precision, "mode": self.mode, "calibrated": self.calibrated,
            "calibration_source": self.calibration_source,
            "latency_s": self.latency_s, "throughput_per_s": self.throughput_per_s,
            "attainable_ops_per_s": self.attainable_ops_per_s, "peak_ops_per_s": self.peak_ops_per_s,
            "utilisation": self.utilisation, "bound": self.bound, "time_by_bound_s": dict(self.time_by_bound_s),
            "device_time_s": self.device_time_s, "host_time_s": self.host_time_s,
            "flops": self.flops, "bytes": self.bytes, "kernels": self.kernels,
            "fits_memory": self.fits_memory, "memory_required_bytes": self.memory_required_bytes,
            "memory_capacity_bytes": self.memory_capacity_bytes, "assumptions": list(self.assumptions),
        }
        if with_ops:
            d["ops"] = [{
                "name": o.name, "kind": o.kind, "module": o.module, "precision": o.precision,
                "flops": o.flops, "bytes": o.bytes, "kernels": o.kernels, "latency_s": o.latency_s,
                "compute_s": o.compute_s, "memory_s": o.memory_s, "overhead_s": o.overhead_s, "bound": o.bound,
                "attainable_ops_per_s": o.attainable_ops_per_s,
            } for o in self.ops]
        return d


def _gemm_sample_correction(a: OpArrays, perf: DevicePerf, precision: np.ndarray, compute: np.ndarray,
                            memory: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """With a calibration: scale each matmul's time by measured / modelled time of the nearest probed GEMM
    (nearest in log2 of m, n and k x batch, same precision), clipped to ``gemm_sample_clip`` either way."""
    d = perf.defaults
    compute, memory = compute.copy(), memory.copy()
    is_mm = a.is_kind(OpKind.MATMUL) & (a.m > 0)
    for prec, (coords, dims, seconds) in perf.gemm_samples.items():
        mask = is_mm & (precision == prec)
        peak = perf.matrix_ops_per_s.get(prec)
        if not mask.any() or peak is None:
            continue
        # the model's own time for each probed shape, computed the way operators are
        probe = OpArrays.matmuls(dims[:, 0], dims[:, 1], dims[:, 2], dims[:, 3], prec)
        eff = rates.tile_efficiency(probe, perf, OpKind.MATMUL, prec, aligned=False)
        flops = 2.0 * dims[:, 0] * dims[:, 1] * dims[:, 2] * dims[:, 3]
        elem = BYTES_PER_ELEMENT.get(prec, 2.0)
        nbytes = elem * dims[:, 3] * (dims[:, 0] * dims[:, 2] + dims[:, 2] * dims[:, 1] + dims[:, 0] * dims[:, 1])
        modelled = np.maximum(flops / (peak * eff), nbytes / perf.bandwidth_bytes_per_s)
        ratio = np.clip(seconds / modelled, 1 / d.gemm_sample_clip.value, d.gemm_sample_clip.value)
        idx = np.flatnonzero(mask)
        op_coords = np.log2(np.stack([a.m[idx], a.n[idx], a.k[idx] * np.maximum(a.gemm_batch[idx], 1)], 1))
        nearest = np.argmin(((op_coords[:, None, :] - coords[None, :, :]) ** 2).sum(-1), axis=1)
        compute[idx] *= ratio[nearest]
        memory[idx] *= ratio[nearest]
    return compute, memory


@dataclass(frozen=True)
class _DeviceTimes:
    """Per-operator device time and its parts (seconds)."""

    precision: np.ndarray
    compute: np.ndarray
    memory: np.ndarray
    floor: np.ndarray
    gap: np.ndarray

    @property
    def work(self) -> np.ndarray:
        return np.maximum(self.compute, self.memory)

    @property
    def device(self) -> np.ndarray:
        return self.work + self.floor + self.gap

    @property
    def bound(self) -> np.ndarray:
        """0 compute, 1 memory, 2 overhead (the floor exceeds the work)."""
        return np.where(self.floor > self.work, 2, np.where(self.compute >= self.memory, 0, 1))


def _power_limit_slowdown(rate: np.ndarray, precision: np.ndarray, compute: np.ndarray, memory: np.ndarray,
                          perf: DevicePerf) -> np.ndarray:
    """Boost / the operator's clock on a power-limited card (``power_limit``): each operator's activity is its
    rate over its datapath's datasheet peak (vector units and SIMT GEMMs: the FP32 peak), its reference load a
    large GEMM of its datapath at the card's fraction of that peak."""
    hw, d = perf.hardware, perf.defaults
    simt = np.isin(precision, ("vector", *rates.SIMT_PRECISIONS))
    peak_key = np.where(simt, "fp32", precision)
    tops = np.array([hw.dense_tops.get(p, hw.dense_tops["fp32"]) for p in peak_key])
    efficiency = rate / (tops * 1e12 * hw.clock_scale)
    fractions = {p: precision_fraction(hw, p, d).value for p in set(peak_key) if p in hw.dense_tops}
    reference = np.array([fractions.get(p, matmul_fraction(hw, d).value) for p in peak_key])
    clocks = power_limit.operator_clock_mhz(compute, memory, efficiency, power_limit.reference_clocks_mhz(simt, hw),
                                            reference, hw, d)
    return float(hw.boost_clock_mhz) / clocks


def _traffic_s(a: OpArrays, perf: DevicePerf, factors: np.ndarray) -> np.ndarray:
    """Each operator's bytes at its share (``factors``) of the bandwidth, the shares measured on the reference
    card with its L2; the reused bytes this card's L2 holds beyond the reference's (fewer: negative) move at
    the L2's bandwidth instead of DRAM's, and those both L2s hold take the reference's time scaled by this
    card's L2 speed over DRAM against the reference's (``l2.py``)."""
    dram = perf.bandwidth_bytes_per_s * factors
    if not perf.l2_bytes:
        return a.bytes / dram
    held, at_reference = l2_read_bytes(a, perf.l2_bytes), l2_read_bytes(a, perf.defaults.l2_reference_bytes.value)
    extra = held - at_reference
    common = np.minimum(held, at_reference)            # the hits both L2s give (the smaller L2's: LRU is nested)
    relative = perf.defaults.l2_reference_speed_ratio.value / l2_speed_ratio(perf.hardware)
    return (a.bytes / dram + extra * (1.0 / (perf.l2_bandwidth_bytes_per_s * factors) - 1.0 / dram)
            + common / dram * (relative - 1.0))


def device_times(a: OpArrays, perf: DevicePerf, tf32_matmul: bool = False) -> _DeviceTimes:
    """Each operator on the device: max(compute, memory) + its floor + the gap after each kernel."""
    cls = rates.op_classes(a, perf.defaults)
    rate, precision = rates.compute_rates(a, cls, perf, tf32_matmul)
    factors = rates.bandwidth_factors(a, cls, perf.defaults)
    compute = np.divide(a.flops, rate, out=np.zeros_like(rate), where=a.flops > 0)
    memory = _traffic_s(a, perf, factors) + rates.layer_norm_rows_s(a, perf) + rates.group_norm_rows_s(a, perf)
    memory = np.maximum(memory, rates.batch_norm_rows_s(a, perf))   # a channel per block, or the bytes
    if perf.gemm_samples:
        compute, memory = _gemm_sample_correction(a, perf, precision, compute, memory)
    if perf.hardware.power_limited and not perf.calibrated:   # a probe's measured rates already hold the clock
        compute = compute * _power_limit_slowdown(rate, precision, compute, memory, perf)
    return _DeviceTimes(precision, compute, memory, rates.floors(a, cls, perf), a.kernels * perf.kernel_gap_s)


def eager_timeline(a: OpArrays, device: np.ndarray, perf: DevicePerf, functional: bool,
                   calls: tuple[int, int, int] = (0, 0, 0)) -> tuple[float, float]:
    """Eager PyTorch: the host launches operator after operator while the device runs behind it; the forward
    ends when the last kernel does. Host time per operator, plus per nn.Module call and per other Python call
    (``calls``: module calls, those of them that run no operator, Python calls), spread over the operators
    that launch. Returns (latency, host time)."""
    if not device.size:
        return 0.0, 0.0
    k = a.kernels
    d = perf.defaults
    op_s = perf.eager_op_s
    if functional:  # no nn.Module call around each operator (same calibration scaling)
        op_s *= d.eager_functional_op_s.value / d.eager_op_s.value
    launching = (k >= 1) & ~a.internal
    if launching.any():  # the calibration scales module and Python calls as it scales operators
        modules, empty, python = calls
        calls_s = ((modules - empty) * d.eager_module_call_s.value + empty * d.eager_empty_module_call_s.value
                   + python * d.eager_python_call_s.value)
        op_s += perf.eager_op_s / d.eager_op_s.value * calls_s / launching.sum()
    host = np.where(k >= 1, op_s + np.maximum(k - 1, 0) * perf.eager_extra_kernel_s, perf.eager_no_kernel_op_s)
    host = np.where(a.internal, k * perf.eager_extra_kernel_s, host)
    issue = np.cumsum(host)                    # when the host has launched op j
    suffix = np.cumsum(device[::-1])[::-1]     # device work from op j to the end
    host_total = float(issue[-1])
    return max(float((issue + suffix).max()), host_total), host_total


def _calls(w: Workload) -> tuple[int, int, int]:
    return w.module_calls, w.empty_module_calls, w.python_calls


def _time_by_bound(t: _DeviceTimes, host_wait_s: float) -> dict[Bound, float]:
    """The latency split so that it adds up: each operator's whole device time (work, floor and gap) under the
    limit that binds it, and the device's wait for eager launches under overhead."""
    bound, device = t.bound, t.device
    return {Bound.COMPUTE: float(np.where(bound == 0, device, 0).sum()),
            Bound.MEMORY: float(np.where(bound == 1, device, 0).sum()),
            Bound.OVERHEAD: float(np.where(bound == 2, device, 0).sum() + host_wait_s)}


_MODE_ASSUMPTION = {
    Mode.GRAPH: "CUDA graph replay, no host launch cost",
    Mode.EAGER: "eager PyTorch, host launch cost per operator overlapping the device",
    Mode.COMPILED: "torch.compile (inductor, default mode) fused kernels, replayed as a CUDA graph "
                "(docs/compiled.md)",
    Mode.TENSORRT: "TensorRT engine: batch norm folded, bias/activation/residual in the convolution and GEMM "
                   "epilogues, NHWC, fused attention and pointwise kernels; " + TENSORRT.enqueue.does
                   + "; " + TENSORRT.tactics.does + " (docs/tensorrt.md)",
}


def _assumptions(mode: Mode, perf: DevicePerf, dtype: str, tf32_matmul: bool,
                 hardware: Hardware) -> tuple[str, ...]:
    out = (f"mode {mode}: " + _MODE_ASSUMPTION[mode],
           *perf.assumptions)
    if mode == Mode.TENSORRT:
        return out + _tensorrt_precision(perf, dtype, hardware)
    if dtype == "fp32" and "tf32" not in perf.hardware.dense_tops:
        out += (f"fp32: plain FP32 on CUDA cores ({perf.hardware.id} has no TF32)",)
    elif dtype == "fp32":
        out += ("fp32: convolutions in TF32 (PyTorch default), matmuls in "
                + ("TF32 (--tf32)" if tf32_matmul else "plain FP32 (PyTorch default)"),)
    return out


def _tensorrt_precision(perf: DevicePerf, dtype: str, hardware: Hardware) -> tuple[str, ...]:
    """What a TensorRT engine's precision means: TF32 for fp32 where the card has it, the FP16-accumulate rate
    where ``perf`` took it over ``hardware``'s fp16 peak; int8's caveat."""
    if dtype == "int8":
        return (TENSORRT.int8.does,)
    if dtype == "fp16" and perf.hardware.dense_tops["fp16"] > hardware.dense_tops["fp16"]:
        return (f"fp16: {TENSORRT.fp16_accumulate.does} ({perf.hardware.dense_tops['fp16']:g} TFLOPS)",)
    if dtype == "fp32":
        return ("fp32: " + (TENSORRT.tf32.does if "tf32" in perf.hardware.dense_tops
                            else f"plain FP32 on CUDA cores ({perf.hardware.id} has no TF32)"),)
    if dtype in TENSORRT.unscored_dtypes:
        return (f"{dtype} {TENSORRT.unscored.does}",)
    return ()


def _engine_workload(workload: Workload, hardware: Hardware) -> Workload:
    """A TensorRT workload as the engine runs on ``hardware``: NVIDIA GPUs only; TF32 where the card has it."""
    if hardware.vendor != "NVIDIA":
        raise UnsupportedEngineError(f"TensorRT runs on NVIDIA GPUs; {hardware.id} is {hardware.vendor}'s",
                                     hint="drop --engine tensorrt for this device")
    if workload.dtype in TENSORRT.no_engine_dtypes:
        raise InputError(f"--engine tensorrt with --dtype {workload.dtype}: {TENSORRT.no_engine.does}",
                         hint="choose --dtype int8, fp16 or fp32 (docs/tensorrt.md)")
    return _without_tf32(workload, hardware)


def _without_tf32(workload: Workload, hardware: Hardware) -> Workload:
    """On a card without TF32 (V100, T4, TITAN RTX), the operators a lowering runs in TF32 (inductor's and
    TensorRT's convolutions of an fp32 model) run in plain FP32 on the CUDA cores."""
    if "tf32" in hardware.dense_tops or not any(o.dtype == "tf32" for o in workload.ops):
        return workload
    return replace(workload, ops=tuple(replace(o, dtype="fp32") if o.dtype == "tf32" else o for o in workload.ops))


def _check_lowering(mode: Mode, lowering: str) -> None:
    """A workload counted with a mode's own lowering (compiled, tensorrt) is predicted in that mode only."""
    need = MODE_LOWERINGS.get(mode)
    if not lowering or (need is None and lowering not in MODE_LOWERINGS.values()) or lowering == need:
        return
    fix = "mode compiled" if need == COMPILED_LOWERING or lowering == COMPILED_LOWERING else f"mode {mode}"
    raise InputError(
        f"mode {mode} needs a workload counted with the {_LOWERING_NAMES[need]} lowering, got {lowering!r}",
        hint=f"count it with lowering={need or 'pytorch-cuda'!r} for {fix} (ModelCosts.at(..., mode=...) does this)")


def predict(workload: Workload, hardware: Hardware, calibration: Calibration | None = None,
            mode: Mode = Mode.GRAPH, *, tf32_matmul: bool = False, perf: DevicePerf | None = None,
            calibration_source: str = "", opt_workload: Workload | None = None) -> Prediction:
    """Predict one workload on one device. Pass ``perf`` (from ``device_perf``) to reuse it across calls.
    ``opt_workload`` (mode tensorrt): the same model at the shape the engine was built for (its profile's
    ``opt`` shape), whose tactics it runs at this one (``arrays.tuned_rows``)."""
    if mode not in MODES:
        raise InputError(f"unknown mode {mode!r}; expected graph, eager, compiled or tensorrt")
    mode = Mode(mode)
    _check_lowering(mode, workload.lowering)
    if mode == Mode.TENSORRT:
        workload = _engine_workload(workload, hardware)
    elif mode == Mode.COMPILED:
        workload = _without_tf32(workload, hardware)
    # a TensorRT engine builds fp32 layers in TF32 (BuilderFlag::kTF32, on by default: tops_advisor/tensorrt.py)
    tf32_matmul = tf32_matmul or (mode == Mode.TENSORRT and "tf32" in hardware.dense_tops)
    perf = perf or device_perf(hardware, calibration, calibration_source)
    if mode == Mode.TENSORRT:   # the builder keeps the fastest tactic: FP16-accumulating, either tile orientation
        perf = both_orientations(fp16_accumulate(perf))
    a = op_arrays(workload)
    if opt_workload is not None:
        a = tuned_rows(a, op_arrays(_opt_engine(opt_workload, mode, hardware)))
    t = device_times(a, perf, tf32_matmul)
    device = t.device
    device_total = float(device.sum())
    latency, host_total = (eager_timeline(a, device, perf, workload.functional, _calls(workload))
                           if mode == Mode.EAGER
                           else (device_total, 0.0))
    by_bound = _time_by_bound(t, latency - device_total)
    main_precision = _main_precision(a.flops, t.precision, workload.dtype, hardware)
    required = (workload.param_bytes + workload.activation_peak_bytes + workload.input_bytes
                + perf.defaults.runtime_memory_bytes.value)
    return Prediction(
        hardware=hardware.id, workload=workload.name, batch=workload.batch, dtype=workload.dtype,
        precision=main_precision, mode=mode, calibrated=perf.calibrated,
        calibration_source=perf.calibration_source, latency_s=latency, device_time_s=device_total,
        host_time_s=host_total, flops=float(a.flops.sum()), bytes=float(a.bytes.sum()),
        kernels=int(a.kernels.sum()), peak_ops_per_s=perf.hardware.peak_ops_per_s(main_precision) or 0.0,
        time_by_bound_s=by_bound, bound=max(by_bound, key=by_bound.get),
        memory_required_bytes=required, memory_capacity_bytes=hardware.memory_bytes,
        fits_memory=required <= hardware.memory_bytes,
        assumptions=_assumptions(mode, perf, workload.dtype, tf32_matmul, hardware) + _opt_note(opt_workload),
        _arrays={"precision": t.precision, "compute": t.compute, "memory": t.memory,
                 "overhead": t.gap + np.maximum(t.floor - t.work, 0.0), "device": device, "bound": t.bound},
        _workload_ref=workload,
    )


def _opt_engine(opt_workload: Workload, mode: Mode, hardware: Hardware) -> Workload:
    """The engine's layers at its opt shape; an error outside mode tensorrt (only an engine fixes its kernels
    at another shape)."""
    if mode != Mode.TENSORRT:
        raise InputError("an opt shape belongs to a TensorRT engine's optimisation profile",
                         hint="add --engine tensorrt, or drop the opt shape")
    _check_lowering(mode, opt_workload.lowering)
    return _engine_workload(opt_workload, hardware)


def _opt_note(opt_workload: Workload | None) -> tuple[str, ...]:
    """The assumption line of an engine run away from its opt shape."""
    if opt_workload is None:
        return ()
    return (f"the engine's kernels were chosen at its opt shape ({opt_workload.name}, batch {opt_workload.batch}): "
            "each layer keeps that tile at this shape and splits K to fill the card (roofline/efficiency.py)",)


def _main_precision(flops: np.ndarray, precision: np.ndarray, dtype: str, hw: Hardware) -> str:
    """The tensor precision doing most of the operations (falls back to the workload dtype)."""
    totals: dict[str, float] = {}
    for p, f in zip(precision, flops, strict=True):
        if p != "vector":
            totals[p] = totals.get(p, 0.0) + float(f)
    if totals:
        return max(totals, key=totals.get)
    return dtype if dtype in hw.dense_tops else "fp32"
