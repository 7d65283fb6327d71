"""The registry of per-operator cost formulas and the types a formula reads and returns.

A handle is a pure function of shapes: it gets an :class:`OpCall` (the operator's arguments with each tensor
replaced by a :class:`TensorInfo`) and returns a :class:`Cost`, or a tuple of them when one call runs kernels of
different shapes (a convolution's backward: the data and the weight gradient), each recorded on its own. :func:`register` files it under ATen operator
names and refuses a name that already has one; views and no-ops are listed by name as costing nothing
(:data:`ZERO_COST`). The formulas themselves live beside this module (``products.py``, ``vector.py``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from ...errors import CountingError
from ...kinds import OpKind
from ...workload import GemmShape


@dataclass(frozen=True)
class TensorInfo:
    """What a handle may know about a tensor: its shape, bytes per element and whether it is a parameter."""

    shape: tuple[int, ...]
    itemsize: float = 4.0
    is_param: bool = False           # a parameter or buffer of the model (or a view of one)
    unique_numel: int | None = None  # distinct elements, when dimensions are expanded (stride 0)

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> float:
        n = self.numel if self.unique_numel is None else self.unique_numel
        return n * self.itemsize


@dataclass(frozen=True)
class OpCall:
    """One operator call as a handle sees it: tensors replaced by TensorInfo, other arguments as given."""

    name: str
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    inputs: tuple[TensorInfo, ...] = ()   # every tensor argument, flattened, in order
    outputs: tuple[TensorInfo, ...] = ()  # every tensor output, flattened

    def arg(self, index: int, name: str, default=None):
        """Argument by position, else by keyword, else ``default``."""
        if index < len(self.args):
            return self.args[index]
        return self.kwargs.get(name, default)

    @property
    def out(self) -> TensorInfo:
        return self.outputs[0]


@dataclass(frozen=True)
class Cost:
    """A handle's answer. ``None`` bytes mean the default minimal traffic (inputs read, outputs written)."""

    kind: OpKind
    flops: float = 0.0
    bytes_read: float | None = None
    bytes_written: float | None = None
    param_bytes: float | None = None  # None: the bytes of the parameter inputs
    kernels: int = 1
    gemm: GemmShape | None = None
    family: str = ""                  # ``OpRecord.family`` when the handle knows it (a backward convolution's
                                      # part: ``workload.CONV_DGRAD_FAMILY``); "" lets the counter decide


# A handle's answer: one Cost, or one Cost per part of a call whose kernels differ in shape (the counter records
# each part as its own OpRecord; the first carries the call's host dispatch, the rest are ``internal``).
Handle = Callable[[OpCall], Cost | tuple[Cost, ...]]

HANDLES: dict[str, Handle] = {}


def register(*names: str) -> Callable[[Handle], Handle]:
    """Decorator: register a handle under one or more ATen operator names ("aten.mm"). A name that already has
    a handle, or that is a view costing nothing (:data:`ZERO_COST`), is refused with a CountingError: one
    formula per operator, never a silent overwrite."""

    def deco(fn: Handle) -> Handle:
        for name in names:
            if name in HANDLES or name in ZERO_COST:
                held = "a view costing nothing (ZERO_COST)" if name in ZERO_COST else \
                    f"{HANDLES[name].__module__}.{HANDLES[name].__qualname__}"
                raise CountingError(f"a counting formula for {name} is already registered: {held}",
                                    hint="remove one of the two registrations")
        for name in names:
            HANDLES[name] = fn
        return fn

    return deco


def with_inplace(*names: str) -> list[str]:
    """ATen names of operators and their in-place forms: ``with_inplace("relu")`` is aten.relu and aten.relu_."""
    return [n for name in names for n in (f"aten.{name}", f"aten.{name}_")]


# --------------------------------------------------------------------------------------------------------
# Views and no-ops: zero operations, zero bytes, zero kernels. On purpose and by name.
ZERO_COST: frozenset[str] = frozenset(f"aten.{n}" for n in (
    "view", "_unsafe_view", "reshape", "_reshape_alias", "view_as", "t", "t_", "transpose", "transpose_",
    "permute", "expand", "expand_as", "squeeze", "squeeze_", "unsqueeze", "unsqueeze_", "slice", "select",
    "narrow", "as_strided", "as_strided_", "alias", "detach", "detach_", "split", "split_with_sizes", "unbind",
    "unsafe_split", "unsafe_split_with_sizes", "unsafe_chunk",  # views autograd does not track (LSTM cells)
    "chunk", "tensor_split", "unflatten", "flatten", "diagonal", "movedim", "unfold", "view_as_real",
    "view_as_complex", "real", "imag", "conj", "resolve_conj", "resolve_neg", "lift_fresh", "lift_fresh_copy",
    "empty", "empty_like", "empty_strided", "empty_permuted", "new_empty", "new_empty_strided", "resize_",
    "set_", "sym_size", "sym_stride", "sym_numel", "sym_storage_offset", "is_same_size", "_local_scalar_dense",
    "item", "_assert_async", "_assert_tensor_metadata", "_assert_scalar", "_functional_assert_async",
    "is_nonzero", "_has_compatible_shallow_copy_type", "_unsafe_index_put_",
)) | frozenset({"prim.device", "prim.layout",
                # the profiler's named ranges (``Optimizer.step#AdamW.step``, ``record_function``): host
                # bookkeeping, no kernel
                "profiler._record_function_enter", "profiler._record_function_enter_new",
                "profiler._record_function_exit"})


def expand(value, dims: int) -> tuple[int, ...]:
    """A kernel-size argument as one entry per spatial dimension (an int, or a list of one or ``dims``)."""
    if isinstance(value, int):
        return (value,) * dims
    value = tuple(value)
    return value * dims if len(value) == 1 else value


def int_tuple(value) -> tuple:
    """A stride or dilation argument as a tuple (an int or a list of ints)."""
    return tuple(int(v) for v in value) if isinstance(value, (list, tuple)) else (int(value),)


def lookup(name: str) -> Handle | None:
    """The handle for an operator name ("aten.mm"), or None when there is none."""
    return HANDLES.get(name)
