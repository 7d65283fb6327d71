"""A training step on one device: TrainingWorkload x Hardware -> TrainingPrediction. Pure numpy, no torch.

Each operator's device time comes from the roofline as for inference (the same per-kind rates; backward
kernels are operators of the same kinds). In eager mode the host issues the step operator by operator:
the inference host cost per forward operator plus autograd's recording, the autograd engine's cost per backward
node, the optimizer's Python per parameter and per multi-tensor launch; the device runs behind the host, and
GradScaler's found-inf read makes the host wait. Steps run back to back (the host may run ahead into the next
step), so the step time is the second of two simulated steps, and each part's time is the span between its
boundaries there, as CUDA events between the parts measure it."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from ..calibration import Calibration
from ..catalog import Hardware
from ..errors import InputError
from ..kinds import Bound, Lowering, Mode, Phase
from ..roofline.arrays import OpArrays, op_arrays
from ..roofline.device import DevicePerf, device_perf
from ..roofline.predict import BOUNDS, device_times
from .defaults import TRAINING_DEFAULTS, TrainingDefaults, workspace_bytes
from .timeline import run_steps
from .workload import NOT_MODELLED, PHASES, MemoryParts, TrainingWorkload


@dataclass(frozen=True)
class PartPrediction:
    """One part of the step: its span on the device timeline, its device and host work, what binds it."""

    phase: str
    time_s: float
    device_s: float
    host_s: float
    flops: float
    bound: str


@dataclass(frozen=True)
class TrainingPrediction:
    hardware: str
    workload: str
    batch: int
    setup: str
    mode: str
    step_s: float
    parts: tuple[PartPrediction, ...]
    model_flops: float            # forward + backward operations of one step
    peak_ops_per_s: float         # dense peak at the precision doing most of the work
    precision: str
    memory: MemoryParts
    memory_required_bytes: float  # the peak (with the workspaces) plus the runtime reserve
    memory_capacity_bytes: float
    tokens: int = 0
    assumptions: tuple[str, ...] = ()
    workspace_bytes: float = 0.0  # cuBLAS workspaces, allocated through the caching allocator

    @property
    def peak_memory_bytes(self) -> float:
        """What ``torch.cuda.max_memory_allocated`` reports: the step's peak and the cuBLAS workspaces."""
        return self.memory.peak_bytes + self.workspace_bytes

    def part(self, phase: Phase) -> PartPrediction:
        return next(p for p in self.parts if p.phase == phase)

    @property
    def forward_s(self) -> float:
        return self.part(Phase.FORWARD).time_s

    @property
    def backward_s(self) -> float:
        return self.part(Phase.BACKWARD).time_s

    @property
    def optimizer_s(self) -> float:
        return self.part(Phase.OPTIMIZER).time_s

    @property
    def fits_memory(self) -> bool:
        return self.memory_required_bytes <= self.memory_capacity_bytes

    @property
    def samples_per_s(self) -> float:
        return self.batch / self.step_s if self.step_s else 0.0

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.step_s if self.step_s else 0.0

    @property
    def attainable_ops_per_s(self) -> float:
        return self.model_flops / self.step_s if self.step_s else 0.0

    @property
    def mfu(self) -> float:
        """Model FLOPs utilisation: forward + backward operations per second over the dense peak."""
        return self.attainable_ops_per_s / self.peak_ops_per_s if self.peak_ops_per_s else 0.0

    @property
    def bound(self) -> str:
        return max(self.parts, key=lambda p: p.time_s).bound

    def model_dump(self) -> dict:
        return {
            "hardware": self.hardware, "workload": self.workload, "batch": self.batch, "setup": self.setup,
            "mode": self.mode, "precision": self.precision, "step_time_s": self.step_s,
            "forward_s": self.forward_s, "backward_s": self.backward_s, "optimizer_s": self.optimizer_s,
            "parts": [asdict(p) for p in self.parts], "bound": self.bound, "model_flops": self.model_flops,
            "attainable_ops_per_s": self.attainable_ops_per_s, "peak_ops_per_s": self.peak_ops_per_s,
            "mfu": self.mfu, "samples_per_s": self.samples_per_s, "tokens_per_s": self.tokens_per_s,
            "peak_memory_bytes": self.peak_memory_bytes,
            "memory_parts": self.memory.model_dump() | {"cublas_workspaces": self.workspace_bytes},
            "memory_required_bytes": self.memory_required_bytes, "memory_capacity_bytes": self.memory_capacity_bytes,
            "fits_memory": self.fits_memory, "memory_not_modelled": list(NOT_MODELLED),
            "assumptions": list(self.assumptions),
        }


def host_times(a: OpArrays, phase: np.ndarray, tw: TrainingWorkload, perf: DevicePerf,
               td: TrainingDefaults = TRAINING_DEFAULTS) -> np.ndarray:
    """Host time of each operator in eager mode (seconds on this device's host). Forward operators, and the
    backward's recompute of checkpointed modules (backward operators issued inside a module's forward), cost
    what an eager inference operator costs plus autograd's recording, with the module and Python calls spread
    over them; the other backward operators cost the autograd engine's work per node, spread over them; the
    optimizer's cost its Python per parameter and its multi-tensor launches."""
    d = perf.defaults
    scale = perf.eager_op_s / d.eager_op_s.value           # the calibration's host scale
    k = a.kernels
    launching = (k >= 1) & ~a.internal
    in_module = tw.in_module
    bwd_all, opt = phase == 1, phase == 2
    fwd = (phase == 0) | (bwd_all & in_module)
    bwd = bwd_all & ~in_module
    w = tw.workload
    calls_s = ((w.module_calls - w.empty_module_calls) * d.eager_module_call_s.value
               + w.empty_module_calls * d.eager_empty_module_call_s.value + w.python_calls * d.eager_python_call_s.value)
    host = np.where(k >= 1, perf.eager_op_s + np.maximum(k - 1, 0) * perf.eager_extra_kernel_s,
                    perf.eager_no_kernel_op_s)
    host = np.where(a.internal, k * perf.eager_extra_kernel_s, host)
    n_fwd = max(int((launching & fwd).sum()), 1)
    host = host + np.where(launching & fwd, scale * (calls_s / n_fwd + td.forward_grad_op_s.value), 0.0)
    n_bwd = max(int(bwd.sum()), 1)
    node_s = scale * td.backward_node_s.value * tw.autograd_nodes / n_bwd
    host = np.where(bwd, node_s + np.maximum(k - 1, 0) * perf.eager_extra_kernel_s, host)
    host = np.where(opt, scale * td.optimizer_launch_s.value * np.maximum(k, 1), host)
    # after the backward's per-node pricing, which replaces the host of the engine's operators
    host = host + _checkpoint_hooks_s(launching & (phase == 0), launching & bwd_all, tw.recomputed_ops,
                                      scale * td.checkpoint_hook_s.value)
    first_opt = np.flatnonzero(opt)
    if first_opt.size:
        # torch.optim's Python per parameter runs in optimizer.step(); GradScaler.step reads found_inf first
        at = tw.sync_op if first_opt[0] < tw.sync_op < len(host) else first_opt[0]
        host[at] += scale * td.optimizer_tensor_s.value * tw.optimizer_tensors
    return host


def compiled_host_times(a: OpArrays, phase: np.ndarray, tw: TrainingWorkload, perf: DevicePerf,
                        td: TrainingDefaults = TRAINING_DEFAULTS) -> np.ndarray:
    """Host time of each operator under ``torch.compile(model)``: the forward's and the backward's kernels
    are launched by inductor's wrapper (``compiled_kernel_s`` each, plus one graph call at the first operator
    of each, and an AccumulateGrad node per trainable parameter after the backward's), the optimizer is eager
    (``host_times``)."""
    scale = perf.eager_op_s / perf.defaults.eager_op_s.value
    host = host_times(a, phase, tw, perf, td)
    graph = phase < 2
    host = np.where(graph, scale * td.compiled_kernel_s.value * a.kernels, host)
    for part in (0, 1):
        ops = np.flatnonzero(phase == part)
        if ops.size:
            host[ops[0]] += scale * td.compiled_graph_call_s.value
        if ops.size and part == 1:   # the AccumulateGrad node of each trainable parameter, after the graph
            host[ops[-1]] += scale * td.backward_node_s.value * tw.optimizer_tensors
    return host


def _checkpoint_hooks_s(forward: np.ndarray, backward: np.ndarray, recomputed: int, hook_s: float) -> np.ndarray:
    """Per operator: checkpointing's saved-tensor hooks (``TrainingDefaults.checkpoint_hook_s``) for ``recomputed``
    operators: one pass each in the forward, spread over the forward's launching operators (``forward``), and
    two in the backward (the recompute's pack, the unpack), spread over the backward's (``backward``)."""
    out = np.zeros(len(forward))
    if recomputed:
        out += np.where(forward, hook_s * recomputed / max(int(forward.sum()), 1), 0.0)
        out += np.where(backward, 2 * hook_s * recomputed / max(int(backward.sum()), 1), 0.0)
    return out


def _parts(finish: np.ndarray, phase: np.ndarray, host: np.ndarray, device: np.ndarray, bound: np.ndarray,
           flops: np.ndarray, step_start: float) -> tuple[PartPrediction, ...]:
    """Each part's span on the second step's timeline (from the end of the part before it), its work and its
    binding limit: overhead when the device waited for the host most of the span, else the bound holding
    most of its device time."""
    parts, start = [], step_start
    for i, name in enumerate(PHASES):
        mask = phase == i
        if not mask.any():
            parts.append(PartPrediction(str(name), 0.0, 0.0, 0.0, 0.0, str(Bound.OVERHEAD)))
            continue
        end = float(finish[np.flatnonzero(mask)[-1]])
        span, dev = end - start, float(device[mask].sum())
        by = [float(device[mask & (bound == b)].sum()) for b in range(len(BOUNDS))]
        limit = Bound.OVERHEAD if span > 2 * dev else BOUNDS[int(np.argmax(by))]
        parts.append(PartPrediction(str(name), span, dev, float(host[mask].sum()), float(flops[mask].sum()),
                                    str(limit)))
        start = end
    return tuple(parts)


def _main_precision(flops: np.ndarray, precision: np.ndarray, hw: Hardware, fallback: str) -> str:
    totals: dict[str, float] = {}
    for p, f in zip(precision, flops, strict=True):
        if p != "vector":
            totals[str(p)] = totals.get(str(p), 0.0) + float(f)
    return max(totals, key=totals.get) if totals else fallback


_MODE_ASSUMPTION = {
    Mode.EAGER: "eager PyTorch, host cost per operator, per autograd node and per optimizer launch, overlapping "
                "the device",
    Mode.COMPILED: "torch.compile(model), inductor's default mode: forward and backward as fused kernels launched "
                   "by its wrapper (no CUDA graphs), the optimizer eager",
    Mode.GRAPH: "no host cost (a lower bound)",
}
TRAINING_MODES = tuple(_MODE_ASSUMPTION)


def _check_mode(mode: Mode | str, tw: TrainingWorkload) -> None:
    """Compiled mode predicts a step counted with the inductor lowering, the other modes one counted without."""
    if mode not in _MODE_ASSUMPTION:
        raise InputError(f"unknown training mode {mode!r}; expected one of {', '.join(TRAINING_MODES)}")
    compiled = tw.workload.lowering == Lowering.INDUCTOR_CUDA
    if (mode == Mode.COMPILED) != compiled:
        raise InputError(f"training mode {mode} needs a step counted with the "
                         f"{'inductor-cuda' if mode == Mode.COMPILED else 'pytorch-cuda'} lowering, got "
                         f"{tw.workload.lowering!r}", hint="count it with lowering=lowering_for(mode)")


def predict_training(tw: TrainingWorkload, hardware: Hardware, calibration: Calibration | None = None,
                     mode: Mode = Mode.EAGER, *, perf: DevicePerf | None = None,
                     training_defaults: TrainingDefaults = TRAINING_DEFAULTS) -> TrainingPrediction:
    """One steady-state optimizer step of ``tw`` on ``hardware`` (eager PyTorch: the host issues every
    operator; ``compiled``: ``torch.compile(model)``'s kernels, ``tw`` counted with the inductor lowering;
    ``graph``: the eager kernels with no host cost, a lower bound)."""
    _check_mode(mode, tw)
    mode = Mode(mode)
    perf = perf or device_perf(hardware, calibration)
    a = op_arrays(tw.workload)
    t = device_times(a, perf)
    device = t.device
    phase = tw.phase_index
    host = (host_times(a, phase, tw, perf, training_defaults) if mode == Mode.EAGER
            else compiled_host_times(a, phase, tw, perf, training_defaults) if mode == Mode.COMPILED
            else np.zeros_like(device))
    finish = run_steps(host, device, tw.sync_op if mode != Mode.GRAPH else -1, steps=2)
    step_start = float(finish[0, -1])
    step_s = float(finish[1, -1]) - step_start
    fwd_bwd = phase < 2
    precision = _main_precision(a.flops[fwd_bwd], t.precision[fwd_bwd], hardware, tw.workload.dtype)
    workspace = workspace_bytes(hardware.architecture)
    required = tw.memory.peak_bytes + workspace + perf.defaults.runtime_memory_bytes.value
    return TrainingPrediction(
        hardware=hardware.id, workload=tw.name, batch=tw.batch, setup=tw.setup.describe(), mode=str(mode),
        step_s=step_s, parts=_parts(finish[1], phase, host, device, t.bound, a.flops, step_start),
        model_flops=tw.model_flops, peak_ops_per_s=hardware.peak_ops_per_s(precision) or 0.0,
        precision=precision, memory=tw.memory, memory_required_bytes=required,
        memory_capacity_bytes=hardware.memory_bytes, tokens=tw.tokens, workspace_bytes=workspace,
        assumptions=(f"mode {mode}: " + _MODE_ASSUMPTION[mode],
                     "steps back to back, no host sync but GradScaler's found-inf read", *perf.assumptions))
