"""What the counter hands a lowering about each operator call: its facts and its dataflow. Pure data, no torch.

:class:`CountedOp` is one counted operator: its :class:`~tops_advisor.workload.OpRecord`, the
:class:`OpFacts` a rewrite may need (a convolution's bias, the query/key/value of an attention call, whether a
copy copies an attention output) and its :class:`Flow` (the values it reads and writes, which the inductor
lowering fuses along; the counter's ``dataflow.FlowTracker`` records it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from ...workload import OpRecord


@dataclass(frozen=True)
class TensorFacts:
    """A tensor as a lowering needs it: its elements, its last dimension, bytes per element and dtype."""

    numel: int
    last_dim: int
    itemsize: float
    dtype: str


@dataclass(frozen=True)
class OpFacts:
    """Hardware-independent facts about one operator call, recorded by the counter for the lowerings."""

    conv_bias_bytes: float | None = None  # a convolution's bias tensor (None: no bias)
    conv_input_copy_bytes: float = 0.0   # a convolution's strided input, copied dense first (0: none)
    conv_out_elements: int = 0      # a convolution's output elements ...
    conv_out_bytes: float = 0.0     # ... and bytes
    attention_inputs: tuple[TensorFacts, ...] = ()  # query, key and value of a fused attention call
    copies_attention_output: bool = False  # a clone of an attention output's heads/sequence transpose


@dataclass(frozen=True)
class Value:
    """One tensor value an operator reads or writes: its id in the run, elements and bytes."""

    id: int
    numel: int
    nbytes: float


@dataclass(frozen=True)
class Flow:
    """Which values one operator call reads (activations), writes, and how many parameter bytes it reads."""

    reads: tuple[Value, ...] = ()
    writes: tuple[Value, ...] = ()
    param_bytes: float = 0.0
    param_reads: tuple[int, ...] = ()   # ids of the parameters it reads (a weight read directly)
    inplace_bytes: float = 0.0          # bytes it writes over an input it reads (an in-place op: relu_)


class CountedOp(NamedTuple):
    """One counted operator, the facts a lowering may need about it, and its dataflow (:class:`Flow`:
    the values it reads and writes; the inductor lowering fuses along it)."""

    record: OpRecord
    facts: OpFacts | None = None
    flow: Flow | None = None
