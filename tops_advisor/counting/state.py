"""Everything one counting run holds, in named parts: the records, the tensors' roles, the activation memory,
the dataflow, the module paths, the host-side tracking and the findings the notes report."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from ..kinds import Phase
from .amp import Autocast
from .autocast_regions import AutocastRegions
from .dataflow import FlowTracker
from .host.data import HostData
from .host.reads import HostReads
from .memory import ActivationMemory
from .module_paths import ModuleStack
from .notes import Findings
from .pycalls import PythonCalls
from .recording import Recorder
from .tensors import TensorRoles


class CountingRun:
    """One pass being counted at ``dtype`` (``autocast``: autocast's casts to ``autocast_dtype``, ``amp.py``;
    ``memory``: what tracks the live bytes, ``ActivationMemory`` unless given)."""

    def __init__(self, dtype: str, param_tensors: Sequence[torch.Tensor], strict: bool = False,
                 input_bytes: float = 0.0, autocast: bool = False, autocast_dtype: torch.dtype = torch.float16,
                 memory: ActivationMemory | None = None):
        self.modules = ModuleStack(lambda: len(self.recorder.records))
        self.tensors = TensorRoles(param_tensors)
        self.memory = memory if memory is not None else ActivationMemory(input_bytes)
        self.flow = FlowTracker()                    # dataflow, for the inductor lowering
        self.found = Findings()                      # what the notes report
        self.recorder = Recorder(dtype, self.tensors, self.memory, self.flow, self.found, self._module_path)
        self.host = HostReads(strict, self._module_path)
        self.host_data = HostData()                  # tensors the forward makes on the host, no kernels
        self.python = PythonCalls()                  # other Python calls (host work in eager mode)
        self.autocast = Autocast(self.recorder.record, autocast_dtype) if autocast else None
        self.regions = AutocastRegions()             # the model's own torch.autocast regions
        self.suppress = 0                            # > 0: calls made inside one counted whole
        self.training = False                        # a training step: autocast casts at the torch functions

    def _module_path(self) -> str:
        return self.modules.path

    def casting(self) -> bool:
        """--dtype amp casts here: not while counting is suppressed, inside a region the model's own code
        runs with autocast disabled (``torch.autocast(..., enabled=False)``), or in a training step's backward
        and optimizer (``_forward_running``)."""
        return (self.autocast is not None and not self.suppress and not self.regions.disabled
                and self._forward_running() and not self.training)

    def casting_functions(self) -> bool:
        """A training step's autocast casts, made at the torch functions (above autograd)."""
        return (self.training and self.autocast is not None and not self.suppress and not self.regions.disabled
                and self._forward_running())

    def _forward_running(self) -> bool:
        """Autocast is off in the backward and the optimizer, except where the backward runs a module's forward
        again (checkpointing's recompute restores the autocast state it saw)."""
        phase = self.recorder.phase
        return phase == Phase.FORWARD or (phase == Phase.BACKWARD and self.modules.depth > 0)

    def weight_key(self, t: torch.Tensor) -> int | None:
        """The value behind a parameter (or a view of one), None for an activation: autocast's cache key."""
        return self.flow.value_id(t) if self.tensors.is_param(t) else None

    def record(self, name: str, args: tuple, kwargs: dict, out) -> None:
        """Record one operator call (``Recorder.record``)."""
        self.recorder.record(name, args, kwargs, out)
