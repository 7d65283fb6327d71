"""Python function calls a forward pass makes beside its operators and module calls (eager host work).

Library models run Python that is neither an ATen operator nor an ``nn.Module`` call: attention-mask helpers,
output dataclasses, decorators that record outputs, config lookups. Each such call costs host time in eager
mode. While the counter runs the forward on fake or meta tensors, a trace hook counts the Python calls that
the model's own code (the library's or the model file's) makes directly, except:

- calls made while an operator is being dispatched (meta kernels, fake-tensor and decomposition code that a
  CUDA run never executes): ``depth`` is raised by the counter's dispatch mode;
- calls into torch (its functional wrappers and Tensor methods are costed per operator, ``nn.Module.__call__``
  per module call, ``Workload.module_calls``) and the counter's own code;
- calls made by torch, the standard library or the counter (a module's ``forward``, called by
  ``nn.Module.__call__``, is the module call; a ``copy.deepcopy`` counts once, not once per object it copies);
- generator resumptions (a generator expression is one call, not one per item), and first-use imports.

Python 3.12 inlines comprehensions (PEP 709), 3.11 counts them as calls: counts differ by a few percent.
"""

from __future__ import annotations

import inspect
import os
import sys
import weakref
from pathlib import Path

import torch

# torch's own Python (functional wrappers, Tensor methods, module call machinery, and the modes the counter
# uses) is costed per operator and per module call; the counter's own code is not the model's.
# Also never the model's: first-use imports, and weak-reference finalizers the counter's fake tensors fire.
_IMPORT = "<frozen importlib"
_RESUMABLE = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR
_STDLIB = (str(Path(os.__file__).parent), "<")
_SKIP = (str(Path(torch.__file__).parent), str(Path(__file__).resolve().parents[1]), weakref.__file__)


class PythonCalls:
    """Context manager: counts Python function calls on this thread in ``calls``, skipping those above."""

    def __init__(self) -> None:
        self.calls = 0
        self.depth = 0          # > 0 while an operator is being dispatched
        self.importing = 0      # > 0 while a module is being imported
        self._previous = None

    def _trace(self, frame, event: str, _arg):
        """The global trace function: called on each Python call only (no C calls, and no line events, as it
        returns no local tracer), which keeps counting fast."""
        name = frame.f_code.co_filename
        if name.startswith(_IMPORT):  # a first-use import runs module code once, not every forward
            self.importing += 1
            return self._import_returns
        if self.depth or self.importing or name.startswith(_SKIP):
            return None
        if frame.f_code.co_flags & _RESUMABLE:  # a generator is "called" again at every item it yields
            return None
        caller = frame.f_back
        if caller is not None and not caller.f_code.co_filename.startswith(_SKIP + _STDLIB):
            self.calls += 1
        return None

    def _import_returns(self, _frame, event: str, _arg):
        if event == "return":
            self.importing -= 1
        return self._import_returns

    def __enter__(self) -> PythonCalls:
        self._previous = sys.gettrace()
        sys.settrace(self._trace)
        return self

    def __exit__(self, *exc) -> None:
        sys.settrace(self._previous)
