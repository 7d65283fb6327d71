"""The memory of a training step as a timeline: every tensor an operator makes is allocated at that operator
and freed when its Python object goes (autograd holds what the backward needs, ``.grad`` holds gradients), so
the live bytes after each operator are known exactly, and the high-water mark can be split by what is alive.

Sizes are rounded as PyTorch's CUDA caching allocator rounds each request (c10/cuda/CUDACachingAllocator.cpp,
``round_size``: a multiple of ``kMinBlockSize`` = 512 bytes); ``torch.cuda.max_memory_allocated`` reports
those rounded sizes."""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np
import torch

from ..memory import ActivationMemory
from ..tensors import itemsize

ALLOCATOR_BLOCK_BYTES = 512   # kMinBlockSize, c10/cuda/CUDACachingAllocator.cpp


def rounded(nbytes: float) -> float:
    """A request as the caching allocator rounds it (at least one 512-byte block)."""
    return float(max(1, -(-int(nbytes) // ALLOCATOR_BLOCK_BYTES)) * ALLOCATOR_BLOCK_BYTES) if nbytes else 0.0


@dataclass(frozen=True)
class Peak:
    """The live bytes at the high-water mark (after operator ``index``), split by what they are: forward
    outputs still held (``activations``), gradients (backward outputs that outlive the backward),
    other backward and optimizer intermediates (``temporaries``); ``rounding`` is the allocator's share."""

    index: int
    phase: str
    activations: float
    gradients: float
    temporaries: float
    rounding: float


class MemoryTimeline(ActivationMemory):
    """ActivationMemory that logs when each allocation is made and freed (at which operator) and in which
    phase. An allocation is an operator output; a view of it (``alias``: ``.grad`` is a detached view of the
    backward's output, a weight gradient a transpose) keeps it alive until every holder is gone."""

    def __init__(self, input_bytes: float = 0.0):
        super().__init__(input_bytes)
        self.clock = 0                          # operators recorded so far
        self.phase = "forward"
        self._made: dict[int, tuple[int, float, str]] = {}   # allocation -> (index made, bytes, phase)
        self._holders: dict[int, int] = {}                   # allocation -> live tensors holding it
        self._of_tensor: dict[int, int] = {}                 # id of a live holder -> its allocation
        self._events: list[tuple[int, int, float, str]] = []  # (index made, index freed, bytes, phase)
        self._phases: list[str] = []            # the phase of each operator logged
        self._next = 0

    def _hold(self, t: torch.Tensor, alloc: int) -> None:
        self._holders[alloc] = self._holders.get(alloc, 0) + 1
        self._of_tensor[id(t)] = alloc
        weakref.finalize(t, self._release, id(t), alloc)

    def track(self, outputs: list[torch.Tensor], inputs: list[torch.Tensor], param_ids: set[int]) -> None:
        for t in outputs:
            key = id(t)
            if key in self._of_tensor or key in param_ids or any(t is i for i in inputs):
                continue
            nbytes = t.numel() * itemsize(t)
            alloc, self._next = self._next, self._next + 1
            self._made[alloc] = (self.clock, nbytes, self.phase)
            self.live_bytes += nbytes
            self._hold(t, alloc)
        self.peak_bytes = max(self.peak_bytes, self.live_bytes)
        self._phases.append(self.phase)
        self.clock += 1

    def alias(self, outputs: list[torch.Tensor], inputs: list[torch.Tensor]) -> None:
        allocs = [self._of_tensor[id(t)] for t in inputs if id(t) in self._of_tensor]
        if not allocs:
            return
        for t in outputs:
            if id(t) not in self._of_tensor:
                self._hold(t, allocs[0])

    def _release(self, key: int, alloc: int) -> None:
        if self._of_tensor.get(key) == alloc:
            del self._of_tensor[key]
        self._holders[alloc] -= 1
        if self._holders[alloc]:
            return
        del self._holders[alloc]
        made = self._made.pop(alloc, None)
        if made is not None:
            self._events.append((made[0], self.clock, made[1], made[2]))
            self.live_bytes -= made[1]

    def peak(self, backward_end: int) -> Peak:
        """The high-water mark over the operators logged so far (tensors still alive count as alive to the
        end). ``backward_end``: the clock when the backward finished; a backward output freed after it is a
        gradient."""
        rows = list(self._events) + [(i, self.clock + 1, b, p) for i, b, p in self._made.values()]
        if not rows:
            return Peak(0, "forward", 0.0, 0.0, 0.0, 0.0)
        made = np.array([r[0] for r in rows])
        freed = np.array([r[1] for r in rows])
        sizes = np.array([r[2] for r in rows], dtype=float)
        phase = np.array([r[3] for r in rows])
        live = np.zeros(self.clock + 2)
        np.add.at(live, made, sizes)
        np.add.at(live, freed, -sizes)
        at = int(np.argmax(np.cumsum(live)))
        alive = (made <= at) & (freed > at)
        grads = alive & (phase == "backward") & (freed > backward_end)
        forward = alive & (phase == "forward")
        at_phase = self._phases[min(at, len(self._phases) - 1)] if self._phases else "forward"
        return Peak(at, at_phase, float(sizes[forward].sum()), float(sizes[grads].sum()),
                    float(sizes[alive & ~forward & ~grads].sum()),
                    float(sum(rounded(s) - s for s in sizes[alive])))
