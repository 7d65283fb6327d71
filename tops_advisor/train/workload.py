"""A counted training step: its operators (each with its phase: forward, backward, optimizer), what it
trains, and the memory it holds at its high-water mark, in parts."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from functools import cached_property

import numpy as np

from ..kinds import Phase
from ..workload import Workload
from .setup import TrainSetup

# The parts of a step, in order; ``TrainingWorkload.phase_index`` indexes this.
PHASES = (Phase.FORWARD, Phase.BACKWARD, Phase.OPTIMIZER)

# What the memory model leaves out (said with every training memory figure).
NOT_MODELLED = ("allocator fragmentation and cached-but-free blocks (torch.cuda.memory_reserved above "
                "max_memory_allocated)", "cuDNN and cuBLAS workspaces beyond the runtime reserve",
                "the CUDA context")


@dataclass(frozen=True)
class MemoryParts:
    """Bytes alive on the device at the step's high-water mark, by what they are (steady state: the optimizer
    state already exists; gradients are freed by ``zero_grad(set_to_none=True)`` before the forward)."""

    weights: float               # parameters and buffers
    gradients: float             # the gradients produced by the time of the peak
    optimizer_state: float       # moments, momentum buffers (created on the first step)
    activations: float           # forward outputs still held for the backward at the peak
    temporaries: float           # backward intermediates alive at the peak (other than gradients)
    inputs: float                # the batch (and labels)
    rounding: float = 0.0        # the caching allocator's rounding of every block up to 512 bytes
    all_gradients: float = 0.0   # every gradient of the step (alive at the peak or not): what DDP all-reduces
    peak_op: int = 0             # index of the operator at which the peak happens
    peak_phase: Phase = Phase.FORWARD

    @property
    def peak_bytes(self) -> float:
        return (self.weights + self.gradients + self.optimizer_state + self.activations + self.temporaries
                + self.inputs + self.rounding)

    def model_dump(self) -> dict:
        d = asdict(self)
        d.pop("all_gradients")
        d["peak_phase"] = str(self.peak_phase)
        d["peak_bytes"] = self.peak_bytes
        return d


@dataclass(frozen=True)
class TrainingWorkload:
    """One optimizer step of a model at one batch: the operators of forward, loss, backward and optimizer
    in execution order (``OpRecord.phase``), hardware-independent."""

    workload: Workload                 # every operator of the step; batch, dtype (the compute precision)
    setup: TrainSetup
    memory: MemoryParts
    trainable_params: int
    frozen_params: int
    loss: str                          # what the loss is ("cross-entropy over 1000 classes", ...)
    autograd_nodes: int = 0            # backward nodes the autograd engine runs (host work in eager mode)
    optimizer_tensors: int = 0         # parameters the optimizer updates (host work per tensor in eager mode)
    host_syncs: int = 0                # points where the host waits for the device (GradScaler's found-inf)
    sync_op: int = -1                  # index of the first operator after the host sync (-1: none)
    tokens: int = 0                    # tokens per step, for language models (0: not a sequence model)
    recomputed_ops: int = 0            # operators gradient checkpointing runs again in the backward (launching)
    recompute: frozenset[int] | None = None   # indices of those operators (all of them); None: the backward
                                              # operators with a module path, as the counter records them

    @property
    def name(self) -> str:
        return self.workload.name

    @property
    def batch(self) -> int:
        return self.workload.batch

    @cached_property
    def phase_index(self) -> np.ndarray:
        """Each operator's part of the step, as an index into PHASES (made once: every device reads it)."""
        return np.array([PHASES.index(op.phase) for op in self.workload.ops], dtype=int)

    @cached_property
    def in_module(self) -> np.ndarray:
        """Operators issued inside a module's forward: the forward's, and checkpointing's recompute in the
        backward (the autograd engine's own operators run outside every module). The LLM builder names
        the recompute (``recompute``); a counted step's engine operators carry no module path."""
        ops = self.workload.ops
        if self.recompute is not None:
            return np.array([op.phase == Phase.FORWARD or i in self.recompute for i, op in enumerate(ops)],
                            dtype=bool)
        return np.array([bool(op.module) for op in ops], dtype=bool)

    @cached_property
    def _flops_by_phase(self) -> dict[Phase, float]:
        flops = np.array([op.flops for op in self.workload.ops], dtype=float)
        return {p: float(flops[self.phase_index == i].sum()) for i, p in enumerate(PHASES)}

    def phase_flops(self, phase: Phase) -> float:
        return self._flops_by_phase[Phase(phase)]

    @property
    def model_flops(self) -> float:
        """Operations of forward and backward (the numerator of MFU; the optimizer's are not model work)."""
        return self.phase_flops(Phase.FORWARD) + self.phase_flops(Phase.BACKWARD)

    def model_dump(self) -> dict:
        return {
            "name": self.name, "batch": self.batch, "setup": asdict(self.setup), "loss": self.loss,
            "trainable_params": self.trainable_params, "frozen_params": self.frozen_params,
            "flops": {str(p): self.phase_flops(p) for p in Phase}, "memory": self.memory.model_dump(),
            "memory_not_modelled": list(NOT_MODELLED), "autograd_nodes": self.autograd_nodes,
            "optimizer_tensors": self.optimizer_tensors, "host_syncs": self.host_syncs, "tokens": self.tokens,
            "workload": self.workload.model_dump(),
        }
