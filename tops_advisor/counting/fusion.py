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

import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from ..units import BYTES_PER_ELEMENT
from ..workload import CHANNELS_LAST_FAMILY, OpRecord, Workload

EXTERN_KINDS = frozenset({"matmul", "conv", "attention"})
_REDUCTION_KINDS = frozenset({"softmax", "reduction"})
_REDUCTION_NAMES = ("adaptive_avg_pool", "aten.mean", "aten.sum", "aten.amax", "aten.var")
# torch/_inductor/graph.py::decide_layout_opt
_NODES_PER_CONV = 300
_CHANNELS_LAST_MULTIPLIER = {"grouped": 1.358, "small": 0.783, "in_out": 0.725, "default": 0.823}
_GEMM_CHANNEL_ALIGNMENT = 8
_MM_ALIGNMENT = 8             # pad_mm.get_alignment_size_dtype: fp16/bf16
_PAD_MM_MIN_INTENSITY = 103   # see _pad_mm
_PADDED_MM = frozenset({"aten.mm", "aten.addmm", "aten.bmm"})   # fp16 tensor-core GEMMs take K in multiples of 8 elements (16 bytes)
_WINDOW_NAMES = ("max_pool", "avg_pool", "upsample", "im2col", "col2im", "grid_sampler")


# --- dataflow, recorded by the counter ------------------------------------------------------------------
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
        return Flow(tuple(reads), writes, params, tuple(param_reads))


# --- the pass -------------------------------------------------------------------------------------------
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
    reduction, or a windowed read that realizes its input)."""
    if record.kind in EXTERN_KINDS:
        return "extern"
    name = record.name
    if any(w in name for w in _WINDOW_NAMES):
        return "window"
    if record.kind in _REDUCTION_KINDS or any(r in name for r in _REDUCTION_NAMES):
        return "reduction"
    if record.kind == "norm" and record.family != "batch_norm":
        return "reduction"
    return "pointwise"


def _nodes(ops: Iterable) -> list[_Node]:
    """The counted operators as graph nodes, with the layout copies and convolution bias adds inductor adds
    and the attention-output copies it does not make."""
    ops = list(ops)
    channels_last = uses_channels_last(ops)
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
        if facts is not None and facts.copies_attention_output and reads and flow.writes:
            rename[flow.writes[0].id] = reads[0].id   # a view of SDPA's output on a GPU
            continue
        record, pads = _pad_mm(_channels_last(record) if channels_last else record)
        pads += _sdpa_padding(record, facts) + (conv_input_copy(record, facts) if facts is not None else [])
        nodes.extend(_Node(r, (), (), 0.0, "alone") for r in pads)
        # the record's parameter bytes: a gather (embedding) reads the rows it takes, not the whole table
        node = _Node(record, reads, flow.writes, record.param_bytes, role(record))
        bias_bytes = facts.conv_bias_bytes if facts is not None and facts.conv_bias_bytes else 0.0
        if channels_last:
            nodes.extend(_layout_copies(node, flow, produced, bias_bytes))
        nodes.append(node)
        produced.update(v.id for v in flow.writes)
        if facts is not None and facts.conv_bias_bytes is not None and flow.writes:
            out = flow.writes[0]
            biased = fresh(out)
            nodes.append(_Node(OpRecord(
                name="aten.add", kind="elementwise", module=record.module, flops=float(out.numel),
                bytes_read=out.nbytes + facts.conv_bias_bytes, bytes_written=out.nbytes,
                param_bytes=facts.conv_bias_bytes, dtype=record.dtype), (out,), (biased,),
                facts.conv_bias_bytes, "pointwise"))
            rename[out.id] = biased.id
    return nodes


def conv_input_copy(conv: OpRecord, facts) -> list[OpRecord]:
    """Rewrite 4: the dense copy of a strided convolution input, launched inside the convolution's call."""
    if not facts.conv_input_copy_bytes:
        return []
    n = facts.conv_input_copy_bytes
    return [OpRecord(name="aten.contiguous", kind="copy", module=conv.module, flops=0.0, bytes_read=n,
                     bytes_written=n, dtype=conv.dtype, kernels=1, strided=True, internal=True)]


def _conv_class(g) -> str:
    """decide_layout_opt's class of a 2-D convolution (its weight is C_out x C_in/groups x kh x kw)."""
    groups, cin_per_group = g.batch, g.k // g.window
    cout = g.n * groups
    if groups > 1 and cin_per_group > 1:
        return "grouped"
    if cout <= 64 and cin_per_group <= 64:
        return "small"
    if cout * 2 <= cin_per_group and g.window > 1:
        return "in_out"
    return "default"


def uses_channels_last(ops: list) -> bool:
    """Inductor's ``GraphLowering.decide_layout_opt`` (torch/_inductor/graph.py, torch 2.11-2.14) for an
    inference graph on a GPU: channels-last when the graph has convolutions, fewer than 300 FX nodes per
    convolution, and the convolutions' flops weighted by inductor's benchmarked channels-last speed-ups
    (grouped 1.358, small 0.783, in/out 0.725, default 0.823) do not exceed their plain sum. The FX node
    count is estimated as two per counted operator (views are nodes too) plus one per parameter."""
    convs = [c.record for c in ops if c.record.kind == "conv" and c.record.gemm is not None
             and c.record.gemm.spatial_dims == 2]
    if not convs:
        return False
    params = {i for c in ops if getattr(c, "flow", None) for i in c.flow.param_reads}
    if 2 * len(ops) + len(params) >= _NODES_PER_CONV * len(convs):
        return False
    weighted = sum(c.flops * _CHANNELS_LAST_MULTIPLIER[_conv_class(c.gemm)] for c in convs)
    return weighted <= sum(c.flops for c in convs)


def _channels_last(record: OpRecord) -> OpRecord:
    """A 2-D convolution in a channels-last graph: a GEMM where :func:`_as_gemm` says so, else a cuDNN NHWC
    convolution, marked ``family="channels_last"`` (grouped and depthwise ones run other kernels than in NCHW:
    ``roofline.rates``)."""
    record = _as_gemm(record)
    if record.kind == "conv" and record.gemm is not None and record.gemm.spatial_dims == 2:
        return replace(record, family=CHANNELS_LAST_FAMILY)
    return record


def channels_last_convs(w: Workload) -> Workload:
    """An eager workload run channels-last (``model.to(memory_format=torch.channels_last)``): cuDNN runs the
    NHWC kernels it runs under inductor's channels-last layout (``_channels_last``): ungrouped 2-D
    convolutions as implicit GEMMs without the layout conversions, grouped, depthwise and thin-input ones
    marked ``family="channels_last"`` for their NHWC rates (``roofline.rates``); every other operator moves
    the same bytes in either layout."""
    return replace(w, ops=tuple(_channels_last(o) for o in w.ops))


def _as_gemm(record: OpRecord) -> OpRecord:
    """A channels-last 2-D convolution without groups runs as a GEMM: cuBLAS kernels for 1x1 windows and
    cuDNN's implicit-GEMM NHWC kernels otherwise (the H200 trace), so it is predicted as its implicit GEMM.
    Input channels not a multiple of 8 (an RGB stem) run cuDNN's own kernels (``image_first_layer``): a
    convolution still."""
    g = record.gemm
    if record.kind == "conv" and g is not None and g.batch == 1 and g.spatial_dims == 2 \
            and (g.k // g.window) % _GEMM_CHANNEL_ALIGNMENT == 0:
        # still a cuDNN convolution call: fp32 runs in TF32 (torch.backends.cudnn.allow_tf32 defaults to True)
        return replace(record, kind="matmul", dtype="tf32" if record.dtype == "fp32" else record.dtype)
    return record


def _pad_mm(record: OpRecord) -> tuple[OpRecord, list[OpRecord]]:
    """Inductor's ``pad_mm`` pass (torch/_inductor/fx_passes/pad_mm.py, ``shape_padding`` on by default): a
    half-precision matrix product whose row length (n or k) is not a multiple of 8 and that is compute-bound
    is run on zero-padded operands (a pad kernel per padded operand; the result is sliced, a view). The
    pass pads m too, where its benchmark finds it faster; unaligned m costs cuBLAS little, so it is left. Compute-bound is
    inductor's test, intensity m*n*k / (m*k + k*n + m*n) above half the card's flops per byte: 103 on the
    H100/H200 (990 TFLOP/s fp16 over 4.8 TB/s, x 0.5) is used for every card."""
    g = record.gemm
    if record.kind != "matmul" or g is None or record.name not in _PADDED_MM or record.dtype not in ("fp16", "bf16"):
        return record, []
    m, n, k = (g.m, g.n, g.k)
    pad = [m] + [-(-d // _MM_ALIGNMENT) * _MM_ALIGNMENT for d in (n, k)]  # rows (m) need no alignment
    if pad == [m, n, k] or m * n * k <= _PAD_MM_MIN_INTENSITY * (m * k + k * n + m * n):
        return record, []
    item = BYTES_PER_ELEMENT[record.dtype]
    copies = []
    if pad[2] != k:
        copies.append((g.batch * m * k, g.batch * pad[0] * pad[2]))
    if pad[1] != n or pad[2] != k:
        copies.append((g.batch * k * n, g.batch * pad[2] * pad[1]))
    padded = replace(record, gemm=replace(g, m=pad[0], n=pad[1], k=pad[2]))
    return padded, [OpRecord(name="triton.pad_mm", kind="copy", module=record.module, flops=0.0,
                             bytes_read=src * item, bytes_written=dst * item, dtype=record.dtype)
                    for src, dst in copies]


def _sdpa_padding(attention: OpRecord, facts) -> list[OpRecord]:
    """Fused attention pads a half-precision head dimension that is not a multiple of 8 (as in eager,
    ``lowering.lower_pytorch_cuda`` rewrite 2); inductor generates one pointwise kernel per padded query,
    key and value, and one that slices the padded output back (H200 trace, Conformer-S's head dim 36:
    ``triton_poi_fused__scaled_dot_product_flash_attention_constant_pad_nd`` x3 and ``clone_slice`` per
    layer)."""
    inputs = facts.attention_inputs if facts is not None else ()
    if not inputs or inputs[0].dtype not in ("fp16", "bf16") or inputs[0].last_dim % _MM_ALIGNMENT == 0:
        return []
    out = []
    for t in inputs:
        padded = t.numel // t.last_dim * (-(-t.last_dim // _MM_ALIGNMENT) * _MM_ALIGNMENT) * t.itemsize
        out.append(OpRecord(name="triton.sdpa_pad", kind="copy", module=attention.module, flops=0.0,
                            bytes_read=float(t.numel * t.itemsize), bytes_written=float(padded), dtype=t.dtype))
    q = out[0]
    out.append(OpRecord(name="triton.sdpa_unpad", kind="copy", module=attention.module, flops=0.0,
                        bytes_read=q.bytes_written, bytes_written=q.bytes_read, dtype=q.dtype))
    return out


def _layout_copies(conv: _Node, flow: Flow, produced: set[int], bias_bytes: float) -> list[_Node]:
    """Channels-last copies before a 2-D convolution: of a graph input with a window, and of a weight read
    directly whose window is larger than 1x1 with more than one input channel per group."""
    g = conv.record.gemm
    if g is None or g.spatial_dims != 2:
        return []
    out = []
    if g.window > 1 and g.k > g.window and flow.param_reads:
        weight_bytes = max(flow.param_bytes - bias_bytes, 0.0)
        out.append(OpRecord(name="triton.weight_to_channels_last", kind="copy", module=conv.record.module,
                            flops=0.0, bytes_read=weight_bytes, bytes_written=weight_bytes,
                            param_bytes=weight_bytes, dtype=conv.record.dtype))
    x = conv.reads[0] if conv.reads else None
    if x is not None and x.id not in produced and g.window > 1:
        out.append(OpRecord(name="triton.input_to_channels_last", kind="copy", module=conv.record.module,
                            flops=0.0, bytes_read=x.nbytes, bytes_written=x.nbytes, dtype=conv.record.dtype,
                            strided=True))
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
    externs = sum(1 << n.index for n in nodes if n.role == "extern")

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


def _group_record(group: _Group, consumers: dict[int, set[int]]) -> OpRecord:
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
    kind, family = "elementwise", ""
    names = dict.fromkeys(r.name.removeprefix("aten.") for r in records)
    return OpRecord(
        name="triton:" + "+".join(names)[:80], kind=kind, module=records[0].module,
        flops=float(sum(r.flops for r in records)), bytes_read=float(sum(read.values())) + params,
        bytes_written=float(sum(written.values())), param_bytes=params, dtype=main.dtype, kernels=1,
        family=family)


def lower_inductor_cuda(ops: Iterable) -> tuple[OpRecord, ...]:
    """``torch.compile`` (inductor, default mode) on a CUDA GPU: the kernels of the module docstring, in the
    order they run (a fused kernel where its last operator was)."""
    nodes = _nodes(ops)
    producer, ancestors = _link(nodes)
    consumers: dict[int, set[int]] = {}
    for n in nodes:
        for v in n.reads:
            consumers.setdefault(v.id, set()).add(n.index)
    groups = _groups(nodes, producer, ancestors)
    last = {max(n.index for n in g.nodes): g for g in groups.values()}
    out: list[OpRecord] = []
    for n in nodes:
        if n.role in ("extern", "alone"):
            out.append(n.record)
        elif n.index in last:
            out.append(_group_record(last[n.index], consumers))
    return tuple(out)
