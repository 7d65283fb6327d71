"""Count one training step: forward, loss, backward and the optimizer's ``step()`` run on meta tensors under
the counting modes, so every kernel PyTorch runs is counted as it runs it (convolution data and weight
gradients, norms' backward, the fused attention backward, checkpointing's recompute, nothing for frozen
weights, the optimizer's multi-tensor kernels, GradScaler's checks), each with its phase."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ...kinds import Phase
from ...train import TrainSetup
from ..forward import counting_modes, prepare
from ..state import CountingRun
from ..tensors import flat_tensors, itemsize
from .loss import Loss, make_loss
from .optimizers import build_optimizer, host_steps, prime, state_tensors
from .timeline import MemoryTimeline, Peak

# The precision each training precision counts in, and autocast's lower dtype (None: no autocast).
COUNT_AS = {"fp32": ("fp32", None), "tf32": ("tf32", None), "bf16": ("bf16", None),
            "amp": ("amp", torch.float16), "amp-bf16": ("amp", torch.bfloat16)}
GRAD_SCALE = 65536.0   # torch.amp.GradScaler's init_scale
UNSCALE = "aten._amp_foreach_non_finite_check_and_unscale_"


@dataclass
class StepRun:
    """What counting one step found, beyond the records."""

    loss: Loss | None = None
    nodes: int = 0
    backward_end: int = 0
    peak: Peak | None = None
    state_bytes: float = 0.0
    optimizer_tensors: int = 0


def autograd_nodes(loss: torch.Tensor) -> int:
    """Nodes of the autograd graph behind ``loss`` (each runs once in the backward: host work per node)."""
    seen, stack = set(), [loss.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        stack.extend(n for n, _ in node.next_functions)
    return len(seen)


def backward(loss: torch.Tensor) -> None:
    """``loss.backward()`` through the autograd engine directly: ``Tensor.backward`` is a torch function, and
    a torch-function mode is off while it handles one, so the counter's function mode would not see the
    backward's functions (checkpointing's recompute, fused attention's backward node)."""
    from torch.autograd.graph import _engine_run_backward

    _engine_run_backward((loss,), (torch.ones_like(loss),), False, False, (), allow_unreachable=True,
                         accumulate_grad=True)


def _scaler_unscale(grads: list[torch.Tensor]) -> None:
    """GradScaler.unscale_: one found-inf check and unscale over the gradients, per dtype (then ``.item()``
    of found_inf in ``step``: the host waits for the device)."""
    device = grads[0].device
    found, inv = torch.zeros(1, device=device), torch.ones(1, device=device)
    by_dtype: dict[torch.dtype, list[torch.Tensor]] = {}
    for g in grads:
        by_dtype.setdefault(g.dtype, []).append(g)
    for group in by_dtype.values():
        torch._amp_foreach_non_finite_check_and_unscale_(group, found, inv)


def _scaler_update(device: torch.device) -> None:
    scale, growth = torch.full((1,), GRAD_SCALE, device=device), torch.zeros(1, dtype=torch.int32, device=device)
    torch._amp_update_scale_(scale, growth, torch.zeros(1, device=device), 2.0, 0.5, 2000)


def run_step(module: torch.nn.Module, args: tuple, kwargs: dict, run: CountingRun, setup: TrainSetup,
             label: str, user_loss, library: bool) -> StepRun:
    """One steady-state step under the counting modes (the optimizer state made beforehand, uncounted)."""
    found = StepRun()
    trainable = [p for p in module.parameters() if p.requires_grad]
    optimizer = build_optimizer(setup.optimizer, trainable, run.record)
    prime(optimizer, trainable)
    run.host_data.mark(host_steps(optimizer))
    state = [t for t in state_tensors(optimizer) if t.device.type != "cpu"]
    found.state_bytes = float(sum(t.numel() * itemsize(t) for t in state))
    found.optimizer_tensors = len(trainable)
    memory: MemoryTimeline = run.memory
    with counting_modes(module, run, on_meta=True, label=label, grad=True):
        output = module(*args, **kwargs)
        found.loss = make_loss(output, args, user_loss, label, library)
        loss = found.loss.value * GRAD_SCALE if setup.grad_scaler else found.loss.value
        del output
        found.nodes = autograd_nodes(loss)
        _set_phase(run, Phase.BACKWARD)
        backward(loss)
        del loss
        found.backward_end = memory.clock
        _set_phase(run, Phase.OPTIMIZER)
        if setup.grad_scaler:
            _scaler_unscale([p.grad for p in trainable if p.grad is not None])
        optimizer.step()
        if setup.grad_scaler:
            _scaler_update(trainable[0].device)
    found.peak = memory.peak(found.backward_end)
    optimizer.zero_grad(set_to_none=True)
    return found


def _set_phase(run: CountingRun, phase: Phase) -> None:
    """Count what follows in ``phase``. Leaving the forward leaves autocast's region, which empties its
    cache of cast weights (the backward keeps those it saved)."""
    run.recorder.phase = phase
    run.memory.phase = str(phase)
    if run.autocast is not None:
        run.autocast.clear_cache()


def prepare_step(module: torch.nn.Module, inputs, setup: TrainSetup, strict: bool
                 ) -> tuple[tuple, dict, CountingRun, float]:
    """The module in training mode at the setup's storage precision, its inputs, a counting run whose
    memory is a timeline, and the inputs' bytes."""
    count_as, lower = COUNT_AS[setup.precision]
    args, kwargs, tensors, _on_meta = prepare(module, inputs, "bf16" if count_as == "bf16" else "fp32", train=True)
    input_bytes = float(sum(a.numel() * itemsize(a) for a in flat_tensors((args, kwargs))))
    run = CountingRun("fp32" if lower is not None else count_as, tensors, strict, input_bytes, autocast=lower is not None,
                      autocast_dtype=lower or torch.float16, memory=MemoryTimeline(input_bytes))
    run.training = True
    run.host_data.cpu_is_host = True   # the model is on meta: torch.optim's CPU step counts are host work
    return args, kwargs, run, input_bytes

