"""Advice that follows from a prediction's numbers: the article's tuning advice, applied.

Pure: takes predictions and the device, returns sentences. Each rule states the number that triggered it.
"""

from __future__ import annotations

import math

from .catalog import Hardware
from .formatting import fmt_bytes, fmt_memory, fmt_number, format_seconds
from .kinds import Mode
from .roofline import Prediction

# Sourced: the article's pitfall, under 60% of peak means something other than compute binds.
LOW_UTILISATION = 0.60
# Explicit defaults (no external source): a rule fires only when its cause is a large share of the predicted
# time, a quarter to two-fifths, where removing that cause moves the total noticeably. Lower shares are not
# worth a sentence; higher ones would stay silent on mixed workloads where the advice still pays.
FUSED_MODES = (Mode.COMPILED, Mode.TENSORRT)   # modes whose kernels are already fused: no torch.compile advice
HOST_STALL_SHARE = 0.25      # eager mode: the GPU waits for kernel launches this share of the time or more
OVERHEAD_SHARE = 0.30        # fixed per-kernel cost (beyond the host stall): fuse, or raise the batch
BOUND_SHARE = 0.40           # time spent memory-bound (or compute-bound) before its rule speaks
WEIGHT_TRAFFIC_SHARE = 0.20  # weights at least a fifth of the bytes: a bigger batch reuses them
# A lower precision is worth naming when its dense peak is at least 1.5x the current one: the datasheet steps
# are 2x (fp16 -> fp8/int8 on Hopper and Ada, tf32 -> fp16), so 1.5x keeps them and drops near-equal peaks
# (bf16 vs fp16).
FASTER_PEAK_RATIO = 1.5
MAX_ADVICE = 6               # sentences at most, most important first


def advise(pred: Prediction, hw: Hardware, other_mode: Prediction | None = None) -> list[str]:
    """Up to ``MAX_ADVICE`` concrete suggestions, most important first."""
    out: list[str] = []
    lat = pred.latency_s
    if not pred.fits_memory:
        need, have = pred.memory_required_bytes, pred.memory_capacity_bytes
        devices = math.ceil(need / have)
        out.append(f"does not fit: needs {fmt_memory(need)}, {hw.id} has {fmt_bytes(have)}; lower the precision "
                   f"(int8 halves fp16 weights), shrink the batch, or split over {devices:,}+ devices"
                   + (f" ({hw.peer_link})" if hw.peer_link else " (no peer link: PCIe only)"))
    host_stall = lat - pred.device_time_s
    if pred.mode == Mode.EAGER and host_stall > HOST_STALL_SHARE * lat:
        msg = (f"host launch overhead: the GPU waits {host_stall / lat:.0%} of the time for {pred.kernels} "
               f"kernel launches; replay as a CUDA graph (torch.cuda.CUDAGraph or "
               f"torch.compile(mode='reduce-overhead'))")
        if other_mode is not None and other_mode.mode == Mode.GRAPH:
            msg += f": predicted {format_seconds(other_mode.latency_s)} instead of {format_seconds(lat)}"
        out.append(msg)
    overhead = pred.time_by_bound_s.get("overhead", 0.0) - max(host_stall, 0.0)
    if overhead > OVERHEAD_SHARE * lat:
        fuse = "raise" if pred.mode in FUSED_MODES else "fuse operators (torch.compile) or raise"
        out.append(f"per-kernel cost is {overhead / lat:.0%} of the time ({pred.kernels} kernels): {fuse} "
                   f"the batch; the cost is paid per batch, not per sample")
    memory = pred.time_by_bound_s.get("memory", 0.0)
    if memory > BOUND_SHARE * lat and pred.utilisation < LOW_UTILISATION:
        weights = _weight_share(pred)
        head = (f"memory-bound: {memory / lat:.0%} of the time moves bytes and utilisation is "
                f"{pred.utilisation:.0%} of peak (under the article's 60% line); ")
        if weights >= WEIGHT_TRAFFIC_SHARE:
            out.append(head + f"weights are {weights:.0%} of the traffic: raise the batch to reuse them, or "
                              "lower the precision to move fewer bytes")
        else:
            fuse = "" if pred.mode in FUSED_MODES else "fuse elementwise and norm operators (torch.compile), or "
            out.append(head + f"activations are {1 - weights:.0%} of the traffic, so a bigger batch will not "
                              f"help: {fuse}lower the precision")
    compute = pred.time_by_bound_s.get("compute", 0.0)
    faster = _faster_precisions(pred.precision, hw)
    if compute > BOUND_SHARE * lat and faster:
        best, tops = faster[0]
        out.append(f"compute-bound at {pred.utilisation:.0%} of the {pred.precision} peak: {hw.id} has {best} "
                   f"at {fmt_number(tops)} TOPS dense ({tops / (pred.peak_ops_per_s / 1e12):.1f}x); quantize if "
                   "accuracy allows")
    elif memory > BOUND_SHARE * lat and faster:
        best, _ = faster[-1] if faster[-1][0] in ("int8", "fp8") else faster[0]
        out.append(f"{best} halves the bytes of {pred.precision} where the device has it ({hw.id} does)")
    if not out:
        out.append(_when_no_rule_fires(pred))
    return out[:MAX_ADVICE]


def _when_no_rule_fires(pred: Prediction) -> str:
    """The closing sentence when no setting above applies: 'little to gain' only near the roof; a compute-bound
    model far below its peak is limited by how well its operators' shapes fill the tensor cores."""
    u, lat = pred.utilisation, pred.latency_s
    if u >= LOW_UTILISATION:
        return f"near the roof: {pred.bound}-bound at {u:.0%} of peak; little to gain from settings"
    if pred.bound == "compute":
        return (f"compute-bound at {u:.0%} of peak: the operators run at the rate their shapes allow (tile and "
                f"wave quantization of small or odd-sized matrices, convolution lowering), not the datasheet's; "
                f"a larger batch or sizes in multiples of 64 fill the tensor cores better")
    shares = ", ".join(f"{t / lat:.0%} {b}" for b, t in sorted(pred.time_by_bound_s.items(), key=lambda bt: -bt[1])
                       if lat and t > 0)
    return (f"mixed: no one limit dominates the time ({shares}-bound) at {u:.0%} of peak, so no single setting "
            "moves it much")


def _weight_share(pred: Prediction) -> float:
    """Share of the bytes moved that are parameter reads."""
    w = getattr(pred, "_workload_ref", None)
    if w is None or not pred.bytes:
        return 0.0
    return sum(op.param_bytes for op in w.ops) / pred.bytes


def _faster_precisions(precision: str, hw: Hardware) -> list[tuple[str, float]]:
    """Lower precisions the device has with a higher dense peak than ``precision``, fastest first."""
    base = hw.dense_tops.get(precision, 0.0)
    cands = [(p, hw.dense_tops[p]) for p in ("fp8", "int8", "fp16", "bf16")
             if p in hw.dense_tops and hw.dense_tops[p] > base * FASTER_PEAK_RATIO and p != precision]
    return sorted(cands, key=lambda pt: -pt[1])
