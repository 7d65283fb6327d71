"""The roofline predictor: Workload x DevicePerf -> Prediction. Pure numpy, no torch.

Per operator: time = max(operations / attainable compute, bytes / attainable bandwidth) + kernels x the
per-kernel device cost. ``graph`` mode sums those (CUDA graphs: no host launch cost). ``eager`` mode also
runs the host: each operator costs host time to launch, the device runs behind the host, and the model's
latency is when the last kernel ends (the host can be the bottleneck at small batch).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from ..calibration import Calibration
from ..catalog import Hardware
from ..errors import InputError, UnsupportedPrecisionError
from ..units import BYTES_PER_ELEMENT
from ..workload import OP_KINDS, Workload
from . import defaults as D
from .device import DevicePerf, device_perf
from .efficiency import attention_efficiency, gemm_efficiency

Mode = Literal["graph", "eager"]
MODES = ("graph", "eager")
TENSOR_KINDS = ("matmul", "conv", "attention")
BOUNDS = ("compute", "memory", "overhead")


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
    """One workload on one device in one mode. Base units; ``model_dump`` adds the human ones."""

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
        d = {
            "hardware": self.hardware, "workload": self.workload, "batch": self.batch, "dtype": self.dtype,
            "precision": self.precision, "mode": self.mode, "calibrated": self.calibrated,
            "calibration_source": self.calibration_source,
            "latency_ms": self.latency_s * 1e3, "throughput_per_s": self.throughput_per_s,
            "attainable_tops": self.attainable_ops_per_s / 1e12, "peak_tops": self.peak_ops_per_s / 1e12,
            "utilisation": self.utilisation, "bound": self.bound,
            "time_by_bound_ms": {k: v * 1e3 for k, v in self.time_by_bound_s.items()},
            "device_time_ms": self.device_time_s * 1e3, "host_time_ms": self.host_time_s * 1e3,
            "flops": self.flops, "bytes": self.bytes, "kernels": self.kernels,
            "fits_memory": self.fits_memory, "memory_required_gb": self.memory_required_bytes / 1e9,
            "memory_capacity_gb": self.memory_capacity_bytes / 1e9, "assumptions": list(self.assumptions),
        }
        if with_ops:
            d["ops"] = [{
                "name": o.name, "kind": o.kind, "module": o.module, "precision": o.precision,
                "flops": o.flops, "bytes": o.bytes, "kernels": o.kernels, "latency_ms": o.latency_s * 1e3,
                "compute_ms": o.compute_s * 1e3, "memory_ms": o.memory_s * 1e3,
                "overhead_ms": o.overhead_s * 1e3, "bound": o.bound,
                "attainable_tops": o.attainable_ops_per_s / 1e12,
            } for o in self.ops]
        return d


# --- workload arrays, computed once per workload ---------------------------------------------------------
_ARRAYS: dict[int, tuple[weakref.ref, dict]] = {}


def _arrays(w: Workload) -> dict:
    hit = _ARRAYS.get(id(w))
    if hit is not None and hit[0]() is w:
        return hit[1]
    ops = w.ops
    kind_index = {k: i for i, k in enumerate(OP_KINDS)}
    a = {
        "flops": np.array([o.flops for o in ops], dtype=np.float64),
        "bytes": np.array([o.bytes_read + o.bytes_written for o in ops], dtype=np.float64),
        "kernels": np.array([o.kernels for o in ops], dtype=np.float64),
        "strided": np.array([o.strided for o in ops], dtype=bool),
        "internal": np.array([o.internal for o in ops], dtype=bool),
        "name": np.array([o.name for o in ops]),
        "kind": np.array([kind_index.get(o.kind, kind_index["other"]) for o in ops], dtype=np.int64),
        "dtype": np.array([o.dtype for o in ops]),
        "m": np.array([o.gemm.m if o.gemm else 0 for o in ops], dtype=np.float64),
        "n": np.array([o.gemm.n if o.gemm else 0 for o in ops], dtype=np.float64),
        "k": np.array([o.gemm.k if o.gemm else 0 for o in ops], dtype=np.float64),
        "b": np.array([o.gemm.batch if o.gemm else 0 for o in ops], dtype=np.float64),
        "window": np.array([o.gemm.window if o.gemm else 1 for o in ops], dtype=np.float64),
        "spatial": np.array([o.gemm.spatial_dims if o.gemm else 0 for o in ops], dtype=np.float64),
    }
    _ARRAYS[id(w)] = (weakref.ref(w), a)
    if len(_ARRAYS) > 256:
        for key in [k for k, (ref, _) in _ARRAYS.items() if ref() is None]:
            del _ARRAYS[key]
    return a


def matrix_precision(dtype: str, kind: str, hw: Hardware, tf32_matmul: bool) -> str:
    """The peak a tensor operator uses. PyTorch runs fp32 convolutions in TF32 by default
    (cudnn.allow_tf32=True) and fp32 matmuls in plain FP32 (unless TF32 matmuls are switched on)."""
    if dtype == "fp32" and "tf32" in hw.dense_tops and (kind == "conv" or tf32_matmul):
        return "tf32"
    return dtype


def _rate_per_op(a: dict, perf: DevicePerf, tf32_matmul: bool) -> tuple[np.ndarray, np.ndarray]:
    hw = perf.hardware
    kinds = a["kind"]
    n_ops = kinds.shape[0]
    rate = np.full(n_ops, perf.vector_ops_per_s)
    precision = np.array(["vector"] * n_ops, dtype=object)
    tensor_mask = np.isin(kinds, [OP_KINDS.index(k) for k in TENSOR_KINDS]) & (a["flops"] > 0)
    depthwise = _depthwise(a)
    tensor_mask &= ~depthwise
    if depthwise.any():
        # direct depthwise kernels are slow per operation: a 7x7 window costs 5.4x a 3x3 one
        dw_factor = np.where(a["dtype"] == "fp32", D.DEPTHWISE_VECTOR_FACTOR_FP32, D.DEPTHWISE_VECTOR_FACTOR)
        dw_factor = np.where(a["spatial"] == 1, np.where(a["dtype"] == "fp32", D.DEPTHWISE_1D_VECTOR_FACTOR_FP32,
                                                         D.DEPTHWISE_1D_VECTOR_FACTOR), dw_factor)
        rate = np.where(depthwise, perf.vector_ops_per_s * dw_factor, rate)
    if tensor_mask.any():
        split = np.array([D.MAX_SPLIT_K.get(k, 1.0) for k in OP_KINDS])[kinds]
        # alignment matters for tensor-core matmuls only (cuDNN pads convolutions, flash attention any length)
        elem = np.array([BYTES_PER_ELEMENT.get(str(d), 2.0) for d in a["dtype"]])
        elem = np.where((kinds == OP_KINDS.index("matmul")) & (a["dtype"] != "fp32"), elem, 16.0)
        eff = gemm_efficiency(a["m"], a["n"], a["k"], a["b"], perf.compute_units, split, elem)
        eff_simt = gemm_efficiency(a["m"], a["n"], a["k"], a["b"], perf.compute_units,
                                   np.minimum(split, D.MAX_SPLIT_K_SIMT), elem,
                                   tiles=D.GEMM_TILES_SIMT)
        for kind in TENSOR_KINDS:
            factor = D.KIND_COMPUTE_FACTOR[kind].value
            kmask = tensor_mask & (kinds == OP_KINDS.index(kind))
            for dt in np.unique(a["dtype"][kmask]):
                mask = kmask & (a["dtype"] == dt)
                prec = matrix_precision(str(dt), kind, hw, tf32_matmul)
                peak = perf.matrix_ops_per_s.get(prec)
                if peak is None:
                    raise UnsupportedPrecisionError(
                        f"{hw.id} has no {prec} peak for {kind} operators; "
                        f"it has {', '.join(hw.dense_tops)}", hint="choose one of those with --dtype")
                if kind == "conv" and prec == "tf32":
                    factor = D.CONV_TF32_FACTOR.value
                rate[mask] = peak * factor * (eff_simt[mask] if prec in ("fp32", "fp64") else eff[mask])
                if kind == "conv":
                    # a pointwise convolution is a plain GEMM over the channels: GEMM kernels, GEMM's rate
                    pw = mask & (a["window"] == 1)
                    rate[pw] = peak * (eff_simt[pw] if prec in ("fp32", "fp64") else eff[pw])
                if kind == "attention":
                    # fused attention: query blocks x heads in waves, keys looped (FlashAttention-2: 128-row
                    # blocks; the fp32 memory-efficient kernel: 64)
                    rows = 64.0 if prec in ("fp32", "fp64") else 128.0
                    rate[mask] = peak * factor * head_dim_use(a["k"][mask], prec) * attention_efficiency(
                        a["m"][mask], a["n"][mask], a["b"][mask], perf.compute_units, rows)
                precision[mask] = prec
    return rate, precision


def head_dim_use(head_dim: np.ndarray, precision: str) -> np.ndarray:
    """Fraction of a fused attention kernel's work that is the real head dimension: kernels are compiled for
    a few head dims and run the next one up. FlashAttention (fp16/bf16): multiples of 32 up to 256 (a head dim
    of 40 runs the 64 kernel); PyTorch's memory-efficient kernel (fp32): 64, 128, then any. H200 sweep
    (benchmarks/results/h200_sweep.json): fp32 attention with head dim 36, 40 and 64 at batch 32 all take
    80 us; 32 takes 70."""
    d = np.maximum(np.asarray(head_dim, dtype=np.float64), 1.0)
    if precision in ("fp32", "fp64", "tf32"):
        tier = np.where(d <= 64, 64.0, np.where(d <= 128, 128.0, d))
    else:
        tier = np.where(d <= 256, np.ceil(d / 32.0) * 32.0, d)
    return d / tier


def _gemm_sample_correction(a, perf: DevicePerf, precision, compute, memory, tf32_matmul):
    """With a calibration: scale each matmul's time by measured / modelled time of the nearest probed GEMM
    (nearest in log2 of m, n and k x batch, same precision). Clipped to [1/3, 3]."""
    compute, memory = compute.copy(), memory.copy()
    is_mm = (a["kind"] == OP_KINDS.index("matmul")) & (a["m"] > 0)
    for prec, (coords, dims, seconds) in perf.gemm_samples.items():
        mask = is_mm & (precision == prec)
        if not mask.any():
            continue
        # the model's own time for each probed shape, computed the way ops are
        probe = {"m": dims[:, 0], "n": dims[:, 1], "k": dims[:, 2], "b": dims[:, 3]}
        eff = gemm_efficiency(probe["m"], probe["n"], probe["k"], probe["b"], perf.compute_units,
                              D.MAX_SPLIT_K_SIMT if prec in ("fp32", "fp64") else D.MAX_SPLIT_K["matmul"],
                              BYTES_PER_ELEMENT.get(prec, 2.0) if prec != "fp32" else 16.0,
                              tiles=D.GEMM_TILES_SIMT if prec in ("fp32", "fp64") else D.GEMM_TILES)
        peak = perf.matrix_ops_per_s.get(prec)
        if peak is None:
            continue
        flops = 2.0 * dims[:, 0] * dims[:, 1] * dims[:, 2] * dims[:, 3]
        elem = BYTES_PER_ELEMENT.get(prec, 2.0)
        nbytes = elem * dims[:, 3] * (dims[:, 0] * dims[:, 2] + dims[:, 2] * dims[:, 1] + dims[:, 0] * dims[:, 1])
        modelled = np.maximum(flops / (peak * eff), nbytes / perf.bandwidth_bytes_per_s)
        ratio = np.clip(seconds / modelled, 1 / 3, 3.0)
        idx = np.flatnonzero(mask)
        op_coords = np.log2(np.stack([a["m"][idx], a["n"][idx], a["k"][idx] * np.maximum(a["b"][idx], 1)], 1))
        nearest = np.argmin(((op_coords[:, None, :] - coords[None, :, :]) ** 2).sum(-1), axis=1)
        compute[idx] *= ratio[nearest]
        memory[idx] *= ratio[nearest]
    return compute, memory


def _depthwise(a: dict) -> np.ndarray:
    """Depthwise-like convolutions (few output channels per group): direct kernels on the CUDA cores."""
    return ((a["kind"] == OP_KINDS.index("conv")) & (a["b"] > 1)
            & (a["n"] <= D.DEPTHWISE_MAX_CHANNELS_PER_GROUP) & (a["n"] > 0))


def predict(workload: Workload, hardware: Hardware, calibration: Calibration | None = None,
            mode: Mode = "graph", *, tf32_matmul: bool = False, perf: DevicePerf | None = None,
            calibration_source: str = "") -> Prediction:
    """Predict one workload on one device. Pass ``perf`` (from ``device_perf``) to reuse it across calls."""
    if mode not in MODES:
        raise InputError(f"unknown mode {mode!r}; expected graph or eager")
    perf = perf or device_perf(hardware, calibration, calibration_source)
    a = _arrays(workload)
    rate, precision = _rate_per_op(a, perf, tf32_matmul)
    bw_factor = np.array([D.KIND_BANDWIDTH_FACTOR.get(k, 0.8) for k in OP_KINDS])[a["kind"]]
    half = np.isin(a["dtype"], ("fp16", "bf16"))
    for kind, (f16, f32) in D.KIND_BANDWIDTH_FACTOR_BY_WIDTH.items():
        bw_factor = np.where(a["kind"] == OP_KINDS.index(kind), np.where(half, f16, f32), bw_factor)
    for name, (f16, f32) in D.NORM_BANDWIDTH_FACTOR.items():
        bw_factor = np.where(a["name"] == name, np.where(half, f16, f32), bw_factor)
    bw_factor = np.where(_depthwise(a), D.DEPTHWISE_BANDWIDTH_FACTOR, bw_factor)
    strided_factor = np.array([D.STRIDED_KIND_BANDWIDTH_FACTOR.get(k, D.KIND_BANDWIDTH_FACTOR.get(k, 0.8)
                                                                   * D.STRIDED_BANDWIDTH_FACTOR)
                               for k in OP_KINDS])[a["kind"]]
    bw_factor = np.where(a["strided"], strided_factor, bw_factor)
    compute = np.divide(a["flops"], rate, out=np.zeros_like(rate), where=a["flops"] > 0)
    memory = a["bytes"] / (perf.bandwidth_bytes_per_s * bw_factor)
    if perf.gemm_samples:
        compute, memory = _gemm_sample_correction(a, perf, precision, compute, memory, tf32_matmul)
    kind_floor = np.array([perf.kind_floor_s.get(k, perf.kind_floor_s["other"]) for k in OP_KINDS])[a["kind"]]
    # a pointwise (1x1) convolution runs as a plain GEMM: no layout conversion, the GEMM's floor
    pointwise = (a["kind"] == OP_KINDS.index("conv")) & (a["window"] == 1)
    kind_floor = np.where(pointwise, perf.kind_floor_s["matmul"], kind_floor)
    kind_floor = np.where(_depthwise(a), perf.kind_floor_s["depthwise"], kind_floor)
    kind_floor = np.where((a["name"] == "aten.native_batch_norm") & (a["dtype"] == "fp32"),
                          perf.kind_floor_s["batch_norm_fp32"], kind_floor)
    floor = np.where(a["kernels"] >= 1, kind_floor + np.maximum(a["kernels"] - 1, 0) * perf.kernel_floor_s, 0.0)
    work = np.maximum(compute, memory)
    overhead = a["kernels"] * perf.kernel_gap_s
    device = work + floor + overhead
    bound_idx = np.where(floor > work, 2, np.where(compute >= memory, 0, 1))

    device_total = float(device.sum())
    host_total = 0.0
    latency = device_total
    if mode == "eager":
        k = a["kernels"]
        op_s = perf.eager_op_s
        if workload.functional:  # no nn.Module call around each operator (same calibration scaling)
            op_s *= D.EAGER_FUNCTIONAL_OP_S.value / D.EAGER_OP_S.value
        host = np.where(k >= 1, op_s + np.maximum(k - 1, 0) * perf.eager_extra_kernel_s,
                        perf.eager_no_kernel_op_s)
        host = np.where(a["internal"], k * perf.eager_extra_kernel_s, host)
        issue = np.cumsum(host)                    # when the host has launched op j
        suffix = np.cumsum(device[::-1])[::-1]     # device work from op j to the end
        host_total = float(issue[-1]) if issue.size else 0.0
        latency = max(float((issue + suffix).max()) if issue.size else 0.0, host_total)

    by_bound = {
        "compute": float(np.where(bound_idx == 0, work, 0).sum()),
        "memory": float(np.where(bound_idx == 1, work, 0).sum()),
        "overhead": float(overhead.sum() + np.where(bound_idx == 2, floor, 0).sum() + (latency - device_total)),
    }
    bound = max(by_bound, key=by_bound.get)

    main_precision = _main_precision(a["flops"], precision, workload.dtype, hardware)
    peak = hardware.peak_ops_per_s(main_precision) or 0.0
    required = (workload.param_bytes + workload.activation_peak_bytes + workload.input_bytes
                + D.RUNTIME_MEMORY_BYTES.value)
    assumptions = (f"mode {mode}: " + ("CUDA graph replay, no host launch cost" if mode == "graph"
                                       else "eager PyTorch, host launch cost per operator overlapping the device"),
                   *perf.assumptions)
    if workload.dtype == "fp32":
        assumptions += ("fp32: convolutions in TF32 (PyTorch default), matmuls in "
                        + ("TF32 (--tf32)" if tf32_matmul else "plain FP32 (PyTorch default)"),)
    return Prediction(
        hardware=hardware.id, workload=workload.name, batch=workload.batch, dtype=workload.dtype,
        precision=main_precision, mode=mode, calibrated=perf.calibrated,
        calibration_source=perf.calibration_source, latency_s=latency, device_time_s=device_total,
        host_time_s=host_total, flops=float(a["flops"].sum()), bytes=float(a["bytes"].sum()),
        kernels=int(a["kernels"].sum()), peak_ops_per_s=peak, time_by_bound_s=by_bound, bound=bound,
        memory_required_bytes=required, memory_capacity_bytes=hardware.memory_bytes,
        fits_memory=required <= hardware.memory_bytes, assumptions=assumptions,
        _arrays={"precision": precision, "compute": compute, "memory": memory,
                 "overhead": overhead + np.maximum(floor - work, 0.0),
                 "device": device, "bound": bound_idx},
        _workload_ref=workload,
    )


def _main_precision(flops: np.ndarray, precision: np.ndarray, dtype: str, hw: Hardware) -> str:
    """The tensor precision doing most of the operations (falls back to the workload dtype)."""
    totals: dict[str, float] = {}
    for p, f in zip(precision, flops, strict=True):
        if p != "vector":
            totals[p] = totals.get(p, 0.0) + float(f)
    if totals:
        return max(totals, key=totals.get)
    return dtype if dtype in hw.dense_tops else "fp32"


def bytes_per_element(dtype: str) -> float:
    return BYTES_PER_ELEMENT[dtype]
