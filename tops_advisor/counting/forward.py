"""Run one forward pass of a module under the counting modes: inputs cast to the counting precision, fake
tensors unless the whole model is on the meta device, no gradients, and every patch (module paths, capture
state, autocast regions, Python call tracing) in place for exactly that pass."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

import torch

from ..errors import ForwardFailed, TopsAdvisorError, one_line
from .capture import capture_state
from .dispatch import FunctionCounter, OperatorCounter
from .precision import TORCH_DTYPE
from .state import CountingRun
from .tensors import flat_tensors


def _cast_input(a, compute: torch.dtype, on_meta: bool):
    """An input at the counting dtype, on the meta device with a meta model; a meta input of a real model
    becomes an uninitialised CPU tensor (fake tensors are made from it; torch 2.14's fake mode refuses a meta
    input beside CPU weights)."""
    if isinstance(a, torch.Tensor):
        if a.is_floating_point():
            a = a.to(compute)
        if on_meta and not a.is_meta:
            a = a.to("meta")
        elif not on_meta and a.is_meta:
            a = torch.empty(a.shape, dtype=a.dtype)
    return a


def prepare(module: torch.nn.Module, inputs, dtype: str, train: bool = False
            ) -> tuple[tuple, dict, list[torch.Tensor], bool]:
    """Put the module in eval mode (``train``: training mode) at ``dtype`` (in place) and cast the inputs to match: (positional inputs,
    keyword inputs (``inputs`` given as a dict), the module's parameters and buffers, whether they are all on
    the meta device)."""
    compute = TORCH_DTYPE[dtype]
    module.train(train)
    module.to(compute)
    tensors = list(module.parameters()) + list(module.buffers())
    on_meta = all(t.is_meta for t in tensors)
    if isinstance(inputs, dict):
        return (), {k: _cast_input(v, compute, on_meta) for k, v in inputs.items()}, tensors, on_meta
    items = inputs if isinstance(inputs, (tuple, list)) else (inputs,)
    return tuple(_cast_input(a, compute, on_meta) for a in items), {}, tensors, on_meta


def leading_batch(args) -> int:
    """The first dimension of the first input with one (1 when none has)."""
    first = next((a for a in flat_tensors(args) if a.dim() > 0), None)
    return int(first.shape[0]) if first is not None else 1


@contextlib.contextmanager
def counting_modes(module: torch.nn.Module, run: CountingRun, on_meta: bool, label: str, captured: bool = False,
                   grad: bool = False) -> Iterator:
    """The counting modes around whatever runs inside (fake tensors unless the model is on the meta device;
    autograd on only when ``grad``), as it runs under CUDA-graph capture when ``captured`` (``capture.py``).
    Yields the capture probe (``.asked``: whether the forward asked). A failure of the model's own code
    becomes ForwardFailed, in one line."""
    hooks = run.modules.hooks(module)
    fake = None
    if not on_meta:
        from torch._subclasses.fake_tensor import FakeTensorMode

        fake = FakeTensorMode(allow_non_fake_inputs=True)
    # torch 2.14 logs "failed while attempting to run meta for ..." before raising; the error is ours to say
    fake_log = logging.getLogger("torch._subclasses.fake_tensor")
    log_level = fake_log.level
    fake_log.setLevel(logging.CRITICAL)
    try:
        with torch.set_grad_enabled(grad):
            if fake is not None:
                fake.__enter__()
            try:
                with (capture_state(captured) as probe, OperatorCounter(run), FunctionCounter(run),
                      run.python, run.regions.patched()):
                    yield probe
            finally:
                if fake is not None:
                    fake.__exit__(None, None, None)
    except TopsAdvisorError:
        raise
    except Exception as exc:  # the model's own code failed: say where, in one line
        detail = one_line(exc)
        raise ForwardFailed(f"{label}: the forward pass failed: {detail}", detail) from exc
    finally:
        fake_log.setLevel(log_level)
        for h in hooks:
            h.remove()


def run_forward(module: torch.nn.Module, args: tuple, kwargs: dict, run: CountingRun, on_meta: bool,
                label: str, captured: bool = False) -> bool:
    """One forward pass under the counting modes, without autograd (``counting_modes``). Returns whether the
    forward asked whether it was captured."""
    with counting_modes(module, run, on_meta, label, captured) as probe:
        module(*args, **kwargs)
    return probe.asked
