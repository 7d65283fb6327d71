"""Tensors the forward makes on the host: on the GPU they launch no kernel and are never captured.

A forward that calls a factory with no ``device`` (``torch.rand([])``: wav2vec2, HuBERT and data2vec-audio
draw one per layer for layer drop, in eval too) makes a CPU tensor beside a model on the GPU. Operators whose
tensors all come from such host data run on the CPU. Counted on the meta device they would show as device
kernels (a real CPU tensor), and counted through fake tensors every tensor reads as the CPU, so the tracking is
by provenance: what a device-less factory made, and what operators on only such tensors made from it.
"""

from __future__ import annotations

import weakref

import torch

_FACTORIES = frozenset({
    torch.rand, torch.randn, torch.randint, torch.randperm, torch.arange, torch.zeros, torch.ones, torch.full,
    torch.empty, torch.tensor, torch.as_tensor, torch.linspace, torch.logspace, torch.eye,
})


def moves_to_device(func, args: tuple, kwargs: dict) -> bool:
    """``t.to(device)`` or ``t.cuda()``: the result lives on the device in the real run. Any device counts:
    through fake tensors the model's own device reads as the CPU and ``to`` returns ``t`` itself."""
    if func is torch.Tensor.cuda:
        return True
    if func is not torch.Tensor.to:
        return False
    given = [kwargs.get("device"), *args[1:]]
    return any(isinstance(a, (torch.device, str, torch.Tensor)) for a in given)   # to(other): other's device


def copies_to_device(kwargs: dict) -> bool:
    """The ATen side of a move (``_to_copy(device=...)`` off the CPU): a transfer to the GPU, not a host op."""
    device = kwargs.get("device")
    return device is not None and torch.device(device).type != "cpu"


def makes_host_data(func, args: tuple, kwargs: dict) -> bool:
    """A factory called with no device while no default device is set (the counter sets none)."""
    if func not in _FACTORIES or kwargs.get("device") is not None:
        return False
    if func is torch.as_tensor and (len(args) > 2 or isinstance(args[0] if args else None, torch.Tensor)):
        return False   # as_tensor(tensor) keeps the tensor's device
    return torch.get_default_device().type == "cpu"


class HostData:
    """Ids of the host tensors alive in one counting run."""

    def __init__(self) -> None:
        self._ids: set[int] = set()
        self.making = 0          # inside a device-less factory call: its operators make host data
        self.cpu_is_host = False  # the model is on the meta device: every real CPU tensor is host data

    def mark(self, tensors: list[torch.Tensor]) -> None:
        for t in tensors:
            if id(t) not in self._ids:
                self._ids.add(id(t))
                weakref.finalize(t, self._ids.discard, id(t))

    def unmark(self, tensors: list[torch.Tensor]) -> None:
        for t in tensors:
            self._ids.discard(id(t))

    def holds(self, t) -> bool:
        return isinstance(t, torch.Tensor) and id(t) in self._ids

    def faked_copy(self, args: tuple) -> bool:
        """``to(device)`` of host data counted through fake tensors: a copy from pageable host memory that
        the devices cannot show (every fake tensor reads as the CPU; on the meta device the copy's own
        operator shows it). XLNet moves ``torch.eye(qlen)`` to its mask's device, and failed CUDA-graph
        capture on the H200 in blind round 24."""
        from torch._subclasses.fake_tensor import FakeTensor

        return bool(args) and isinstance(args[0], FakeTensor) and self.holds(args[0])

    def runs_on_host(self, ins: list[torch.Tensor]) -> bool:
        """An operator inside a device-less factory, or whose tensor inputs are all host data (with
        ``cpu_is_host``: a training step counted on the meta device, where torch.optim keeps its step counts in
        CPU tensors and updates them on the CPU)."""
        if self.making or not ins:
            return bool(self.making)
        return all(id(t) in self._ids or (self.cpu_is_host and t.device.type == "cpu") for t in ins)
