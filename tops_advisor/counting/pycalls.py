"""Python function calls a forward pass makes beside its operators and module calls (eager host work).

Library models run Python that is neither an ATen operator nor an ``nn.Module`` call: attention-mask helpers,
output dataclasses, decorators that record outputs, config lookups. Each such call costs host time in eager
mode. While the counter runs the forward on fake or meta tensors, a profile hook counts every Python function
entered, except:

- calls made while an operator is being dispatched (meta kernels, fake-tensor and decomposition code that a
  CUDA run never executes): ``depth`` is raised by the counter's dispatch mode;
- functions defined in torch itself, or called from torch or the counter (a module's ``forward``, which
  ``nn.Module.__call__`` calls, is costed as the module call; the counter's bookkeeping is not the model's);
- functions defined in torch itself (its functional wrappers and Tensor methods are costed per operator,
  ``nn.Module.__call__`` per module call, ``Workload.module_calls``; and with the counter's torch-function
  mode active, torch enters each Python wrapper twice), and the counter's own code.

Python 3.12 inlines comprehensions (PEP 709), 3.11 counts them as calls: counts differ by a few percent.
"""

from __future__ import annotations

import os
import sys
import weakref
from pathlib import Path

import torch

# torch's own Python (functional wrappers, Tensor methods, module call machinery, and the modes the counter
# uses) is costed per operator and per module call; the counter's own code is not the model's.
# Also never the model's: first-use imports, and weak-reference finalizers the counter's fake tensors fire.
_IMPORT = "<frozen importlib"
_STDLIB = (str(Path(os.__file__).parent), "<")
_SKIP = (str(Path(torch.__file__).parent), str(Path(__file__).resolve().parents[1]), weakref.__file__)


class PythonCalls:
    """Context manager: counts Python function calls on this thread in ``calls``, skipping those above."""

    def __init__(self) -> None:
        self.calls = 0
        self.depth = 0          # > 0 while an operator is being dispatched
        self.importing = 0      # > 0 while a module is being imported
        self._previous = None

    def _profile(self, frame, event: str, _arg) -> None:
        name = frame.f_code.co_filename
        if name.startswith(_IMPORT):  # a first-use import runs module code once, not every forward
            self.importing += {"call": 1, "return": -1}.get(event, 0)
            return
        if event != "call" or self.depth or self.importing or name.startswith(_SKIP):
            return
        if not _owner(frame).startswith(_SKIP):
            self.calls += 1


    def __enter__(self) -> PythonCalls:
        self._previous = sys.getprofile()
        sys.setprofile(self._profile)
        return self

    def __exit__(self, *exc) -> None:
        sys.setprofile(self._previous)



def _owner(frame) -> str:
    """The file of the nearest caller outside the standard library (generated code, '<string>', included):
    whose code asked for this call."""
    caller = frame.f_back
    while caller is not None and caller.f_code.co_filename.startswith(_STDLIB):
        caller = caller.f_back
    return caller.f_code.co_filename if caller is not None else ""
