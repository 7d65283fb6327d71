"""Turn one operator call into a counted record: its cost from the handle, the facts a lowering needs, its
dataflow, and the activation memory it adds. Views are only followed; every other call is costed."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import torch
from torch.utils._pytree import tree_map_only

from ..kinds import OpKind, Phase
from ..workload import OpRecord
from .attention_choice import SDPA, qkv, swaps_heads_and_sequence
from .dataflow import FlowTracker
from .handles import ZERO_COST, Cost, OpCall, TensorInfo, lookup
from .layout import CONVOLUTIONS, family, not_dense, reads_strided, refused_on_cuda
from .lowering import CountedOp, OpFacts, TensorFacts
from .memory import ActivationMemory
from .notes import Findings, Oversized
from .precision import DTYPE_NAME, op_dtype
from .tensors import TensorRoles, flat_tensors, itemsize

_COPIES = ("aten.clone", "aten.contiguous")


class Recorder:
    """The records of one run, in execution order, and the operators no handle could cost (``unsupported``).
    ``module_path()`` is the module running now."""

    def __init__(self, dtype: str, tensors: TensorRoles, memory: ActivationMemory, flow: FlowTracker,
                 found: Findings, module_path: Callable[[], str]):
        self.dtype = dtype
        self.tensors = tensors
        self.memory = memory
        self.flow = flow
        self.found = found
        self.module_path = module_path
        self.records: list[CountedOp] = []
        self.unsupported: Counter[str] = Counter()
        self.phase = Phase.FORWARD   # the part of a training step being counted (records carry it)

    def record_marker(self, name: str) -> None:
        """A zero-cost record naming a call whose kernels were counted one by one (masked attention)."""
        self.records.append(CountedOp(OpRecord(
            name=name, kind=OpKind.ATTENTION, module=self.module_path(), flops=0.0, bytes_read=0.0,
            bytes_written=0.0, dtype=self.dtype, kernels=0, phase=self.phase)))

    def record(self, name: str, args: tuple, kwargs: dict, out) -> None:
        """Count one operator call: views are only followed; every other call is costed and recorded."""
        ins, outs = flat_tensors((args, kwargs)), flat_tensors(out)
        if name in ZERO_COST:
            self._follow_view(name, args, ins, outs)
            self.flow.alias(outs, ins)
            self.memory.alias(outs, ins)
            return
        if refused_on_cuda(name, ins, outs):
            self.found.oversized.append(Oversized(name, outs[0].numel(), self.module_path()))
        call, infos = self._call(name, args, kwargs, ins, outs)
        facts = self._facts(name, args, kwargs, ins, outs, infos)
        flow = self.flow.flow(ins, outs, self.tensors.param_ids)
        self.records.append(CountedOp(self._op_record(call, self._cost(call), ins), facts, flow))
        if name == SDPA and len(outs) == 1 and outs[0].dim() == 4:
            self.tensors.hold(outs, self.tensors.attention_outputs, keep=False)
        self.memory.track(outs, ins, self.tensors.param_ids)

    def _follow_view(self, name: str, args: tuple, ins: list[torch.Tensor], outs: list[torch.Tensor]) -> None:
        """A view of a weight is still a weight; a heads/sequence transpose of an attention output is noted."""
        roles = self.tensors
        if any(roles.is_param(t) for t in ins):
            roles.hold(outs, roles.param_ids)
        if ins and id(ins[0]) in roles.attention_outputs and swaps_heads_and_sequence(name, args):
            roles.hold(outs, roles.attention_transposed, keep=False)

    def _call(self, name: str, args: tuple, kwargs: dict, ins: list[torch.Tensor],
              outs: list[torch.Tensor]) -> tuple[OpCall, dict[int, TensorInfo]]:
        """The call as a handle sees it (tensors as TensorInfo), and the TensorInfo of each input by id."""
        infos: dict[int, TensorInfo] = {}

        def to_info(t: torch.Tensor) -> TensorInfo:
            if id(t) not in infos:
                infos[id(t)] = self.tensors.info(t)
            return infos[id(t)]

        call = OpCall(
            name=name,
            args=tree_map_only(torch.Tensor, to_info, tuple(args)),
            kwargs=tree_map_only(torch.Tensor, to_info, dict(kwargs)),
            inputs=tuple({id(t): to_info(t) for t in ins}.values()),  # a tensor used twice is read once
            outputs=tuple(self.tensors.info(t) for t in outs),
        )
        return call, infos

    def _cost(self, call: OpCall) -> Cost:
        """The handle's cost; an operator without one (or whose arguments it cannot read) is reported."""
        handle = lookup(call.name)
        if handle is not None:
            try:
                return handle(call)
            except (IndexError, TypeError, ValueError, AttributeError, KeyError):
                pass  # arguments the formula does not understand: report it, don't guess
        self.unsupported[call.name] += 1
        return Cost(OpKind.OTHER, 0.0)

    def _op_record(self, call: OpCall, cost: Cost, ins: list[torch.Tensor]) -> OpRecord:
        read = cost.bytes_read if cost.bytes_read is not None else sum(i.nbytes for i in call.inputs)
        written = cost.bytes_written if cost.bytes_written is not None else sum(o.nbytes for o in call.outputs)
        params = cost.param_bytes if cost.param_bytes is not None else sum(
            i.nbytes for i in call.inputs if i.is_param)
        activations = [t for t in ins if not self.tensors.is_param(t)]
        return OpRecord(
            name=call.name, kind=cost.kind, module=self.module_path(), flops=float(cost.flops),
            bytes_read=float(read), bytes_written=float(written), param_bytes=float(params),
            dtype=op_dtype(self.dtype, cost.kind, ins), kernels=cost.kernels, gemm=cost.gemm,
            strided=reads_strided(cost.kind, activations), family=family(call, ins), phase=self.phase)

    def _facts(self, name: str, args: tuple, kwargs: dict, ins: list[torch.Tensor], outs: list[torch.Tensor],
               infos: dict[int, TensorInfo]) -> OpFacts | None:
        """What a lowering needs to know about this call (None: nothing)."""
        if name in CONVOLUTIONS:
            return self._conv_facts(args, outs, infos)
        if name == SDPA:
            q_k_v = qkv(args, kwargs)
            if not all(isinstance(t, torch.Tensor) for t in q_k_v):
                return None
            return OpFacts(attention_inputs=tuple(TensorFacts(
                t.numel(), t.size(-1), itemsize(t), DTYPE_NAME.get(t.dtype, self.dtype)) for t in q_k_v))
        if name in _COPIES and ins and id(ins[0]) in self.tensors.attention_transposed:
            return OpFacts(copies_attention_output=True)
        return None

    def _conv_facts(self, args: tuple, outs: list[torch.Tensor], infos: dict[int, TensorInfo]) -> OpFacts | None:
        """A convolution's bias (added after cuDNN) and its input when strided (copied dense first)."""
        x, bias = args[0] if args else None, args[2] if len(args) > 2 else None
        copy = infos[id(x)].nbytes if isinstance(x, torch.Tensor) and not_dense(x) else 0.0
        if not isinstance(bias, torch.Tensor) or not outs:
            return OpFacts(conv_input_copy_bytes=copy) if copy else None
        return OpFacts(conv_bias_bytes=infos[id(bias)].nbytes, conv_out_elements=outs[0].numel(),
                       conv_out_bytes=float(sum(t.numel() * itemsize(t) for t in outs)),
                       conv_input_copy_bytes=copy)
