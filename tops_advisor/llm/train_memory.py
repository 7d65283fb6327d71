"""The memory of a training step built from a config, as a timeline: every tensor the step makes is allocated
at the operator that makes it and freed after the last operator that needs it, so the live bytes after each
operator are known and the high-water mark splits into what is alive (``train.MemoryParts``).

What is alive besides the weights, the optimizer state and the batch: forward outputs that autograd saved for
the backward (``activations``; the logits until the loss has read them), gradients of the parameters as the
backward produces them (``gradients``), and everything else the backward or the optimizer makes
(``temporaries``: activation gradients, a checkpointed layer's recompute, foreach Adam's sqrt(v) list). Each
allocation is rounded as PyTorch's caching allocator rounds it (``rounding``: a multiple of 512 bytes,
counting/training/timeline.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..kinds import Phase
from ..train import MemoryParts

PARTS = ("activations", "gradients", "temporaries")
ALLOCATOR_BLOCK_BYTES = 512   # kMinBlockSize, c10/cuda/CUDACachingAllocator.cpp


def rounded(nbytes: float) -> float:
    """A request as the caching allocator rounds it (at least one 512-byte block)."""
    return float(max(1, -(-int(nbytes) // ALLOCATOR_BLOCK_BYTES)) * ALLOCATOR_BLOCK_BYTES) if nbytes else 0.0


@dataclass
class Live:
    """The bytes alive during one step, by part, and its high-water mark so far."""

    weights: float
    optimizer_state: float
    inputs: float
    all_gradients: float = 0.0      # every parameter gradient of the step (what DDP all-reduces)
    parts: dict[str, float] = field(default_factory=lambda: dict.fromkeys(PARTS, 0.0))
    rounding: float = 0.0
    peak: MemoryParts | None = None

    def alloc(self, part: str, nbytes: float) -> None:
        if nbytes > 0:
            self.parts[part] += nbytes
            self.rounding += rounded(nbytes) - nbytes

    def free(self, part: str, nbytes: float) -> None:
        if nbytes > 0:
            self.parts[part] -= nbytes
            self.rounding -= rounded(nbytes) - nbytes

    @property
    def total(self) -> float:
        return sum(self.parts.values()) + self.rounding

    def mark(self, op_index: int, phase: Phase) -> None:
        """The live bytes after operator ``op_index``: a new high-water mark replaces the old one."""
        if self.peak is None or self.total + 1e-6 > self._peak_total:
            self.peak = MemoryParts(weights=self.weights, gradients=self.parts["gradients"],
                                    optimizer_state=self.optimizer_state,
                                    activations=self.parts["activations"],
                                    temporaries=self.parts["temporaries"], inputs=self.inputs,
                                    rounding=self.rounding, all_gradients=self.all_gradients,
                                    peak_op=op_index, peak_phase=phase)

    @property
    def _peak_total(self) -> float:
        p = self.peak
        return p.activations + p.gradients + p.temporaries + p.rounding if p else 0.0


class Saved:
    """Tensors autograd holds for the backward, each by a key (a tensor's name when several operators save
    the same tensor): alive from the first ``keep`` to the ``release`` of its last holder."""

    def __init__(self, live: Live):
        self.live = live
        self._bytes: dict[str, float] = {}
        self._holders: dict[str, int] = {}
        self._part: dict[str, str] = {}

    def keep(self, key: str, nbytes: float, part: str = "activations") -> None:
        if key not in self._holders:
            self._bytes[key], self._holders[key], self._part[key] = nbytes, 0, part
            self.live.alloc(part, nbytes)
        self._holders[key] += 1

    def release(self, key: str) -> None:
        if key not in self._holders:
            return
        self._holders[key] -= 1
        if not self._holders[key]:
            self.live.free(self._part[key], self._bytes.pop(key))
            del self._holders[key], self._part[key]

    def alive(self, key: str) -> bool:
        return key in self._holders
