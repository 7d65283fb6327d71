"""Count a PyTorch model: run it once and turn every ATen operator call into an :class:`OpRecord`.

The engine is a ``TorchDispatchMode`` (it sees each ATen operator with its real shapes after autograd and
composite decomposition) on meta tensors, or on fake tensors when the model is real: no weight is ever
materialised or computed on, so a 70B-parameter model counts in seconds and little memory. A thin
``TorchFunctionMode`` catches ``F.scaled_dot_product_attention`` and ``F.rms_norm`` before they decompose
(on meta/CPU tensors SDPA runs its math path: matmul, softmax, matmul) and counts each as the one fused
kernel it is on a GPU. Forward hooks give each operator the path of the module it ran in.

The counter records what the model computes, plus the facts (``lowering.OpFacts``) a lowering needs;
``count_module`` then applies a lowering (``lowering.lower_pytorch_cuda`` by default) as its own step.

Why not fvcore's JIT trace: in this torch version ``torch.jit.trace`` of a convolution on the meta device
fails (``TypeError: cond must be a bool``), and a trace on real tensors needs the model's memory.

Why forward hooks rather than ``torch.utils.module_tracker.ModuleTracker``: its ``parents`` is an unordered
set of names (the innermost module, which each record needs, is not known), its names carry the root's
class name ("ResNet.layer1.0", where ``named_modules`` gives "layer1.0"), a module entered twice collapses to
one entry, and its hooks are global (every module in the process, not this model's).
"""

from __future__ import annotations

import contextlib
import logging
import math
import warnings
import weakref
from collections import Counter
from collections.abc import Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map_only

from ..errors import CountingError, ForwardFailed, InputError, ModelFileError, one_line
from ..units import AMP, parse_precision
from ..workload import OpRecord, Workload
from .amp import Autocast
from .capture import capture_state
from .conv_backend import depthwise_family
from .fusion import FlowTracker
from .handles import ZERO_COST, Cost, OpCall, TensorInfo, int_tuple, lookup
from .host_copies import CPU_COPY_NOTE, copies_host_data, copies_python_data
from .host_data import HostData, copies_to_device, makes_host_data, moves_to_device
from .host_reads import HostReads
from .library_models import LibraryModel
from .lowering import PYTORCH_CUDA, CountedOp, OpFacts, TensorFacts, lower
from .mha import MHA_FUNCTION
from .mha import fused_on_cuda as mha_fused_on_cuda
from .mha import record_fused as record_mha
from .model_file import ModelFile
from .pycalls import PythonCalls
from .sources import ModelSource, load_model

# Precisions a model can be counted in. fp64/fp32/tf32/fp16/bf16 run the model in that torch dtype (tf32:
# fp32 storage, matrix operators labelled tf32). fp8/int8/int4/fp4 have no eager kernels for most operators:
# the model runs in fp16 (same shapes) and ``scaling.retype`` rescales the floating-point bytes to the
# narrow element size (weights and activations quantised together, as TensorRT-style inference runs).
COUNT_DTYPES: tuple[str, ...] = ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int8", "int4", "fp4", AMP)
_NARROW = frozenset({"fp8", "int8", "int4", "fp4"})
_DTYPE_NAME = {torch.float64: "fp64", torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16"}
_TORCH_DTYPE = {name: dt for dt, name in _DTYPE_NAME.items()} | {"tf32": torch.float32, AMP: torch.float32}
_TENSOR_CORE_KINDS = frozenset({"matmul", "conv", "attention"})

_SDPA = "aten.scaled_dot_product_attention"
_CONVOLUTIONS = ("aten.convolution", "aten._convolution")
_COPIES = ("aten.clone", "aten.contiguous")

# Functions counted before they decompose, as the single fused kernel they are on a GPU.
_FUSED = {
    F.scaled_dot_product_attention: _SDPA,
    F.rms_norm: "aten.rms_norm",
    torch.rms_norm: "aten.rms_norm",
}

# Operators whose kernels differ within their kind (OpRecord.family): the roofline reads the family, never
# an ATen name.
OP_FAMILY = {"aten.native_batch_norm": "batch_norm", "aten.native_layer_norm": "layer_norm",
             "aten.layer_norm": "layer_norm", "aten.native_group_norm": "group_norm",
             "aten.group_norm": "group_norm", "aten.upsample_bilinear2d": "bilinear_upsample"}

# Memory-bound kinds whose kernels slow down when an input is a permuted or transposed view.
_STRIDE_SENSITIVE_KINDS = ("elementwise", "norm", "softmax", "reduction", "copy")


class UnsupportedOpWarning(UserWarning):
    """Some operators have no counting formula and were counted as zero operations."""


def resolve_dtype(dtype: str | None, module: torch.nn.Module | None = None) -> str:
    """A precision name from COUNT_DTYPES; None means the module's own floating dtype (fp32 if none)."""
    if dtype is None:
        for p in module.parameters() if module is not None else ():
            if p.is_floating_point():
                return _DTYPE_NAME.get(p.dtype, "fp32")
        return "fp32"
    try:
        return parse_precision(dtype, COUNT_DTYPES)
    except InputError as exc:
        raise CountingError(f"cannot count in {dtype!r}: {exc}", hint=exc.hint) from None


def _flat_tensors(tree) -> list[torch.Tensor]:
    return [t for t in tree_flatten(tree)[0] if isinstance(t, torch.Tensor)]


def _float_dtype(tensors: Sequence[torch.Tensor]) -> torch.dtype | None:
    """The dtype of the largest floating-point input (the one the kernel computes in)."""
    floats = [t for t in tensors if t.is_floating_point()]
    return max(floats, key=lambda t: t.numel()).dtype if floats else None


def _strided(t: torch.Tensor) -> bool:
    """A permuted/transposed view: not contiguous in either standard layout. Broadcast views (a zero
    stride, e.g. a bias) and scalars are not strided in this sense."""
    try:
        if t.dim() < 2 or t.numel() <= 1 or 0 in t.stride():
            return False
        return not (t.is_contiguous() or t.is_contiguous(memory_format=torch.channels_last)
                    if t.dim() == 4 else t.is_contiguous())
    except (RuntimeError, NotImplementedError):
        return False


def _one_dense_layout(tensors: Sequence[torch.Tensor]) -> bool:
    """Every full-size input of an elementwise operator is dense in one and the same memory order (a permuted
    view of a contiguous tensor, such as a transpose). PyTorch's TensorIterator then reorders the dimensions
    and runs its vectorised kernel in memory order: data2vec-audio's GELU on a transposed (batch, channels,
    time) view moved 3.1 TB/s at fp16 batch 32 (H200 profile, blind round 21), as a contiguous one does.
    Broadcast inputs (a zero stride) and scalars do not count."""
    full = [t for t in tensors if t.dim() >= 2 and t.numel() > 1 and 0 not in t.stride()]
    if not full:
        return False
    first = full[0]
    if any(t.shape != first.shape or t.stride() != first.stride() for t in full):
        return False
    order = sorted(range(first.dim()), key=lambda d: -first.stride()[d])   # outermost first
    return first.permute(order).is_contiguous()


def _not_dense(x: torch.Tensor) -> bool:
    """A convolution input PyTorch copies before cuDNN: dense in neither NCHW nor channels-last once a 1-D
    input is viewed as 2-D (N, C, 1, L), as ``_convolution`` does (so a transposed (N, L, C) sequence is a
    channels-last input, not a copy, while a channel slice of a batch is one)."""
    try:
        x = x.unsqueeze(2) if x.dim() == 3 else x
        layout = {4: torch.channels_last, 5: torch.channels_last_3d}.get(x.dim())
        if layout is None or x.numel() <= 1:
            return False
        return not (x.is_contiguous() or x.is_contiguous(memory_format=layout))
    except (RuntimeError, NotImplementedError):
        return False


_CONVOLUTIONS = ("aten.convolution", "aten._convolution")


def _channels_last(t: torch.Tensor) -> bool:
    return t.dim() == 4 and not t.is_contiguous() and t.is_contiguous(memory_format=torch.channels_last)


def _cudnn_output_layout(name: str, args: tuple, out):
    """cuDNN writes the output of a convolution with a channels-last input channels-last
    (``cudnn_conv_suggest_memory_format``); the meta kernel writes it NCHW. Restride it as the GPU lays it
    out, so the layouts downstream (residual adds, norms, upsampling, the next depthwise convolution) are the
    GPU's."""
    if name in _CONVOLUTIONS and args and isinstance(args[0], torch.Tensor) and _channels_last(args[0]) \
            and isinstance(out, torch.Tensor) and out.dim() == 4 and out.is_contiguous():
        return out.contiguous(memory_format=torch.channels_last)
    return out


def _family(call: OpCall, ins: list[torch.Tensor]) -> str:
    """``OP_FAMILY``; bilinear upsampling of a channels-last input runs PyTorch's NHWC kernel (parallel over
    every element), not the NCHW one the family stands for (HF SegFormer's decode head: 2.85 ms at batch 128
    where the NCHW kernel takes 30); a depthwise convolution PyTorch keeps from cuDNN (``conv_backend``) unless
    its input is channels-last (cuDNN's NHWC kernels take it)."""
    name = call.name
    if name in _CONVOLUTIONS and len(ins) >= 2:
        x = ins[0]
        if _channels_last(x):
            return ""
        return depthwise_family(tuple(x.shape), tuple(ins[1].shape), int_tuple(call.arg(3, "stride", 1)),
                                int_tuple(call.arg(5, "dilation", 1)), int(call.arg(8, "groups", 1)),
                                bool(call.arg(6, "transposed", False)))
    family = OP_FAMILY.get(name, "")
    if family == "bilinear_upsample" and ins and _channels_last(ins[0]):
        return ""
    return family


def _swaps_heads_and_sequence(name: str, args: tuple) -> bool:
    """transpose(1, 2) or permute(0, 2, 1, 3) of a 4-D tensor."""
    if name == "aten.transpose" and len(args) >= 3:
        return {int(args[1]) % 4, int(args[2]) % 4} == {1, 2}
    if name == "aten.permute" and len(args) >= 2:
        return [int(d) % 4 for d in args[1]] == [0, 2, 1, 3]
    return False


def _qkv(args: tuple, kwargs: dict) -> tuple:
    """query, key and value of an SDPA call, by position or keyword."""
    return tuple(args[i] if len(args) > i else kwargs.get(n) for i, n in enumerate(("query", "key", "value")))


class _State:
    """Everything one counting run accumulates."""

    def __init__(self, dtype: str, param_tensors: Sequence[torch.Tensor], strict: bool = False):
        self.dtype = dtype
        self.host = HostReads(strict, lambda: self.module)
        self.records: list[CountedOp] = []
        self.unsupported: Counter[str] = Counter()
        self.stack: list[str] = []
        self.module_calls = 0                        # nn.Module forward calls (host work in eager mode)
        self.empty_module_calls = 0                  # ... of which ran no operator (Identity, eval Dropout)
        self.cpu_copies = 0                          # copies of CPU-made tensors to the device in forward
        self.host_data = HostData()                  # tensors the forward makes on the host, no kernels
        self.oversized: list[tuple[str, int, str]] = []  # (operator, output elements, module) CUDA refuses
        self.records_at_entry: list[int] = []
        self.python = PythonCalls()                  # other Python calls (host work in eager mode)
        self.suppress = 0
        self._keep = list(param_tensors)          # keeps ids stable while counting
        self.param_ids = {id(t) for t in self._keep}
        self.live_bytes = 0.0
        self.peak_bytes = 0.0
        self._tracked: set[int] = set()
        self.attention_outputs: set[int] = set()     # SDPA outputs ...
        self.attention_transposed: set[int] = set()  # ... and their transpose(1, 2) views
        self.flow = FlowTracker()                    # dataflow, for the inductor lowering
        self.autocast: Autocast | None = None        # dtype "amp": autocast's per-operator precision
        self.autocast_off: list[bool] = []           # the model's own torch.autocast regions: disabled?

    def _hold(self, tensors: list[torch.Tensor], ids: set[int], keep: bool = True) -> None:
        """Remember tensors by id: kept alive (``keep``), or forgotten when freed, so no id is reused."""
        for t in tensors:
            ids.add(id(t))
            if keep:
                self._keep.append(t)
            else:
                weakref.finalize(t, ids.discard, id(t))

    def weight_key(self, t: torch.Tensor) -> int | None:
        """The value behind a parameter (or a view of one), None for an activation: autocast's cache key."""
        return self.flow.value_id(t) if id(t) in self.param_ids else None

    @property
    def module(self) -> str:
        """Path of the innermost module running now ("" for the top level)."""
        return self.stack[-1] if self.stack else ""

    # --- tensors -------------------------------------------------------------------------------------
    def casting(self) -> bool:
        """--dtype amp casts here: not while counting is suppressed or inside a region the model's own code
        runs with autocast disabled (``torch.autocast(..., enabled=False)``)."""
        return self.autocast is not None and not self.suppress and not (self.autocast_off and self.autocast_off[-1])

    def itemsize(self, t: torch.Tensor) -> float:
        return float(t.element_size())

    def info(self, t: torch.Tensor) -> TensorInfo:
        shape = tuple(int(s) for s in t.shape)
        unique = None
        try:
            stride = t.stride()
            if 0 in stride:
                unique = math.prod(s for s, st in zip(shape, stride, strict=True) if st != 0)
        except (RuntimeError, NotImplementedError):  # sparse or nested tensors have no strides
            pass
        return TensorInfo(shape, self.itemsize(t), id(t) in self.param_ids, unique)

    def track(self, outputs: list[torch.Tensor], inputs: list[torch.Tensor]) -> None:
        """Activation memory: a new output is alive until its Python object is freed."""
        for t in outputs:
            key = id(t)
            if key in self._tracked or key in self.param_ids or any(t is i for i in inputs):
                continue
            nbytes = t.numel() * self.itemsize(t)
            self._tracked.add(key)
            self.live_bytes += nbytes
            weakref.finalize(t, self._free, key, nbytes)
        self.peak_bytes = max(self.peak_bytes, self.live_bytes)

    def _free(self, key: int, nbytes: float) -> None:
        self._tracked.discard(key)
        self.live_bytes -= nbytes

    # --- operators -----------------------------------------------------------------------------------
    def record_marker(self, name: str) -> None:
        """A zero-cost record naming a call whose kernels were counted one by one (masked attention)."""
        self.records.append(CountedOp(OpRecord(
            name=name, kind="attention", module=self.module, flops=0.0, bytes_read=0.0, bytes_written=0.0,
            dtype=self.dtype, kernels=0)))

    def record(self, name: str, args: tuple, kwargs: dict, out) -> None:
        """Count one operator call: views are only followed; every other call is costed and recorded."""
        ins, outs = _flat_tensors((args, kwargs)), _flat_tensors(out)
        if name in ZERO_COST:
            self._follow_view(name, args, ins, outs)
            self.flow.alias(outs, ins)
            return
        if _refused_on_cuda(name, ins, outs):
            self.oversized.append((name, outs[0].numel(), self.module))
        call, infos = self._call(name, args, kwargs, ins, outs)
        facts = self._facts(name, args, kwargs, ins, outs, infos)
        flow = self.flow.flow(ins, outs, self.param_ids)
        self.records.append(CountedOp(self._op_record(call, self._cost(call), ins), facts, flow))
        if name == _SDPA and len(outs) == 1 and outs[0].dim() == 4:
            self._hold(outs, self.attention_outputs, keep=False)
        self.track(outs, ins)

    def _follow_view(self, name: str, args: tuple, ins: list[torch.Tensor], outs: list[torch.Tensor]) -> None:
        """A view of a weight is still a weight; a heads/sequence transpose of an attention output is noted."""
        if any(id(t) in self.param_ids for t in ins):
            self._hold(outs, self.param_ids)
        if ins and id(ins[0]) in self.attention_outputs and _swaps_heads_and_sequence(name, args):
            self._hold(outs, self.attention_transposed, keep=False)

    def _call(self, name: str, args: tuple, kwargs: dict, ins: list[torch.Tensor],
              outs: list[torch.Tensor]) -> tuple[OpCall, dict[int, TensorInfo]]:
        """The call as a handle sees it (tensors as TensorInfo), and the TensorInfo of each input by id."""
        infos: dict[int, TensorInfo] = {}

        def to_info(t: torch.Tensor) -> TensorInfo:
            if id(t) not in infos:
                infos[id(t)] = self.info(t)
            return infos[id(t)]

        call = OpCall(
            name=name,
            args=tree_map_only(torch.Tensor, to_info, tuple(args)),
            kwargs=tree_map_only(torch.Tensor, to_info, dict(kwargs)),
            inputs=tuple({id(t): to_info(t) for t in ins}.values()),  # a tensor used twice is read once
            outputs=tuple(self.info(t) for t in outs),
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
        return Cost("other", 0.0)

    def _op_record(self, call: OpCall, cost: Cost, ins: list[torch.Tensor]) -> OpRecord:
        read = cost.bytes_read if cost.bytes_read is not None else sum(i.nbytes for i in call.inputs)
        written = cost.bytes_written if cost.bytes_written is not None else sum(o.nbytes for o in call.outputs)
        params = cost.param_bytes if cost.param_bytes is not None else sum(
            i.nbytes for i in call.inputs if i.is_param)
        activations = [t for t in ins if id(t) not in self.param_ids]
        strided = cost.kind in _STRIDE_SENSITIVE_KINDS and any(_strided(t) for t in activations)
        if strided and cost.kind == "elementwise" and _one_dense_layout(activations):
            strided = False   # TensorIterator walks a permuted but dense layout in memory order
        return OpRecord(
            name=call.name, kind=cost.kind, module=self.module, flops=float(cost.flops), bytes_read=float(read),
            bytes_written=float(written), param_bytes=float(params), dtype=self._dtype(cost.kind, ins),
            kernels=cost.kernels, gemm=cost.gemm, strided=strided, family=_family(call, ins))

    def _dtype(self, kind: str, ins: list[torch.Tensor]) -> str:
        """The precision an operator computes in: the model's, fp32 for non-matrix work of a tf32 model, or
        the inputs' own when they differ (an fp32 upcast inside fp16 work)."""
        dtype = self.dtype
        if dtype == "tf32" and kind not in _TENSOR_CORE_KINDS:
            dtype = "fp32"
        actual = _float_dtype(ins)
        if actual is not None and actual != _TORCH_DTYPE.get(dtype):
            dtype = _DTYPE_NAME.get(actual, dtype)
        return dtype

    def _facts(self, name: str, args: tuple, kwargs: dict, ins: list[torch.Tensor], outs: list[torch.Tensor],
               infos: dict[int, TensorInfo]) -> OpFacts | None:
        """What a lowering needs to know about this call (None: nothing)."""
        if name in _CONVOLUTIONS:
            return self._conv_facts(args, outs, infos)
        if name == _SDPA:
            qkv = _qkv(args, kwargs)
            if not all(isinstance(t, torch.Tensor) for t in qkv):
                return None
            return OpFacts(attention_inputs=tuple(TensorFacts(
                t.numel(), t.size(-1), self.itemsize(t), _DTYPE_NAME.get(t.dtype, self.dtype)) for t in qkv))
        if name in _COPIES and ins and id(ins[0]) in self.attention_transposed:
            return OpFacts(copies_attention_output=True)
        return None


    def _conv_facts(self, args: tuple, outs: list[torch.Tensor], infos: dict[int, TensorInfo]) -> OpFacts | None:
        """A convolution's bias (added after cuDNN) and its input when strided (copied dense first)."""
        x, bias = args[0] if args else None, args[2] if len(args) > 2 else None
        copy = infos[id(x)].nbytes if isinstance(x, torch.Tensor) and _not_dense(x) else 0.0
        if not isinstance(bias, torch.Tensor) or not outs:
            return OpFacts(conv_input_copy_bytes=copy) if copy else None
        return OpFacts(conv_bias_bytes=infos[id(bias)].nbytes, conv_out_elements=outs[0].numel(),
                       conv_out_bytes=float(sum(t.numel() * self.itemsize(t) for t in outs)),
                       conv_input_copy_bytes=copy)


class _DispatchCounter(TorchDispatchMode):
    def __init__(self, state: _State):
        super().__init__()
        self.state = state

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = str(func.overloadpacket)
        on_host = self.state.host_data.runs_on_host(_flat_tensors((args, kwargs))) and not copies_to_device(kwargs)
        if self.state.host.handles(name):
            return self.state.host.answer(name, func, args, kwargs, on_host)
        if on_host:
            return self._on_host(func, args, kwargs)
        if self.state.casting():  # --dtype amp: autocast's casts
            args, kwargs = self.state.autocast.cast(name, args, kwargs, self.state.weight_key)
        from .meta_kernels import lookup as shape_function  # meta kernels that refuse dtypes the GPU runs

        self.state.python.depth += 1
        try:
            out = (shape_function(name) or func)(*args, **kwargs)
        finally:
            self.state.python.depth -= 1
        out = _cudnn_output_layout(name, args, out)
        if not self.state.suppress and copies_host_data(name, args, out):
            self.state.cpu_copies += 1
        if not self.state.suppress:
            self.state.record(name, args, kwargs, out)
        return out

    def _on_host(self, func, args: tuple, kwargs: dict):
        """Run an operator on host data: no kernel, nothing recorded; its outputs are host data too."""
        out = func(*args, **kwargs)
        self.state.host_data.mark(_flat_tensors(out))
        return out


class _FusedCounter(TorchFunctionMode):
    def __init__(self, state: _State):
        super().__init__()
        self.state = state

    def _fused_mha(self, func, args: tuple, kwargs: dict):
        """``nn.MultiheadAttention`` without weights: run uncounted, record its three CUDA kernels (mha.py)."""
        self.state.suppress += 1
        try:
            out = func(*args, **kwargs)
            with torch.no_grad():
                calls = []
                record_mha(lambda *call: calls.append(call), args, kwargs, out)
        finally:
            self.state.suppress -= 1
        views_of_weights = [t for name, call_args, _, _ in calls for t in call_args
                            if isinstance(t, torch.Tensor) and t._base is not None and id(t._base) in self.state.param_ids]
        self.state._hold(views_of_weights, self.state.param_ids)   # the transposed projection weights
        for call in calls:
            self.state.record(*call)
        return out

    def _host_factory(self, func, args: tuple, kwargs: dict):
        self.state.host_data.making += 1
        try:
            out = func(*args, **kwargs)
        finally:
            self.state.host_data.making -= 1
        self.state.host_data.mark(_flat_tensors(out))
        return out

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if copies_python_data(func, args, kwargs):
            self.state.cpu_copies += 1
        if makes_host_data(func, args, kwargs):
            return self._host_factory(func, args, kwargs)
        if moves_to_device(func, args, kwargs):
            if self.state.host_data.faked_copy(args):
                self.state.cpu_copies += 1
            out = func(*args, **kwargs)
            self.state.host_data.unmark(_flat_tensors(out))
            return out
        if self.state.casting():  # before conv2d's own dtype checks
            args, kwargs = self.state.autocast.cast_function(func, args, kwargs, self.state.weight_key)
        if func is MHA_FUNCTION and not self.state.suppress and mha_fused_on_cuda(args, kwargs):
            return self._fused_mha(func, args, kwargs)
        name = _FUSED.get(func) if not self.state.suppress else None
        if name is None:
            return func(*args, **kwargs)
        if name == _SDPA and not _fused_sdpa_possible(args, kwargs):
            # No fused kernel takes these inputs, so PyTorch runs the math path on CUDA (profiled on the H200:
            # Swin-T's 5-D windows, T5's permuted position bias): upcast to fp32, bmm, mask add, safe softmax,
            # bmm. It decomposes the same way on meta tensors, so let it and count each kernel; a zero-cost
            # marker keeps the attention call visible.
            out = func(*args, **kwargs)
            self.state.record_marker(name)
            return out
        self.state.suppress += 1
        try:
            out = func(*args, **kwargs)
        finally:
            self.state.suppress -= 1
        self.state.record(name, args, kwargs, out)
        return out


_FLASH_MAX_HEAD_DIM = 256


def _fused_sdpa_possible(args: tuple, kwargs: dict) -> bool:
    """Whether a fused SDPA kernel (flash, memory-efficient, cuDNN) can take these inputs on CUDA.

    PyTorch's kernel selection (aten/src/ATen/native/transformers/cuda/sdp_utils.cpp) rejects every fused
    kernel when query/key/value are not 4-D or when the last dimension of query, key, value or attn_mask does
    not have stride 1, and falls back to the math path. A contiguous mask (boolean or float) is taken by the
    memory-efficient kernel. Measured on the H200: DistilBERT's (batch, 1, 1, seq) boolean mask ran fused;
    Swin-T (5-D windows) and T5 (a permuted position bias) ran the math path.

    Head dimension (``check_head_dim_size_flash``, ``check_head_dim_size_mem_efficient``): flash takes 16-bit
    inputs without a mask up to 256 (it pads the head dimension to a multiple of 8); the memory-efficient and
    cuDNN kernels need it divisible by 16 bytes' worth of elements (8 in 16 bits, 4 in fp32). So a masked or
    fp32 call with an odd head dimension runs the math path: TinyBERT (head dimension 26) under CUDA-graph
    capture, where transformers passes its mask (H200, blind round 18: 1.22 ms replayed at b32, 0.48 ms of
    eager kernels).
    """
    mask = args[3] if len(args) > 3 else kwargs.get("attn_mask")
    tensors = [t for t in _qkv(args, kwargs) if isinstance(t, torch.Tensor)]
    if len(tensors) < 3 or any(t.dim() != 4 for t in tensors):
        return False
    masked = isinstance(mask, torch.Tensor)
    if masked:
        tensors.append(mask)
    if not all(t.size(-1) == 1 or t.stride(-1) == 1 for t in tensors):
        return False
    q, k, v = tensors[:3]
    half = q.dtype in (torch.float16, torch.bfloat16)
    flash = half and not masked and q.size(-1) == k.size(-1) == v.size(-1) <= _FLASH_MAX_HEAD_DIM
    align = 8 if half else 4
    return flash or (q.size(-1) == k.size(-1) and q.size(-1) % align == 0 and v.size(-1) % align == 0)


# --- count_module, step by step ---------------------------------------------------------------------------
def _cast_input(a, compute: torch.dtype, on_meta: bool):
    """An input at the counting dtype, on the meta device with a meta model; a meta input of a real model
    becomes an uninitialised CPU tensor (fake tensors are made from it; torch 2.14's fake mode refuses a meta
    input beside CPU weights)."""
    if isinstance(a, torch.Tensor):
        if a.is_floating_point():
            a = a.to(compute)
        if on_meta and not a.is_meta:
            a = a.to("meta")
        elif not on_meta and a.is_meta:
            a = torch.empty(a.shape, dtype=a.dtype)
    return a


def _prepare(module: torch.nn.Module, inputs, dtype: str) -> tuple[tuple, dict, list[torch.Tensor], bool]:
    """Put the module in eval mode at ``dtype`` (in place) and cast the inputs to match: (positional inputs,
    keyword inputs (``inputs`` given as a dict), the module's parameters and buffers, whether they are all on
    the meta device)."""
    compute = _TORCH_DTYPE[dtype]
    module.eval()
    module.to(compute)
    tensors = list(module.parameters()) + list(module.buffers())
    on_meta = all(t.is_meta for t in tensors)
    if isinstance(inputs, dict):
        return (), {k: _cast_input(v, compute, on_meta) for k, v in inputs.items()}, tensors, on_meta
    items = inputs if isinstance(inputs, (tuple, list)) else (inputs,)
    return tuple(_cast_input(a, compute, on_meta) for a in items), {}, tensors, on_meta


def _leading_batch(args) -> int:
    """The first dimension of the first input with one (1 when none has)."""
    first = next((a for a in _flat_tensors(args) if a.dim() > 0), None)
    return int(first.shape[0]) if first is not None else 1


def _path_hooks(module: torch.nn.Module, state: _State) -> list:
    """Forward pre/post hooks that keep ``state.stack`` at the path of the module running now."""

    def leave(*_args) -> None:  # returns None: a forward hook's return value would replace the output
        state.stack.pop()
        if len(state.records) == state.records_at_entry.pop():
            state.empty_module_calls += 1

    def enter(path: str) -> None:
        state.stack.append(path)
        state.records_at_entry.append(len(state.records))
        state.module_calls += 1

    hooks = []
    for path, sub in module.named_modules():
        hooks.append(sub.register_forward_pre_hook(lambda _m, _a, path=path: enter(path)))
        hooks.append(sub.register_forward_hook(leave, always_call=True))
    return hooks


@contextmanager
def _autocast_regions(state: _State):
    """The model's own ``torch.autocast`` regions. One opened as ``torch.autocast(device_type=x.device.type)``
    asks for the meta device's autocast, which torch does not have ("unsupported scalarType", timm's
    EfficientViT): it gets the CUDA device type its tensors would have on the GPU. Torch's autocast acts on the
    CUDA dispatch key, not on meta tensors; ``--dtype amp`` is this counter's own casts, which a region with
    ``enabled=False`` switches off until it closes (EfficientViT's attention runs in fp32 that way)."""
    from torch.amp import autocast_mode

    cls = autocast_mode.autocast
    init, enter, leave = cls.__init__, cls.__enter__, cls.__exit__

    def on_cuda(self, device_type, *args, **kwargs):
        init(self, "cuda" if device_type == "meta" else device_type, *args, **kwargs)

    def entering(self):
        state.autocast_off.append(not getattr(self, "_enabled", True))
        return enter(self)

    def leaving(self, *exc):
        state.autocast_off.pop()
        return leave(self, *exc)

    cls.__init__, cls.__enter__, cls.__exit__ = on_cuda, entering, leaving
    try:
        yield
    finally:
        cls.__init__, cls.__enter__, cls.__exit__ = init, enter, leave


def _run_forward(module: torch.nn.Module, args: tuple, kwargs: dict, state: _State, on_meta: bool,
                 label: str, captured: bool = False) -> bool:
    """One forward pass under the counting modes (fake tensors unless the model is on the meta device), as
    it runs under CUDA-graph capture when ``captured`` (``capture.py``). Returns whether the forward asked."""
    hooks = _path_hooks(module, state)
    fake = None
    if not on_meta:
        from torch._subclasses.fake_tensor import FakeTensorMode

        fake = FakeTensorMode(allow_non_fake_inputs=True)
    # torch 2.14 logs "failed while attempting to run meta for ..." before raising; the error is ours to say
    fake_log = logging.getLogger("torch._subclasses.fake_tensor")
    log_level = fake_log.level
    fake_log.setLevel(logging.CRITICAL)
    try:
        with torch.no_grad():
            if fake is not None:
                fake.__enter__()
            try:
                with (capture_state(captured) as probe, _DispatchCounter(state), _FusedCounter(state),
                      state.python, _autocast_regions(state)):
                    module(*args, **kwargs)
            finally:
                if fake is not None:
                    fake.__exit__(None, None, None)
    except CountingError:
        raise
    except Exception as exc:  # the model's own code failed: say where, in one line
        detail = one_line(exc)
        raise ForwardFailed(f"{label}: the forward pass failed: {detail}", detail) from exc
    finally:
        fake_log.setLevel(log_level)
        for h in hooks:
            h.remove()
    return probe.asked


def _report_unsupported(label: str, unsupported: dict[str, int], strict: bool) -> None:
    """Warn about operators counted as zero operations (``strict``: raise CountingError)."""
    if not unsupported:
        return
    listing = ", ".join(f"{op} ({n} call{'s' if n > 1 else ''})" for op, n in unsupported.items())
    if strict:
        raise CountingError(
            f"{label}: {len(unsupported)} operator(s) have no counting formula: {listing}",
            hint="drop --strict to count them as zero operations (their bytes are still counted), or "
                 "add a handle in tops_advisor/counting/handles.py")
    warnings.warn(f"{label}: no counting formula for {listing}; counted as zero operations",
                  UnsupportedOpWarning, stacklevel=3)


def count_module(module: torch.nn.Module, inputs, dtype: str | None = None, *, name: str | None = None,
                 batch: int | None = None, strict: bool = False, source: str = "",
                 lowering: str = PYTORCH_CUDA, captured: bool = False) -> Workload:
    """Count one forward pass of ``module`` on ``inputs`` (a tensor, a tuple, or a dict of keyword inputs).

    ``dtype`` (fp32, tf32, fp16, bf16, fp8, int8; None: the module's own) casts the module's floating-point
    parameters and buffers *in place* (like ``module.half()``) and the floating-point inputs. Meta tensors
    are counted as they are; real tensors are replaced by fake ones, so nothing is computed either way.
    Unsupported operators are listed in ``unsupported_ops`` and warned about (``strict``: CountingError).
    ``lowering`` (``lowering.LOWERINGS``) turns the counted operators into the kernels a stack launches:
    "pytorch-cuda" (eager PyTorch on a CUDA GPU) or "none" (the operators as counted). ``captured``: the
    forward as it runs under CUDA-graph capture or torch.compile (``capture.py``; ``capture.captured_for``).
    """
    label = source or type(module).__name__
    dtype = resolve_dtype(dtype, module)
    if dtype in _NARROW:
        from ..scaling import retype

        base = count_module(module, inputs, "fp16", name=name, batch=batch, strict=strict, source=source,
                            lowering=lowering, captured=captured)
        return retype(base, dtype)
    args, kwargs, tensors, on_meta = _prepare(module, inputs, dtype)
    state = _State("fp32" if dtype == AMP else dtype, tensors, strict)
    if dtype == AMP:  # an fp32 model under autocast (counting/amp.py)
        state.autocast = Autocast(state.record)
    input_bytes = float(sum(a.numel() * state.itemsize(a) for a in _flat_tensors((args, kwargs))))
    state.live_bytes = state.peak_bytes = input_bytes
    asked = _run_forward(module, args, kwargs, state, on_meta, label, captured)
    ops = lower(lowering, state.records)

    params = {id(p): p for p in module.parameters()}.values()
    unsupported = dict(sorted(state.unsupported.items()))
    _report_unsupported(label, unsupported, strict)
    return Workload(
        name=name or type(module).__name__, batch=_leading_batch((args, kwargs)) if batch is None else batch,
        dtype=dtype, ops=ops, params=int(sum(p.numel() for p in params)),
        param_bytes=float(sum(p.numel() * state.itemsize(p) for p in params)), input_bytes=input_bytes,
        activation_peak_bytes=float(state.peak_bytes), unsupported_ops=unsupported, source=source,
        lowering=lowering, assumptions=tuple(state.host.assumptions), module_calls=state.module_calls,
        python_calls=state.python.calls, empty_module_calls=state.empty_module_calls, captured=captured,
        capture_sensitive=asked, notes=_notes(state, captured, asked))


_INT_MAX = 2**31 - 1
OVERSIZED_NOTE = ("its forward runs PyTorch's channels-last {op} on an output of {n:,} elements (module "
                  "'{module}'): the CUDA kernel refuses outputs of 2^31 - 1 elements or more, so this batch fails on "
                  "the GPU (measured: UperNet-ConvNeXt-S at batch 128, 512x512, on the H200); use a smaller batch")


def _refused_on_cuda(name: str, ins: list[torch.Tensor], outs: list[torch.Tensor]) -> bool:
    """PyTorch's NHWC bilinear upsampling kernel checks its output size
    (``upsample_bilinear2d_nhwc only supports output tensors with less than INT_MAX elements``)."""
    return (name == "aten.upsample_bilinear2d" and bool(ins) and bool(outs) and _channels_last(ins[0])
            and outs[0].numel() >= _INT_MAX)


CAPTURE_READ_NOTE = ("its forward reads a tensor's value on the host while captured ({n}x, first in module "
                     "'{module}'): CUDA-graph capture fails on that synchronisation, so graph and compiled "
                     "(CUDA-graph) latencies need the model changed first")
CAPTURED_NOTE = ("counted as its forward runs under CUDA-graph capture or torch.compile: it asks, and takes "
                 "another path there (transformers materialises the attention mask)")


def _notes(state: _State, captured: bool, asked: bool) -> tuple[str, ...]:
    """CUDA-graph capture failures the count can see (a copy from a CPU tensor; a host read while captured,
    e.g. Marian's fp16 ``torch.isfinite(h).all()`` check: measured on the H200, capture failed with
    cudaErrorStreamCaptureUnsupported), then whether the captured path differs from the eager one."""
    on_capture_path = captured or not asked   # a forward that never asks runs the same path when captured
    notes = (CPU_COPY_NOTE.format(n=state.cpu_copies),) if state.cpu_copies and on_capture_path else ()
    if state.oversized:
        op, n, module = max(state.oversized, key=lambda o: o[1])
        notes += (OVERSIZED_NOTE.format(op=op.removeprefix("aten."), n=n, module=module or "(root)"),)
    if state.host.reads and on_capture_path:
        notes += (CAPTURE_READ_NOTE.format(n=sum(state.host.reads.values()), module=next(iter(state.host.reads))
                                           or "(root)"),)
    return notes + ((CAPTURED_NOTE,) if captured and asked else ())


def _count_source(source: ModelSource, batch: int, dtype: str, strict: bool, label: str, meta: bool,
                  lowering: str = PYTORCH_CUDA, captured: bool = False) -> Workload:
    """Build and count; a model whose forward cannot run on the meta device (it makes a CPU tensor and mixes
    it with its weights: wav2vec2's positional convolution) is built again on the CPU and counted through
    fake tensors, which allocates its weights once."""
    module = source.build(meta=meta)
    on_meta = all(t.is_meta for t in module.parameters())
    importable = getattr(source, "importable", contextlib.nullcontext)  # a model file's neighbours, in forward()
    try:
        with importable():
            return count_module(module, source.inputs(batch, meta=on_meta), dtype, name=source.stem,
                                batch=batch, strict=strict, source=label, lowering=lowering, captured=captured)
    except ForwardFailed as exc:
        if not meta or "meta" not in exc.detail:  # only a meta-device mismatch is worth a second build
            raise
    del module
    w = _count_source(source, batch, dtype, strict, label, meta=False, lowering=lowering, captured=captured)
    return replace(w, notes=w.notes + ("built on the CPU and counted through fake tensors: its forward does "
                                       "not run on the meta device",))


def count(model: str | Path | ModelSource, batch: int = 1, dtype: str = "fp32",
          strict: bool = False, lowering: str = PYTORCH_CUDA, captured: bool = False) -> Workload:
    """Count one forward pass of a model file (``build_model()``, ``example_inputs(batch_size)``) or a library
    model (``timm:NAME``, ``torchvision:NAME``, ``hf:PATH_OR_ID``).

    ``model`` is a path or spec, or a model already loaded (``sources.load_model``: imported once, counted at
    several batches or also measured). The model is built on the meta device when its code allows (no
    weight memory, no initialisation time), else on the CPU and counted through fake tensors. ``lowering``:
    see ``count_module`` ("inductor-cuda" for torch.compile); ``captured``: as it runs under CUDA-graph capture
    (``capture.captured_for(mode)``).
    """
    label = model.label if isinstance(model, (ModelFile, LibraryModel)) else str(model)
    if isinstance(batch, bool) or not isinstance(batch, int) or batch <= 0:
        raise ModelFileError(f"{label}: batch must be a positive integer, got {batch!r}")
    try:
        dtype = parse_precision(dtype, COUNT_DTYPES)
    except InputError as exc:
        raise ModelFileError(f"{label}: {exc}", hint=exc.hint) from None
    source = load_model(model)
    try:
        w = _count_source(source, batch, dtype, strict, label, meta=True, lowering=lowering, captured=captured)
    except ForwardFailed as exc:
        on = f"example_inputs({batch})" if isinstance(source, ModelFile) else f"its inputs at batch {batch}"
        raise ModelFileError(f"{label}: the forward pass failed on {on}: {exc.detail}") from None
    return replace(w, notes=w.notes + source.notes) if source.notes else w
