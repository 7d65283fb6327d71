"""Which activations an operator reads that an earlier operator wrote, and how much traffic lies between them.

A GPU's L2 cache is write-back: an operator's output stays in it until other traffic evicts it, so the next
operator that reads it may read it from the L2 instead of DRAM. Whether it does depends on the device (its L2's
size, ``roofline/l2.py``) and on what ran in between, which is known only here, from the dataflow
(``lowering.Flow``): for each activation an operator reads, :func:`annotate_reuse` records its bytes, the
traffic (reads + writes) of the operators between its producer and this one, the producer's own traffic and
this operator's (``workload.Reuse``). Parameters and the model's inputs have no producer in the pass and get no record.

Traffic is the distinct bytes an operator touches: an in-place operator (``relu_``) writes the lines it read
(``Flow.inplace_bytes``), so its writes add none. Across operators it is summed, not deduplicated: an operator
between the two that reads the value again is counted in full, which can only make a hit less likely.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ..workload import Reuse
from .lowering.facts import CountedOp


def annotate_reuse(ops: Sequence[CountedOp]) -> list[CountedOp]:
    """``ops`` with ``OpRecord.reuse`` filled in from their dataflow (records without a flow keep none)."""
    traffic = [max(c.record.bytes_read + c.record.bytes_written - (c.flow.inplace_bytes if c.flow else 0.0), 0.0)
               for c in ops]
    before = [0.0]                       # before[i]: traffic of ops[:i]
    for t in traffic:
        before.append(before[-1] + t)
    producer: dict[int, int] = {}        # value id -> position of the op that wrote it
    out: list[CountedOp] = []
    for i, counted in enumerate(ops):
        flow = counted.flow
        if flow is None:
            out.append(counted)
            continue
        reuse = []
        for value in flow.reads:
            j = producer.get(value.id)
            if j is not None and value.nbytes > 0:
                reuse.append(Reuse(bytes=value.nbytes, between_bytes=before[i] - before[j + 1],
                                   producer_bytes=traffic[j], consumer_bytes=traffic[i]))
        for value in flow.writes:
            producer[value.id] = i
        record = replace(counted.record, reuse=tuple(reuse)) if reuse else counted.record
        out.append(counted._replace(record=record))
    return out
