"""The inductor lowering: counted operators -> the kernels ``torch.compile`` (inductor, default mode) runs on a
CUDA GPU. Pure (no torch): it reads the counted records and the dataflow the counter records (:class:`Flow`:
which values each operator reads and writes).

Grounded on inductor's generated code and a torch.profiler trace of the compiled forwards on an H200
(torch 2.11, ``benchmarks/results/h200_compiled.json``, inductor's output code of ResNet-50, ViT-S/16,
ConvNeXt-T, MobileNetV2, EfficientNet-B0 and BERT-large read by hand). What inductor does there, and what
this pass reproduces:

1. **Extern kernels stay.** Matrix products (mm, addmm with its bias, bmm), convolutions and fused attention
   (SDPA) run as library kernels (cuBLAS, cuDNN, flash attention), one kernel each, as in eager. A
   convolution is called with ``bias=None``: its bias add joins the triton kernel after it.
2. **Everything else is generated.** Pointwise operators, eval-mode batch norm (a pointwise affine with the
   running statistics as inputs: inductor does not fold it into the convolution without ``freezing``),
   casts, copies, gathers and reductions (layer/group/RMS norm, softmax, means) are fused into triton
   kernels: a producer joins its consumer's kernel, unless
   - the consumer is a windowed operator (max/avg pooling, upsampling): it reads each input several times,
     so inductor realizes the input in memory first (``realize_reads_threshold``);
   - fusing would make a cycle through an extern kernel (the residual add of a transformer block waits for
     the projection GEMM, so it cannot join the previous block's add: ``will_fusion_create_cycle``);
   - both sides hold reductions over rows of different sizes.
   One fused group is one kernel. Its bytes are the values it reads from outside the group (parameters
   included) plus the values it writes that something outside the group (an extern kernel, another group,
   the model's output) reads: intermediate values stay in registers.
3. **Layout.** Inductor runs 2-D convolutions channels-last (``layout_optimization``, when
   :func:`uses_channels_last` says its heuristic picks it): the model's input
   image and every convolution weight with a spatial window and more than one input channel per group are
   copied to channels-last on each forward (one pointwise kernel each; the weights are graph inputs, not
   constants, without ``freezing``). A weight cast (autocast) does the copy in the same kernel. Convolutions
   that stay convolutions (grouped, depthwise, an unaligned stem) carry ``family="channels_last"``.
4. **Views stay views.** The copy of a fused attention output's heads/sequence transpose is a view
   (inductor keeps SDPA's strides), as in eager (``lowering.lower_pytorch_cuda``, rewrite 3).
5. **Padding for library kernels.** Compute-bound half-precision GEMMs with unaligned rows are padded
   (``pad_mm``); attention with an unaligned head dimension pads query, key and value and slices the output
   (one generated kernel each).

Not modelled: ``max-autotune`` (triton GEMM/convolution templates with fused epilogues, picked by
benchmarking), ``freezing`` (batch norm folded into convolution weights, constant weights), dynamic shapes,
split reductions (a very long row reduced in two kernels), horizontal fusion of independent nodes that only
share an input, and inductor's own decompositions of small matrix products into pointwise code.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from ...kinds import OpKind
from ...workload import OpRecord
from .eager_cuda import conv_input_copy
from .facts import CountedOp, Flow, Value
from .inductor_layout import pad_mm, sdpa_padding, to_channels_last, uses_channels_last

EXTERN_KINDS = frozenset({OpKind.MATMUL, OpKind.CONV, OpKind.ATTENTION})
_REDUCTION_KINDS = frozenset({OpKind.SOFTMAX, OpKind.REDUCTION})
_REDUCTION_NAMES = ("adaptive_avg_pool", "aten.mean", "aten.sum", "aten.amax", "aten.var")
_WINDOW_NAMES = ("max_pool", "avg_pool", "upsample", "im2col", "col2im", "grid_sampler")
# A reduction of a few long rows (a training batch norm's per-channel sums over N*H*W): inductor splits it into
# kernels of its own that fuse with nothing after them (``inductor_training.py``)
SPLIT_REDUCTION_PREFIX = "triton.split_reduction"
_KERNEL_ROLES = ("extern", "alone", "split")   # roles that stay one kernel each, fused with nothing


@dataclass(frozen=True)
class FusionPolicy:
    """What a fusing compiler does around its library kernels; the defaults are inductor's (``INDUCTOR``).
    The TensorRT lowering (``tensorrt.py``) runs the same fusion of generated kernels with its own policy."""

    channels_last: Callable[[list], bool] = uses_channels_last   # whether 2-D convolutions run channels-last
    layout_copies: bool = True      # the input image and spatial weights copied to channels-last every forward
    pad_library_calls: bool = True  # pad_mm, SDPA head-dim padding, a strided convolution input made dense
    bias_kernel: bool = True        # a convolution's bias add joins the generated kernel after it
    kernel_prefix: str = "triton:"  # the name of a generated kernel: prefix + its operators
    attention_views: bool = True    # a fused attention output's heads/sequence transpose is a view, not a copy


INDUCTOR = FusionPolicy()


@dataclass
class _Node:
    """One operator (or a synthetic kernel this pass adds) in the dataflow graph."""

    record: OpRecord
    reads: tuple[Value, ...]
    writes: tuple[Value, ...]
    param_bytes: float
    role: str              # "extern", "pointwise", "reduction", "window"; "alone": a kernel of its own
    index: int = 0


@dataclass
class _Group:
    nodes: list[_Node] = field(default_factory=list)
    row_sizes: set[int] = field(default_factory=set)   # input elements of its reductions


def role(record: OpRecord) -> str:
    """How inductor treats an operator: an extern library kernel, or generated code (pointwise, a
    reduction, a windowed read that realizes its input, or a split reduction that is kernels of its own)."""
    if record.kind in EXTERN_KINDS:
        return "extern"
    name = record.name
    if name.startswith(SPLIT_REDUCTION_PREFIX):
        return "split"
    if any(w in name for w in _WINDOW_NAMES):
        return "window"
    if record.kind in _REDUCTION_KINDS or any(r in name for r in _REDUCTION_NAMES):
        return "reduction"
    if record.kind == OpKind.NORM and record.family != "batch_norm":
        return "reduction"
    return "pointwise"


def _nodes(ops: Iterable[CountedOp], policy: FusionPolicy = INDUCTOR) -> list[_Node]:
    """The counted operators as graph nodes, with the layout copies and convolution bias adds inductor adds
    and the attention-output copies it does not make (``policy``: which of those the compiler makes)."""
    ops = list(ops)
    channels_last = policy.channels_last(ops)
    nodes: list[_Node] = []
    rename: dict[int, int] = {}
    produced: set[int] = set()
    synthetic = [0]

    def fresh(v: Value) -> Value:
        synthetic[0] -= 1
        return Value(synthetic[0], v.numel, v.nbytes)

    for counted in ops:
        record, facts, flow = counted.record, counted.facts, getattr(counted, "flow", None)
        if flow is None:
            if record.flops or record.bytes:  # no dataflow recorded: its own kernel, as counted
                nodes.append(_Node(record, (), (), record.param_bytes, "alone"))
            continue
        reads = tuple(Value(rename.get(v.id, v.id), v.numel, v.nbytes) for v in flow.reads)
        if policy.attention_views and facts is not None and facts.copies_attention_output and reads \
                and flow.writes:
            rename[flow.writes[0].id] = reads[0].id   # a view of SDPA's output on a GPU
            continue
        record = to_channels_last(record) if channels_last else record
        pads = _library_pads(record, facts) if policy.pad_library_calls else []
        if pads:
            record, pads = pads[0], pads[1:]
        nodes.extend(_Node(r, (), (), 0.0, "alone") for r in pads)
        # the record's parameter bytes: a gather (embedding) reads the rows it takes, not the whole table
        node = _Node(record, reads, flow.writes, record.param_bytes, role(record))
        bias_bytes = facts.conv_bias_bytes if facts is not None and facts.conv_bias_bytes else 0.0
        if channels_last and policy.layout_copies:
            nodes.extend(_layout_copies(node, flow, produced, bias_bytes))
        nodes.append(node)
        produced.update(v.id for v in flow.writes)
        if policy.bias_kernel and facts is not None and facts.conv_bias_bytes is not None and flow.writes:
            out = flow.writes[0]
            biased = fresh(out)
            nodes.append(_Node(OpRecord(
                name="aten.add", kind=OpKind.ELEMENTWISE, module=record.module, flops=float(out.numel),
                bytes_read=out.nbytes + facts.conv_bias_bytes, bytes_written=out.nbytes,
                param_bytes=facts.conv_bias_bytes, dtype=record.dtype, phase=record.phase), (out,), (biased,),
                facts.conv_bias_bytes, "pointwise"))
            rename[out.id] = biased.id
    return nodes


def _library_pads(record: OpRecord, facts) -> list[OpRecord]:
    """The record as padded (``pad_mm``) followed by the pad kernels inductor launches before it."""
    record, pads = pad_mm(record)
    return [record, *pads, *sdpa_padding(record, facts), *(conv_input_copy(record, facts) if facts is not None else [])]


def _layout_copies(conv: _Node, flow: Flow, produced: set[int], bias_bytes: float) -> list[_Node]:
    """Channels-last copies before a 2-D convolution: of a graph input with a window, and of a weight read
    directly whose window is larger than 1x1 with more than one input channel per group."""
    g = conv.record.gemm
    if g is None or g.spatial_dims != 2:
        return []
    out = []
    if g.window > 1 and g.k > g.window and flow.param_reads:
        weight_bytes = max(flow.param_bytes - bias_bytes, 0.0)
        out.append(OpRecord(name="triton.weight_to_channels_last", kind=OpKind.COPY, module=conv.record.module,
                            flops=0.0, bytes_read=weight_bytes, bytes_written=weight_bytes,
                            param_bytes=weight_bytes, dtype=conv.record.dtype, phase=conv.record.phase))
    x = conv.reads[0] if conv.reads else None
    if x is not None and x.id not in produced and g.window > 1:
        out.append(OpRecord(name="triton.input_to_channels_last", kind=OpKind.COPY, module=conv.record.module,
                            flops=0.0, bytes_read=x.nbytes, bytes_written=x.nbytes, dtype=conv.record.dtype,
                            strided=True, phase=conv.record.phase))
    return [_Node(r, (), (), r.param_bytes, "alone") for r in out]


def _link(nodes: list[_Node]) -> tuple[dict[int, _Node], list[int]]:
    """Index the nodes and map each value to its producer; returns the producers and, per node, the set of
    nodes it depends on (a bit mask over node indices)."""
    producer: dict[int, _Node] = {}
    ancestors: list[int] = []
    for i, node in enumerate(nodes):
        node.index = i
        mask = 0
        for v in node.reads:
            p = producer.get(v.id)
            if p is not None:
                mask |= ancestors[p.index] | (1 << p.index)
        ancestors.append(mask)
        for v in node.writes:
            producer[v.id] = node
    return producer, ancestors


def _makes_cycle(p: _Node, c: _Node, ancestors: list[int], externs: int) -> bool:
    """Whether c depends on an extern kernel that depends on p (fusing p and c would wait on itself)."""
    between = (ancestors[c.index] & externs) >> (p.index + 1)
    x = p.index + 1
    while between:
        if between & 1 and ancestors[x] >> p.index & 1:
            return True
        between >>= 1
        x += 1
    return False


def _groups(nodes: list[_Node], producer: dict[int, _Node], ancestors: list[int]) -> dict[int, _Group]:
    """Union generated nodes with the generated producers of their inputs (the module docstring's rules)."""
    parent = list(range(len(nodes)))
    externs = sum(1 << n.index for n in nodes if n.role in ("extern", "split"))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    rows: dict[int, set[int]] = {i: ({max(v.numel for v in n.reads)} if n.role == "reduction" and n.reads
                                     else set()) for i, n in enumerate(nodes)}
    for c in nodes:
        if c.role not in ("pointwise", "reduction", "window"):
            continue
        for v in c.reads:
            p = producer.get(v.id)
            if p is None or p.role not in ("pointwise", "reduction", "window") or c.role == "window":
                continue
            if _makes_cycle(p, c, ancestors, externs):
                continue
            a, b = find(p.index), find(c.index)
            if a == b or (rows[a] and rows[b] and rows[a] != rows[b]):
                continue
            parent[b] = a
            rows[a] |= rows.pop(b)
    groups: dict[int, _Group] = {}
    for n in nodes:
        if n.role in ("pointwise", "reduction", "window"):
            groups.setdefault(find(n.index), _Group()).nodes.append(n)
    return groups


def _group_record(group: _Group, consumers: dict[int, set[int]], prefix: str = "triton:") -> OpRecord:
    """One fused kernel: reads from outside the group and parameters; writes what is read outside it."""
    members = {n.index for n in group.nodes}
    inside = {v.id for n in group.nodes for v in n.writes}
    read: dict[int, float] = {}
    written: dict[int, float] = {}
    for n in group.nodes:
        read.update({v.id: v.nbytes for v in n.reads if v.id not in inside})
        for j, v in enumerate(n.writes):
            users = consumers.get(v.id, set())
            if (users - members) or (not users and j == 0):
                written[v.id] = v.nbytes
    params = float(sum(n.param_bytes for n in group.nodes))
    records = [n.record for n in group.nodes]
    main = max(records, key=lambda r: r.bytes)
    # A generated kernel streams its reads and writes like PyTorch's vectorised elementwise kernels, whatever
    # it computes (H200 trace: ViT-S/16's add + layer norm kernels moved 19 MB in 5 us, 3.6 TB/s, where
    # eager's layer norm kernel reaches about half that): predicted as elementwise work.
    kind, family = OpKind.ELEMENTWISE, ""
    names = dict.fromkeys(r.name.removeprefix("aten.") for r in records)
    return OpRecord(
        name=prefix + "+".join(names)[:80], kind=kind, module=records[0].module,
        flops=float(sum(r.flops for r in records)), bytes_read=float(sum(read.values())) + params,
        bytes_written=float(sum(written.values())), param_bytes=params, dtype=main.dtype, kernels=1,
        family=family, phase=main.phase)


def lower_inductor_cuda(ops: Iterable[CountedOp]) -> tuple[OpRecord, ...]:
    """``torch.compile`` (inductor, default mode) on a CUDA GPU: the kernels of the module docstring, in the
    order they run (a fused kernel where its last operator was)."""
    return lower_fused(ops, INDUCTOR)


def lower_fused(ops: Iterable[CountedOp], policy: FusionPolicy) -> tuple[OpRecord, ...]:
    """Library kernels kept, every other operator fused along the dataflow into generated kernels, as
    ``policy`` says (inductor's rules: the module docstring)."""
    nodes = _nodes(ops, policy)
    producer, ancestors = _link(nodes)
    consumers: dict[int, set[int]] = {}
    for n in nodes:
        for v in n.reads:
            consumers.setdefault(v.id, set()).add(n.index)
    groups = _groups(nodes, producer, ancestors)
    last = {max(n.index for n in g.nodes): g for g in groups.values()}
    out: list[OpRecord] = []
    for n in nodes:
        if n.role in _KERNEL_ROLES:
            out.append(n.record)
        elif n.index in last:
            out.append(_group_record(last[n.index], consumers, policy.kernel_prefix))
    return tuple(out)
