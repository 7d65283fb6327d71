"""The inductor lowering of a training step: ``torch.compile(model)`` (inductor, default mode) compiles the
model's forward and, through AOTAutograd, its backward into two graphs of fused kernels; the optimizer's
``step()`` stays eager. Pure (no torch).

- **Two graphs.** The forward's operators and the backward's are fused separately (``inductor.lower_fused``,
  the rules of ``inductor.py``), the backward with the forward's layout decision (2-D convolutions
  channels-last where ``uses_channels_last`` picks it: the backward's convolutions run as NHWC implicit GEMMs
  too). The optimizer's operators are eager PyTorch's (``lower_pytorch_cuda``).
- **Training batch norm is decomposed.** Inductor lowers ``native_batch_norm`` (training) to its statistics,
  a reduction of each channel over N*H*W, and a pointwise normalize; a reduction of a few long rows is a
  *split reduction* (``torch/_inductor/ir.py``, ``Reduction.num_splits``: partial sums in one kernel, their
  combination in a second), and the normalize cannot join it (its iteration space is the whole tensor), so
  the input is read twice, by the statistics and by the normalize, which fuses with the activation after
  it. The backward likewise: the sums of the gradient and of gradient x input per channel (a split reduction
  over both), then a pointwise input gradient reading both again (``torch/_decomp/decompositions.py``,
  ``native_batch_norm_backward``). Both reductions use the whole GPU, not one thread block per channel as
  the eager kernels do (``rates.batch_norm_rows_s``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from ...kinds import OpKind, Phase
from ...workload import OpRecord
from .eager_cuda import lower_pytorch_cuda
from .facts import CountedOp, Flow, Value
from .inductor import INDUCTOR, SPLIT_REDUCTION_PREFIX, FusionPolicy, lower_fused
from .inductor_layout import backward_as_gemm, uses_channels_last

_SPLITS = 2   # a split reduction's kernels: the partial sums, their combination
# torch/_inductor/ir.py, Reduction.num_splits: a reduction of at most 8192 elements per output is not split
_SPLIT_MIN_ELEMENTS = 8192
_STAT_BYTES = 4.0   # the statistics are fp32 per channel


def lower_inductor_step(ops: Iterable[CountedOp]) -> tuple[OpRecord, ...]:
    """A counted training step as ``torch.compile(model)`` runs it (the module docstring); an inference
    forward (every operator in the forward) as ``inductor.lower_inductor_cuda`` lowers it."""
    ops = list(ops)
    forward = [c for c in ops if c.record.phase == Phase.FORWARD]
    if len(forward) == len(ops):
        return lower_fused(ops, INDUCTOR)
    channels_last = uses_channels_last(forward)
    backward = [c for c in ops if c.record.phase == Phase.BACKWARD]
    optimizer = [c for c in ops if c.record.phase == Phase.OPTIMIZER]
    fwd = FusionPolicy(channels_last=lambda _ops: channels_last)
    bwd = FusionPolicy(channels_last=lambda _ops: False, layout_copies=False)
    backward = [_backward_layout(c) for c in backward] if channels_last else backward
    return (lower_fused(split_batch_norms(forward), fwd) + lower_fused(split_batch_norms(backward), bwd)
            + lower_pytorch_cuda(optimizer))


def _backward_layout(counted: CountedOp) -> CountedOp:
    """A backward convolution of a channels-last graph: an implicit GEMM where its forward is one (ungrouped,
    aligned input channels: ``backward_as_gemm``), else as counted."""
    return counted._replace(record=backward_as_gemm(counted.record))


def split_batch_norms(ops: list[CountedOp]) -> list[CountedOp]:
    """Each training batch norm (forward or backward) with its dataflow as inductor's two parts: a split
    reduction and a pointwise operator (the module docstring)."""
    out: list[CountedOp] = []
    fresh = _Fresh()
    for c in ops:
        family = c.record.family
        if c.flow is not None and c.flow.reads and c.flow.writes and family == "batch_norm" and c.record.gemm:
            out.extend(_forward_parts(c))
        elif c.flow is not None and len(c.flow.reads) >= 2 and c.flow.writes and family == "batch_norm_backward":
            out.extend(_backward_parts(c, fresh))
        else:
            out.append(c)
    return out


class _Fresh:
    """Ids for values this pass makes (negative, below the counter's and ``inductor._nodes``'s)."""

    def __init__(self) -> None:
        self.last = -(1 << 40)

    def value(self, numel: int, nbytes: float) -> Value:
        self.last -= 1
        return Value(self.last, numel, nbytes)


def _stats_record(r: OpRecord, name: str, read: float, written: float, flops: float) -> OpRecord:
    """The per-channel reduction: two kernels where inductor splits it (over 8192 elements per channel)."""
    rows = r.gemm.n if r.gemm is not None else 0
    return OpRecord(name=f"{SPLIT_REDUCTION_PREFIX}:{name}", kind=OpKind.REDUCTION, module=r.module, flops=flops,
                    bytes_read=read, bytes_written=written, dtype=r.dtype,
                    kernels=_SPLITS if rows > _SPLIT_MIN_ELEMENTS else 1, phase=r.phase)


def _pointwise(r: OpRecord, name: str, read: float, written: float, flops: float) -> OpRecord:
    return OpRecord(name=name, kind=OpKind.ELEMENTWISE, module=r.module, flops=flops, bytes_read=read + r.param_bytes,
                    bytes_written=written, param_bytes=r.param_bytes, dtype=r.dtype, phase=r.phase)


def _forward_parts(c: CountedOp) -> list[CountedOp]:
    """Statistics (reads x; writes mean and inverse deviation, updates the running statistics), then the
    normalize (reads x and the statistics, writes y)."""
    r, flow = c.record, c.flow
    x, (y, *stats) = flow.reads[0], flow.writes
    channels = r.gemm.m
    stat_bytes = 4 * channels * _STAT_BYTES    # mean, inverse deviation, the two running statistics
    reduce = _stats_record(r, "batch_norm_stats", x.nbytes, stat_bytes, 3.0 * x.numel)
    norm = _pointwise(r, "aten.batch_norm_normalize", x.nbytes + 2 * channels * _STAT_BYTES, y.nbytes, 2.0 * x.numel)
    return [CountedOp(reduce, None, Flow(reads=(x,), writes=tuple(stats))),
            CountedOp(norm, c.facts, replace(flow, reads=(x, *stats), writes=(y,)))]


def _backward_parts(c: CountedOp, fresh: _Fresh) -> list[CountedOp]:
    """Per-channel sums of the gradient and of gradient x normalized input (reads both), then the input
    gradient (reads them again and the sums, writes dx; the weight and bias gradients are the sums)."""
    r, flow = c.record, c.flow
    dy, x, *stats = flow.reads
    dx, *rest = flow.writes
    channels = r.gemm.m if r.gemm else 1
    sums = fresh.value(2 * channels, 2 * channels * _STAT_BYTES)
    reduce = _stats_record(r, "batch_norm_backward_sums", dy.nbytes + x.nbytes, sums.nbytes, 4.0 * x.numel)
    grad = _pointwise(r, "aten.batch_norm_backward_input", dy.nbytes + x.nbytes + sums.nbytes,
                      dx.nbytes + sum(v.nbytes for v in rest), 4.0 * x.numel)
    return [CountedOp(reduce, None, Flow(reads=(dy, x, *stats), writes=(sums,))),
            CountedOp(grad, c.facts, replace(flow, reads=(dy, x, sums, *stats), writes=(dx, *rest)))]
