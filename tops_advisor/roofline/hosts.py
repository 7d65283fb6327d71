"""Named eager host profiles: the host cost of eager PyTorch on a machine and software stack we cannot probe.

Eager latency at small batch is host time: the interpreter, the dispatcher and the driver launching operator
after operator (``predict.eager_timeline``). The defaults price that host time on one reference machine (the
H200 host with PyTorch 2.11: ``defaults.eager_op_s`` and its module- and Python-call companions, fitted in
``benchmarks/studies/host-cost-fit/host_cost_fit.py``); a probe on the user's own machine rescales it (``kernel_eager_us``).
Published measurements come from other hosts and other PyTorch versions, often through a harness that adds
work of its own per iteration, and nobody can probe those. A host profile names such an environment and
says what it assumes:

- ``host_scale``: the environment's eager host cost per operator, per nn.Module call and per Python call,
  as a multiple of the reference host's (one number: the three scale together, as a probe scales them);
- ``autocast_host_scale``: a further multiple for forwards run under autocast (``--dtype amp``). The cast
  kernels autocast adds are counted as operators already (``counting/amp.py``: each weight once per
  forward, activations at each use); this is whatever else the environment's autocast path costs per
  operator.

A profile replaces the host part of a calibration: with it the host cost is the reference one times the
profile's scales, whatever the probe measured on the machine running the tool.

Profiles fitted to published rows say which rows (``fitted_from``) and how the fit moved when each model
was left out (``source``). The rows are chosen by a rule, not by hand: those whose predicted device time is
under ``HOST_BOUND_DEVICE_SHARE`` of the measured latency, where the host sets the latency
(``host_bound``). ``fit_host_scale`` is the fit; ``benchmarks/reports/published_score.py --host-fits`` runs it on
the published records, all models and leave-one-model-out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from ..errors import InputError
from .arrays import op_arrays
from .device import DevicePerf
from .predict import _calls, device_times, eager_timeline

# A row is host-bound when the card's predicted device time is under this share of the measured latency:
# then at least half the latency is host time whatever the device model's error (a device time off by 2x
# still leaves the host the larger part), so the row informs the host cost and not the device rates.
HOST_BOUND_DEVICE_SHARE = 0.5


@dataclass(frozen=True)
class HostProfile:
    name: str
    assumes: str
    host_scale: float = 1.0
    autocast_host_scale: float = 1.0
    fitted_from: str = ""
    source: str = ""

    def scale_for(self, dtype: str) -> float:
        """The host-cost multiple for a workload of ``dtype`` ("amp": under autocast)."""
        return self.host_scale * (self.autocast_host_scale if dtype == "amp" else 1.0)


HOST_PROFILES: dict[str, HostProfile] = {p.name: p for p in (
    HostProfile(
        name="reference",
        assumes="the host the defaults were fitted on: H200 machine, PyTorch 2.11, a bare forward per "
                "iteration (benchmarks/studies/host-cost-fit/host_cost_fit.py)",
        source="roofline/defaults/device_level.py eager_op_s, eager_module_call_s, eager_python_call_s"),
    HostProfile(
        name="dle-pytorch-21.03",
        assumes="NVIDIA DeepLearningExamples ConvNets main.py --mode benchmark_inference in the NGC "
                "pytorch-21.03 container (PyTorch 1.9 pre-release) on a DGX-1 (2x Xeon E5-2698 v4) or the "
                "T4 server of its README: per iteration the forward under torch.no_grad (and autocast for "
                "AMP, channels-last), the loss, top-1/top-5 accuracy and three .item() synchronisations "
                "(image_classification/training.py validate; 'Latency' is compute_time, data loading "
                "excluded). The harness's per-iteration work is folded into the per-operator scale; the two "
                "hosts ran the batch-1 rows within 3% of each other and share one profile",
        host_scale=1.89, autocast_host_scale=1.15,
        fitted_from="benchmarks/published/dle_*.json, environment dle-pytorch-21.03: the host-bound rows "
                    "(HOST_BOUND_DEVICE_SHARE) of ResNet-50, ResNeXt101-32x4d, SE-ResNeXt101-32x4d "
                    "(V100 and T4) and EfficientNet-B0 (V100): 12 plain rows, 29 autocast rows (refitted 2026-12-01 after "
                    "the Volta bandwidth and SIMT-convolution rates changed the device times under them)",
        source="all four models: host scale 1.89 (plain), 2.18 under autocast (1.15x); each model left out "
               "in turn: 1.83-1.97 plain, 2.08-2.26 under autocast "
               "(python benchmarks/reports/published_score.py --host-fits)"),
)}


def get_host_profile(name: str) -> HostProfile:
    key = name.strip().lower()
    if key in HOST_PROFILES:
        return HOST_PROFILES[key]
    raise InputError(f"unknown eager host profile {name!r}; known: {', '.join(HOST_PROFILES)}",
                     hint="--eager-host reference or dle-pytorch-21.03 (docs/published.md)")


def host_perf(perf: DevicePerf, profile: HostProfile, dtype: str) -> DevicePerf:
    """``perf`` with the eager host cost of ``profile`` for a workload of ``dtype``: the reference cost
    (``defaults.eager_op_s``, which module and Python calls follow) times the profile's scale."""
    scale = profile.scale_for(dtype)
    note = f"eager host: profile {profile.name}, {scale:.2f}x the reference host cost per operator"
    return replace(with_host_scale(perf, scale), assumptions=(*perf.assumptions, note))


def with_host_scale(perf: DevicePerf, scale: float) -> DevicePerf:
    if not (scale > 0 and math.isfinite(scale)):
        raise InputError(f"host scale must be a positive number, got {scale!r}")
    return replace(perf, eager_op_s=perf.defaults.eager_op_s.value * scale)


def host_bound(device_s: float, measured_s: float) -> bool:
    """Whether a measured row is set by the host (``HOST_BOUND_DEVICE_SHARE``)."""
    return device_s < HOST_BOUND_DEVICE_SHARE * measured_s


class EagerCase:
    """One measured eager forward, ready to be re-predicted at any host scale: its operators' device times
    are computed once, only the host timeline is redone. ``copy_bytes``: bytes the timed region copies from
    host to device before the forward (a harness that times ``model(x.to('cuda'))``); they cost
    ``copy_bytes / HostFit.copy_rate_b_s`` on top of the forward."""

    def __init__(self, workload, perf: DevicePerf, measured_s: float, tf32_matmul: bool = False,
                 copy_bytes: float = 0.0):
        self.workload, self.perf, self.measured_s = workload, perf, measured_s
        self.copy_bytes = copy_bytes
        self._a = op_arrays(workload)
        self._device = device_times(self._a, perf, tf32_matmul).device
        self.device_s = float(self._device.sum())

    def latency_s(self, scale: float) -> float:
        """The forward's latency at host ``scale`` (the timed copy apart: ``HostFit.latency_s``)."""
        perf = with_host_scale(self.perf, scale)
        return eager_timeline(self._a, self._device, perf, self.workload.functional, _calls(self.workload))[0]


@dataclass(frozen=True)
class HostFit:
    """An environment's fitted host: the scale of its per-operator host cost and, where its harness times an
    input copy, the rate of that copy (None where no fitted row copies)."""
    scale: float
    copy_rate_b_s: float | None = None

    def copy_s(self, copy_bytes: float) -> float:
        return copy_bytes / self.copy_rate_b_s if copy_bytes and self.copy_rate_b_s else 0.0

    def latency_s(self, case: EagerCase) -> float:
        return case.latency_s(self.scale) + self.copy_s(case.copy_bytes)


# The copy rates a fit searches (bytes per second): from a page-faulting pageable copy (~0.1 GB/s) to
# pinned PCIe 5.0 x16 (~60 GB/s), 2% steps.
COPY_RATES_B_S = np.exp(np.arange(math.log(0.1e9), math.log(60e9), 0.02))


def fit_host(cases: list[EagerCase], lo: float = 0.25, hi: float = 8.0) -> HostFit:
    """The host scale (and, when a case has ``copy_bytes``, the copy rate) that minimise the summed squared
    log error of ``cases``: a grid in log scale (2% steps), then a finer one (0.1%) around its best scale, the
    copy rate re-chosen on its grid at each scale. Raises InputError without cases."""
    if not cases:
        raise InputError("no rows to fit a host scale to")
    measured = np.array([c.measured_s for c in cases])
    copy_bytes = np.array([c.copy_bytes for c in cases], dtype=float)
    rates = COPY_RATES_B_S if copy_bytes.any() else np.array([np.inf])

    def at(scale: float) -> tuple[float, float]:
        forward = np.array([c.latency_s(scale) for c in cases])
        cost = (np.log((forward + copy_bytes / rates[:, None]) / measured) ** 2).sum(axis=1)
        best = int(np.argmin(cost))
        return float(cost[best]), float(rates[best])

    def best(grid: np.ndarray) -> HostFit:
        costs = [at(float(s)) for s in grid]
        i = int(np.argmin([c for c, _ in costs]))
        rate = costs[i][1]
        return HostFit(float(grid[i]), None if math.isinf(rate) else rate)

    coarse = best(np.exp(np.arange(math.log(lo), math.log(hi) + 0.02, 0.02))).scale
    return best(np.exp(np.arange(math.log(coarse) - 0.02, math.log(coarse) + 0.0205, 0.001)))


def fit_host_scale(cases: list[EagerCase], lo: float = 0.25, hi: float = 8.0) -> float:
    """``fit_host``'s scale alone."""
    return fit_host(cases, lo, hi).scale
