"""What one counting run knows about its tensors: which are weights and which are attention outputs (by id,
with ids kept stable while counting), and each tensor as a handle sees it (:class:`handles.TensorInfo`)."""

from __future__ import annotations

import math
import weakref
from collections.abc import Sequence

import torch
from torch.utils._pytree import tree_flatten

from .handles import TensorInfo


def flat_tensors(tree) -> list[torch.Tensor]:
    """The tensors in a nest of arguments or outputs, in order."""
    return [t for t in tree_flatten(tree)[0] if isinstance(t, torch.Tensor)]


def itemsize(t: torch.Tensor) -> float:
    """Bytes per element."""
    return float(t.element_size())


class TensorRoles:
    """Ids of the model's weights (and views of them) and of attention outputs and their heads/sequence
    transposes, for one run."""

    def __init__(self, param_tensors: Sequence[torch.Tensor]):
        self._keep = list(param_tensors)          # keeps ids stable while counting
        self.param_ids = {id(t) for t in self._keep}
        self.attention_outputs: set[int] = set()     # SDPA outputs ...
        self.attention_transposed: set[int] = set()  # ... and their transpose(1, 2) views

    def hold(self, tensors: list[torch.Tensor], ids: set[int], keep: bool = True) -> None:
        """Remember tensors by id: kept alive (``keep``), or forgotten when freed, so no id is reused."""
        for t in tensors:
            ids.add(id(t))
            if keep:
                self._keep.append(t)
            else:
                weakref.finalize(t, ids.discard, id(t))

    def is_param(self, t: torch.Tensor) -> bool:
        return id(t) in self.param_ids

    def info(self, t: torch.Tensor) -> TensorInfo:
        """The tensor as a handle sees it: shape, bytes per element, whether a weight, distinct elements when
        a dimension is broadcast (stride 0)."""
        shape = tuple(int(s) for s in t.shape)
        unique = None
        try:
            stride = t.stride()
            if 0 in stride:
                unique = math.prod(s for s, st in zip(shape, stride, strict=True) if st != 0)
        except (RuntimeError, NotImplementedError):  # sparse or nested tensors have no strides
            pass
        return TensorInfo(shape, itemsize(t), self.is_param(t), unique)
