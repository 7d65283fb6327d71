"""Count a PyTorch model's operations and bytes per operator (imports torch).

``count(path, batch, dtype)`` for a model file, ``count_module(module, inputs, dtype)`` for a module in hand;
both return a hardware-independent :class:`tops_advisor.workload.Workload`.
"""

from .counter import COUNT_DTYPES, UnsupportedOpWarning, count, count_module
from .handles import HANDLES, ZERO_COST, Cost, OpCall, TensorInfo, register
from .model_file import ModelFile, load_model_file

__all__ = ["COUNT_DTYPES", "HANDLES", "ZERO_COST", "Cost", "ModelFile", "OpCall", "TensorInfo",
           "UnsupportedOpWarning", "count", "count_module", "load_model_file", "register"]
