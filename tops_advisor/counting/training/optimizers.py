"""The optimizer of a training step, built as PyTorch builds it on a CUDA device, so that its ``step()`` runs
the same kernels on meta tensors: foreach AdamW/Adam/SGD (torch.optim's default on CUDA), fused AdamW
(``torch._fused_adamw_``: one multi-tensor kernel pass), and bitsandbytes' 8-bit AdamW, which is not a
PyTorch operator and is recorded as its one blockwise kernel per tensor (``BNB_ADAMW_8BIT``)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch

from ...errors import InputError

BNB_ADAMW_8BIT = "bnb.optimizer_update_8bit_blockwise"
LR = 1e-4


@contextlib.contextmanager
def _meta_supports_fused() -> Iterator[None]:
    """torch.optim refuses ``fused=True`` off the devices with fused kernels; their kernels have meta
    implementations, so let it build on meta (it checks ``_get_fused_kernels_supported_devices``)."""
    import torch.optim.adam as adam
    import torch.optim.adamw as adamw
    import torch.optim.optimizer as base
    from torch.utils import _foreach_utils as utils

    saved = utils._get_fused_kernels_supported_devices
    patched = lambda: [*saved(), "meta"]  # noqa: E731
    mods = [m for m in (utils, base, adam, adamw) if hasattr(m, "_get_fused_kernels_supported_devices")]
    for m in mods:
        m._get_fused_kernels_supported_devices = patched
    try:
        yield
    finally:
        for m in mods:
            m._get_fused_kernels_supported_devices = saved


class EightBitAdamW:
    """bitsandbytes' AdamW8bit as its kernels run: per parameter one ``optimizer_update_8bit_blockwise``
    reading the parameter, its gradient and two uint8 moments with their fp32 block scales (blocks of 256:
    bitsandbytes/optim/optimizer.py, ``Optimizer8bit``), writing the parameter and the moments."""

    BLOCK = 256

    def __init__(self, params: list[torch.Tensor], record):
        self.params = params
        self.record = record
        self.state: dict[int, tuple[torch.Tensor, ...]] = {}

    def _state(self, p: torch.Tensor) -> tuple[torch.Tensor, ...]:
        if id(p) not in self.state:
            blocks = -(-p.numel() // self.BLOCK)
            self.state[id(p)] = (torch.zeros(p.shape, dtype=torch.uint8, device=p.device),
                                 torch.zeros(p.shape, dtype=torch.uint8, device=p.device),
                                 torch.zeros(blocks, device=p.device), torch.zeros(blocks, device=p.device))
        return self.state[id(p)]

    def step(self) -> None:
        for p in self.params:
            if p.grad is None:
                continue
            m, v, sm, sv = self._state(p)
            self.record(BNB_ADAMW_8BIT, (p, p.grad, m, v, sm, sv), {}, (p, m, v, sm, sv))

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.params:
            p.grad = None

    def state_tensors(self) -> list[torch.Tensor]:
        return [t for s in self.state.values() for t in s]


def build_optimizer(name: str, params: list[torch.Tensor], record):
    """The optimizer ``name`` (train.OPTIMIZERS) over ``params``; ``record`` records a non-PyTorch kernel."""
    if not params:
        raise InputError("nothing to train: every parameter of the model is frozen (requires_grad=False)",
                         hint="unfreeze some parameters, or use --lora to train adapters")
    if name == "adamw":
        return torch.optim.AdamW(params, lr=LR, foreach=True)
    if name == "adam":
        return torch.optim.Adam(params, lr=LR, foreach=True)
    if name == "sgd":
        return torch.optim.SGD(params, lr=LR, momentum=0.9, foreach=True)
    if name == "adamw-fused":
        with _meta_supports_fused():
            return torch.optim.AdamW(params, lr=LR, fused=True)
    if name == "adamw-8bit":
        return EightBitAdamW(params, record)
    raise InputError(f"unknown optimizer {name!r}")


def state_tensors(optimizer) -> list[torch.Tensor]:
    """Every tensor of the optimizer's state (moments, momentum buffers, step counts on the device)."""
    if isinstance(optimizer, EightBitAdamW):
        return optimizer.state_tensors()
    return [t for s in optimizer.state.values() for t in s.values() if isinstance(t, torch.Tensor)]


def host_steps(optimizer) -> list[torch.Tensor]:
    """The step counts torch.optim keeps on the host (not capturable, not fused): updated by the CPU."""
    return [t for t in state_tensors(optimizer) if t.device.type == "cpu"]


def prime(optimizer, params: list[torch.Tensor]) -> None:
    """Create the optimizer state as the first step does (uncounted: the timed steps find it there), with
    zero gradients, then drop the gradients."""
    for p in params:
        p.grad = torch.zeros_like(p)
    if isinstance(optimizer, EightBitAdamW):
        for p in params:
            optimizer._state(p)
    else:
        with _meta_supports_fused():
            optimizer.step()
    optimizer.zero_grad(set_to_none=True)
