"""Copies from pageable host memory to the device in a forward: CUDA-graph capture fails on each.

A capture refuses "Cannot copy between CPU and CUDA tensors during CUDA graph capture unless the CPU tensor is
pinned". A forward makes such a copy when it moves a CPU tensor to the device, builds a device tensor from
Python data (``torch.tensor(0.0, device=d)``), or indexes a device tensor with Python data or a CPU tensor
(the index is copied over first). Counted on the meta device a model stands for one on the GPU, so these
show as operators or calls with a CPU source and a meta result; through fake tensors every device reads as
the CPU and none is seen. The counter notes them on the workload (``notes.CPU_COPY_NOTE``).
"""

from __future__ import annotations

import numpy as np
import torch

_DEVICE_COPIES = frozenset({"aten._to_copy", "aten.copy_", "aten._copy_from"})
_INDEXING = frozenset({"aten.index", "aten.index_put", "aten.index_put_", "aten._index_put_impl_"})
_PYTHON_DATA_FACTORIES = (torch.tensor, torch.as_tensor)
_ITEM_ACCESS = (torch.Tensor.__getitem__, torch.Tensor.__setitem__)


def _on_device(t) -> bool:
    return isinstance(t, torch.Tensor) and t.device.type != "cpu"


def _on_cpu(t) -> bool:
    return isinstance(t, torch.Tensor) and t.device.type == "cpu"


def copies_host_data(name: str, args: tuple, out) -> bool:
    """An ATen operator that copies a CPU tensor to the device: a copy whose source is on the CPU and whose
    result is not (the source is ``copy_``'s second argument, the first of ``_to_copy`` and ``_copy_from``),
    or indexing of a device tensor with CPU index tensors (CSATv2's DCT stem indexes with a CPU tensor and
    failed capture on the H200 in blind round 23)."""
    if name in _DEVICE_COPIES:
        source = args[1] if name == "aten.copy_" else args[0]
        return _on_cpu(source) and _on_device(out)
    if name in _INDEXING and len(args) > 1 and _on_device(args[0]):
        return any(_on_cpu(i) and i.dim() > 0 for i in args[1] if i is not None)
    return False


def copies_python_data(func, args: tuple, kwargs: dict) -> bool:
    """A torch call that copies Python data to the device: ``torch.tensor(data, device=d)`` (or ``as_tensor``)
    off the CPU, or a device tensor indexed with a list or a NumPy array (``x[:, :, perm]`` with ``perm`` a
    list: CSATv2's zigzag permutation). Transformers' ``eager_mask`` makes the first
    (``torch.tensor(0.0, device=mask.device)``), only under capture: ConvBERT failed capture on the H200 in
    blind round 14."""
    if func in _PYTHON_DATA_FACTORIES:
        data = args[0] if args else kwargs.get("data")
        device = kwargs.get("device", args[2] if func is torch.as_tensor and len(args) > 2 else None)
        if isinstance(data, torch.Tensor) or device is None or kwargs.get("pin_memory") or _empty(data):
            return False   # empty data copies nothing (transformers' caches start as torch.tensor([], device=...))
        return torch.device(device).type != "cpu"
    if func in _ITEM_ACCESS and len(args) > 1 and _on_device(args[0]):
        index = args[1] if isinstance(args[1], tuple) else (args[1],)
        return any(_python_index(i) for i in index)
    return False


def _python_index(i) -> bool:
    """An index of Python or NumPy data that PyTorch turns into a CPU tensor and copies to the device."""
    return (isinstance(i, list) and len(i) > 0) or (isinstance(i, np.ndarray) and i.ndim > 0)


def _empty(data) -> bool:
    return isinstance(data, (list, tuple)) and all(_empty(d) for d in data)
