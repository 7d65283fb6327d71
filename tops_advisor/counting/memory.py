"""Activation memory of one counting run: the bytes of operator outputs alive at once, and their peak."""

from __future__ import annotations

import weakref

import torch

from .tensors import itemsize


class ActivationMemory:
    """A new operator output is alive until its Python object is freed; ``peak_bytes`` is the most alive at
    once, the inputs (``input_bytes``) included."""

    def __init__(self, input_bytes: float = 0.0):
        self.live_bytes = input_bytes
        self.peak_bytes = input_bytes
        self._tracked: set[int] = set()

    def track(self, outputs: list[torch.Tensor], inputs: list[torch.Tensor], param_ids: set[int]) -> None:
        """Count the outputs of one call that are new tensors (not an input, not a weight)."""
        for t in outputs:
            key = id(t)
            if key in self._tracked or key in param_ids or any(t is i for i in inputs):
                continue
            nbytes = t.numel() * itemsize(t)
            self._tracked.add(key)
            self.live_bytes += nbytes
            weakref.finalize(t, self._free, key, nbytes)
        self.peak_bytes = max(self.peak_bytes, self.live_bytes)

    def alias(self, outputs: list[torch.Tensor], inputs: list[torch.Tensor]) -> None:
        """A view's outputs share their input's memory; here they do not keep it alive (a training step's
        timeline does: ``counting.training.timeline``)."""

    def _free(self, key: int, nbytes: float) -> None:
        self._tracked.discard(key)
        self.live_bytes -= nbytes
