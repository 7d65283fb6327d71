"""Per-operator cost formulas: one registry, keyed by ATen operator name, in the style of fvcore's handles.

Every handle is a pure function of shapes: it gets an :class:`OpCall` (the operator's arguments with each
tensor replaced by a :class:`TensorInfo`) and returns a :class:`Cost`. Handles for whole families
(elementwise, norms, reductions, pooling) come from small factories. A training step's backward and optimizer
operators have theirs too (``backward.py``, ``backward_vector.py``, ``optimizer.py``); a handle may answer one
cost per kernel shape of a call (a convolution's data and weight gradients), each recorded on its own. Views and no-ops are registered
explicitly, by name, as costing nothing (:data:`ZERO_COST`); an operator in neither table is *unsupported*
and the counter reports it (never silently zero).

Conventions (see docs/counting.md):
- ``flops`` are operations: one multiply-add = 2 (fvcore and many papers count a multiply-add as one).
  Vector operators take their operations per element from ``tops_advisor.opcosts``, the table the LLM
  builder reads too.
- Bytes are the minimal traffic: every tensor input read once (an expanded tensor counts its distinct
  elements only) and every output written once, at the element size in use. A handle overrides this
  where an operator provably touches less (embedding rows, gathers) or more.
- ``kernels`` is how many GPU kernels the operator usually launches in eager PyTorch on a CUDA GPU.
"""

from . import backward, backward_vector, optimizer, products, vector  # noqa: F401  (importing them registers)
from .products import experts_hit
from .registry import HANDLES, ZERO_COST, Cost, Handle, OpCall, TensorInfo, int_tuple, lookup, register

__all__ = ["HANDLES", "ZERO_COST", "Cost", "Handle", "OpCall", "TensorInfo", "experts_hit", "int_tuple", "lookup",
           "register"]
