"""The dataflow of one counting run: which tensor values each operator reads and writes (``lowering.Flow``),
for the inductor lowering to fuse along."""

from __future__ import annotations

import weakref

from .lowering import Flow, Value


class FlowTracker:
    """Gives each tensor value a run-wide id: a new one for every operator output (an in-place operator
    writes a new version of its tensor), the producer's for a view. Keyed by ``id()`` and forgotten when
    the tensor is freed, so a reused id never aliases."""

    def __init__(self) -> None:
        self._ids: dict[int, int] = {}
        self._next = 0

    def _assign(self, t) -> int:
        key = id(t)
        if key not in self._ids:
            weakref.finalize(t, self._ids.pop, key, None)
        self._next += 1
        self._ids[key] = self._next
        return self._next

    def _id(self, t) -> int:
        return self._ids.get(id(t)) or self._assign(t)

    def value_id(self, t) -> int:
        """The value a tensor holds now (a view shares its base's)."""
        return self._id(t)

    def alias(self, outs: list, ins: list) -> None:
        """A view: its outputs are the first input's value."""
        if ins:
            source = self._id(ins[0])
            for t in outs:
                if id(t) not in self._ids:
                    weakref.finalize(t, self._ids.pop, id(t), None)
                self._ids[id(t)] = source

    def flow(self, ins: list, outs: list, param_ids: set[int]) -> Flow:
        """The reads and writes of one operator call (``param_ids``: ids of parameter tensors)."""
        seen: set[int] = set()
        reads, params, param_reads = [], 0.0, []
        for t in ins:
            if id(t) in seen:
                continue
            seen.add(id(t))
            if id(t) in param_ids:
                params += t.numel() * t.element_size()
                param_reads.append(self._id(t))
            else:
                reads.append(Value(self._id(t), t.numel(), float(t.numel() * t.element_size())))
        writes = tuple(Value(self._assign(t), t.numel(), float(t.numel() * t.element_size())) for t in outs)
        inplace = float(sum(t.numel() * t.element_size() for t in outs if id(t) in seen))
        return Flow(tuple(reads), writes, params, tuple(param_reads), inplace)
