"""The TensorRT lowering: counted operators -> the kernels an engine TensorRT builds from the model runs. Pure (no
torch): it reads the counted records, their facts and dataflow, and a :class:`~tops_advisor.tensorrt.TensorRTProfile`
(``tops_advisor/tensorrt.py``: each rule, what it does and its source). The profile's rules run in its order:

1. ``fold-batch-norm`` (:func:`fold_batch_norm`): an eval batch norm whose input is a convolution's output read
   by nothing else disappears; the convolution gains a bias (its output channels) if it had none, and its
   consumers read the convolution's output.
2. ``epilogue`` (:func:`fuse_epilogues`): a pointwise operator of the profile's epilogue lists whose input is a
   convolution's (or GEMM's) output read by nothing else joins that kernel: the kernel adds its operations,
   reads its other inputs (a residual), writes its output instead. Chains (conv -> add -> relu) fuse whole.
3. ``channels-last``, ``fused-attention``, ``pointwise-fusion``: the fusion machinery of the inductor lowering
   (``inductor.lower_fused``) with TensorRT's policy: every 2-D convolution channels-last (implicit GEMM where
   the input channels allow, else an NHWC convolution with compiled mode's rates), no layout copies, no pad
   kernels, the convolution's bias in its own kernel, attention output transposes as views, and the remaining
   generated operators fused along the dataflow. Without ``pointwise-fusion`` each stays a kernel.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from ...kinds import OpKind
from ...tensorrt import TENSORRT, TensorRTProfile, TrtRule
from ...units import BYTES_PER_ELEMENT
from ...workload import OpRecord
from ..reuse import annotate_reuse
from .facts import CountedOp, Flow, OpFacts
from .inductor import FusionPolicy, lower_fused
from .inductor_layout import to_channels_last


def _always(ops: list) -> bool:
    return True


def _never(ops: list) -> bool:
    return False


def lower_tensorrt(ops: Iterable[CountedOp], profile: TensorRTProfile = TENSORRT) -> tuple[OpRecord, ...]:
    """The kernels of a TensorRT engine, as ``profile``'s rules make them (the module docstring)."""
    ops = list(ops)
    if profile.applies(TrtRule.FOLD_BATCH_NORM):
        ops = fold_batch_norm(ops)
    if profile.applies(TrtRule.EPILOGUE):
        ops = fuse_epilogues([_bias_in_kernel(c) for c in ops], profile)
    ops = annotate_reuse(ops)   # the engine's own producer-consumer pairs, for the L2 (roofline/l2.py)
    channels_last = profile.applies(TrtRule.CHANNELS_LAST)
    if not profile.applies(TrtRule.POINTWISE_FUSION):
        return tuple(to_channels_last(c.record) if channels_last else c.record for c in ops
                     if not (c.facts is not None and c.facts.copies_attention_output
                             and profile.applies(TrtRule.FUSED_ATTENTION)))
    policy = FusionPolicy(channels_last=_always if channels_last else _never, layout_copies=False,
                          pad_library_calls=False, bias_kernel=not profile.applies(TrtRule.EPILOGUE),
                          kernel_prefix="trt:", attention_views=profile.applies(TrtRule.FUSED_ATTENTION))
    return lower_fused(ops, policy)


def _consumers(ops: list[CountedOp]) -> dict[int, int]:
    """How many operators read each value."""
    n: dict[int, int] = {}
    for c in ops:
        for v in (c.flow.reads if c.flow is not None else ()):
            n[v.id] = n.get(v.id, 0) + 1
    return n


def _is_batch_norm(record: OpRecord) -> bool:
    return record.kind == OpKind.NORM and record.family == "batch_norm"


def fold_batch_norm(ops: list[CountedOp]) -> list[CountedOp]:
    """Rule ``fold-batch-norm``: batch norms folded into the convolution whose output only they read."""
    readers = _consumers(ops)
    producer: dict[int, int] = {}
    rename: dict[int, int] = {}
    out: list[CountedOp] = []
    for c in ops:
        flow = c.flow
        if flow is not None and rename:
            flow = replace(flow, reads=tuple(replace(v, id=rename.get(v.id, v.id)) for v in flow.reads))
            c = c._replace(flow=flow)
        src = producer.get(flow.reads[0].id) if flow is not None and flow.reads else None
        if (_is_batch_norm(c.record) and src is not None and out[src].record.kind == OpKind.CONV
                and readers.get(flow.reads[0].id) == 1 and flow.writes):
            out[src] = _with_bias(out[src])
            rename[flow.writes[0].id] = flow.reads[0].id
            continue
        if flow is not None:
            producer.update({v.id: len(out) for v in flow.writes})
        out.append(c)
    return out


def _with_bias(conv: CountedOp) -> CountedOp:
    """A convolution that absorbed a batch norm has a bias (its output channels) if it had none; the bias is
    added where a convolution's bias is (``_bias_in_kernel``, or a kernel of its own without the epilogue rule)."""
    facts, g, out = conv.facts, conv.record.gemm, conv.flow.writes[0]
    if (facts is not None and facts.conv_bias_bytes is not None) or g is None:
        return conv
    bias = float(g.n * g.batch * BYTES_PER_ELEMENT.get(conv.record.dtype, 4.0))
    facts = facts or OpFacts(conv_out_elements=out.numel, conv_out_bytes=out.nbytes)
    return conv._replace(facts=replace(facts, conv_bias_bytes=bias))


def _bias_in_kernel(c: CountedOp) -> CountedOp:
    """A convolution's bias added in its own kernel (the epilogue): it reads the bias and adds it to each
    output (one operation per output element), with no pass of its own."""
    facts = c.facts
    if facts is None or facts.conv_bias_bytes is None or c.record.kind != OpKind.CONV:
        return c
    b = facts.conv_bias_bytes
    record = replace(c.record, flops=c.record.flops + facts.conv_out_elements, bytes_read=c.record.bytes_read + b,
                     param_bytes=c.record.param_bytes + b)
    return c._replace(record=record)


def _epilogue_of(profile: TensorRTProfile, kind: OpKind) -> frozenset[str]:
    return {OpKind.CONV: profile.conv_epilogue, OpKind.MATMUL: profile.gemm_epilogue}.get(kind, frozenset())


def fuse_epilogues(ops: list[CountedOp], profile: TensorRTProfile) -> list[CountedOp]:
    """Rule ``epilogue``: pointwise operators run in the epilogue of the convolution or GEMM whose output only
    they read. The fused kernel takes the pointwise operator's place in the order (a residual it reads may be
    computed after the convolution)."""
    readers = _consumers(ops)
    out: list[CountedOp | None] = []
    producer: dict[int, int] = {}
    for c in ops:
        host = _epilogue_host(c, out, producer, readers, profile)
        if host is not None:
            merged = _merge(out[host], c)
            out[host] = None
            c = merged
        if c.flow is not None:
            producer.update({v.id: len(out) for v in c.flow.writes})
        out.append(c)
    return [c for c in out if c is not None]


def _epilogue_host(c: CountedOp, out: list, producer: dict[int, int], readers: dict[int, int],
                   profile: TensorRTProfile) -> int | None:
    """The convolution or GEMM (index in ``out``) whose epilogue takes ``c``, or None."""
    if c.flow is None or c.record.kind != OpKind.ELEMENTWISE or not c.flow.writes:
        return None
    hosts = [producer[v.id] for v in c.flow.reads if v.id in producer and readers.get(v.id) == 1]
    for i in sorted(hosts, reverse=True):    # the latest producer: the one whose output the sum waits for
        host = out[i]
        if host is not None and c.record.name in _epilogue_of(profile, host.record.kind) \
                and host.flow is not None and host.flow.writes:
            return i
    return None


def _merge(host: CountedOp, op: CountedOp) -> CountedOp:
    """``host`` (a convolution or GEMM) with ``op`` in its epilogue: one kernel."""
    inside = {v.id for v in host.flow.writes}
    extra = tuple(v for v in op.flow.reads if v.id not in inside)
    written = float(sum(v.nbytes for v in op.flow.writes))
    r = host.record
    record = replace(r, flops=r.flops + op.record.flops,
                     bytes_read=r.bytes_read + sum(v.nbytes for v in extra) + op.flow.param_bytes,
                     bytes_written=written, param_bytes=r.param_bytes + op.flow.param_bytes)
    flow = Flow(reads=host.flow.reads + extra, writes=op.flow.writes,
                param_bytes=host.flow.param_bytes + op.flow.param_bytes,
                param_reads=host.flow.param_reads + op.flow.param_reads)
    return CountedOp(record, host.facts, flow)
