"""Count a PyTorch model: run it once and turn every ATen operator call into an :class:`OpRecord`.

The engine is a ``TorchDispatchMode`` (it sees each ATen operator with its real shapes after autograd and
composite decomposition) on meta tensors, or on fake tensors when the model is real: no weight is ever
materialised or computed on, so a 70B-parameter model counts in seconds and little memory. A thin
``TorchFunctionMode`` catches ``F.scaled_dot_product_attention`` and ``F.rms_norm`` before they decompose
(on meta/CPU tensors SDPA runs its math path: matmul, softmax, matmul) and counts each as the one fused
kernel it is on a GPU. Forward hooks give each operator the path of the module it ran in.

Why not fvcore's JIT trace: in this torch version ``torch.jit.trace`` of a convolution on the meta device
fails (``TypeError: cond must be a bool``), and a trace on real tensors needs the model's memory.
"""

from __future__ import annotations

import math
import warnings
import weakref
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map_only

from ..errors import CountingError, InputError, ModelFileError
from ..units import parse_precision
from ..workload import OpRecord, Workload
from .handles import ZERO_COST, Cost, OpCall, TensorInfo, lookup

# Precisions a model can be counted in. fp64/fp32/tf32/fp16/bf16 run the model in that torch dtype (tf32:
# fp32 storage, matrix operators labelled tf32). fp8/int8/int4/fp4 have no eager kernels for most operators:
# the model runs in fp16 (same shapes) and ``scaling.retype`` rescales the floating-point bytes to the
# narrow element size (weights and activations quantised together, as TensorRT-style inference runs).
COUNT_DTYPES: tuple[str, ...] = ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int8", "int4", "fp4")
_NARROW = frozenset({"fp8", "int8", "int4", "fp4"})
_DTYPE_NAME = {torch.float64: "fp64", torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16"}


def _float_dtype(tensors) -> torch.dtype | None:
    """The dtype of the largest floating-point input (the one the kernel computes in)."""
    floats = [t for t in tensors if t.is_floating_point()]
    return max(floats, key=lambda t: t.numel()).dtype if floats else None
_TORCH_DTYPE = {"fp64": torch.float64, "fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16,
                "bf16": torch.bfloat16}
_TENSOR_CORE_KINDS = frozenset({"matmul", "conv", "attention"})
_FROM_TORCH = {torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16", torch.float64: "fp64"}

# Functions counted before they decompose, as the single fused kernel they are on a GPU.
_FUSED = {
    F.scaled_dot_product_attention: "aten.scaled_dot_product_attention",
    F.rms_norm: "aten.rms_norm",
    torch.rms_norm: "aten.rms_norm",
}


class ForwardFailed(CountingError):
    """The model's forward pass raised; ``detail`` is the one-line cause."""

    def __init__(self, message: str, detail: str):
        super().__init__(message)
        self.detail = detail


def one_line(exc: BaseException, limit: int = 300) -> str:
    """'TypeError: first line of the message', at most ``limit`` characters."""
    text = next((line.strip() for line in str(exc).splitlines() if line.strip()), "")
    out = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return out if len(out) <= limit else out[: limit - 3] + "..."


def resolve_dtype(dtype: str | None, module: torch.nn.Module | None = None) -> str:
    """A precision name from COUNT_DTYPES; None means the module's own floating dtype (fp32 if none)."""
    if dtype is None:
        for p in module.parameters() if module is not None else ():
            if p.is_floating_point():
                return _FROM_TORCH.get(p.dtype, "fp32")
        return "fp32"
    try:
        return parse_precision(dtype, COUNT_DTYPES)
    except InputError as exc:
        raise CountingError(f"cannot count in {dtype!r}: {exc}", hint=exc.hint) from None


class _State:
    """Everything one counting run accumulates."""

    def __init__(self, dtype: str, param_tensors: Sequence[torch.Tensor]):
        self.dtype = dtype
        self.records: list[OpRecord] = []
        self.unsupported: Counter[str] = Counter()
        self.stack: list[str] = []
        self.suppress = 0
        self._keep = list(param_tensors)          # keeps ids stable while counting
        self.param_ids = {id(t) for t in self._keep}
        self.live_bytes = 0.0
        self.peak_bytes = 0.0
        self._tracked: set[int] = set()
        self.attention_outputs: set[int] = set()     # SDPA outputs ...
        self.attention_transposed: set[int] = set()  # ... and their transpose(1, 2) views

    def _hold(self, tensors: list[torch.Tensor], ids: set[int], keep: bool = True) -> None:
        """Remember tensors by id: kept alive (``keep``), or forgotten when freed, so no id is reused."""
        for t in tensors:
            ids.add(id(t))
            if keep:
                self._keep.append(t)
            else:
                weakref.finalize(t, ids.discard, id(t))

    # --- tensors -------------------------------------------------------------------------------------
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
        self.records.append(OpRecord(name=name, kind="attention", module=self.stack[-1] if self.stack else "",
                                     flops=0.0, bytes_read=0.0, bytes_written=0.0, dtype=self.dtype, kernels=0))

    def record_head_dim_padding(self, args: tuple, kwargs: dict) -> None:
        """Half-precision fused attention pads a head dimension that is not a multiple of 8 before the kernel
        (PyTorch's ``pad_last_dim<8>`` in aten/src/ATen/native/transformers/attention.cpp): for each of query,
        key and value a fill of the padded tensor and a strided copy into it. Profiled on the H200: a head dim
        of 36 (Conformer-S) launches 7 kernels where 40 launches 2."""
        q, k, v = (args[i] if len(args) > i else kwargs.get(n) for i, n in enumerate(("query", "key", "value")))
        if not isinstance(q, torch.Tensor) or q.dtype not in (torch.float16, torch.bfloat16):
            return
        for t in (q, k, v):
            if not isinstance(t, torch.Tensor) or t.size(-1) % 8 == 0:
                continue
            padded = t.numel() // t.size(-1) * (-(-t.size(-1) // 8) * 8) * self.itemsize(t)
            self.records.append(OpRecord(
                name="aten.constant_pad_nd", kind="copy", module=self.stack[-1] if self.stack else "", flops=0.0,
                bytes_read=float(t.numel() * self.itemsize(t)), bytes_written=float(2 * padded),
                dtype=_DTYPE_NAME.get(t.dtype, self.dtype), kernels=2, strided=True, internal=True))

    def record(self, name: str, args: tuple, kwargs: dict, out) -> None:
        in_tensors = [t for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)]
        out_tensors = [t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]
        if name in ZERO_COST:
            if any(id(t) in self.param_ids for t in in_tensors):  # a view of a weight is still a weight
                self._hold(out_tensors, self.param_ids)
            if in_tensors and id(in_tensors[0]) in self.attention_outputs and _swaps_heads_and_sequence(
                    name, args):
                self._hold(out_tensors, self.attention_transposed, keep=False)
            return
        if name in ("aten.clone", "aten.contiguous") and in_tensors and \
                id(in_tensors[0]) in self.attention_transposed:
            # Fused attention on a GPU writes (batch, seq, heads, dim) memory behind its (b, h, s, d)
            # shape, so the usual transpose(1, 2).reshape(b, s, h*d) after it is a view there, not a copy
            # (the math path on meta/CPU tensors returns (b, h, s, d) memory and copies).
            return
        infos: dict[int, TensorInfo] = {}

        def to_info(t: torch.Tensor) -> TensorInfo:
            if id(t) not in infos:
                infos[id(t)] = self.info(t)
            return infos[id(t)]

        call = OpCall(
            name=name,
            args=tree_map_only(torch.Tensor, to_info, tuple(args)),
            kwargs=tree_map_only(torch.Tensor, to_info, dict(kwargs)),
            inputs=tuple({id(t): to_info(t) for t in in_tensors}.values()),  # a tensor used twice is read once
            outputs=tuple(self.info(t) for t in out_tensors),
        )
        handle = lookup(name)
        cost = None
        if handle is not None:
            try:
                cost = handle(call)
            except (IndexError, TypeError, ValueError, AttributeError, KeyError):
                cost = None  # arguments the formula does not understand: report it, don't guess
        if cost is None:
            self.unsupported[name] += 1
            cost = Cost("other", 0.0)
        read = cost.bytes_read if cost.bytes_read is not None else sum(i.nbytes for i in call.inputs)
        written = cost.bytes_written if cost.bytes_written is not None else sum(o.nbytes for o in call.outputs)
        params = cost.param_bytes if cost.param_bytes is not None else sum(
            i.nbytes for i in call.inputs if i.is_param)
        dtype = self.dtype
        if dtype == "tf32" and cost.kind not in _TENSOR_CORE_KINDS:
            dtype = "fp32"
        actual = _float_dtype(in_tensors)
        if actual is not None and actual != _TORCH_DTYPE.get(dtype):
            # an operator computing in another precision than the model (an fp32 upcast inside fp16 work)
            dtype = _DTYPE_NAME.get(actual, dtype)
        if name == "aten.scaled_dot_product_attention" and len(out_tensors) == 1 and out_tensors[0].dim() == 4:
            self._hold(out_tensors, self.attention_outputs, keep=False)
        strided = cost.kind in _STRIDE_SENSITIVE_KINDS and any(
            _strided(t) for t in in_tensors if id(t) not in self.param_ids)
        module = self.stack[-1] if self.stack else ""
        self.records.append(OpRecord(
            name=name, kind=cost.kind, module=module, flops=float(cost.flops), bytes_read=float(read),
            bytes_written=float(written), param_bytes=float(params), dtype=dtype, kernels=cost.kernels,
            gemm=cost.gemm, strided=strided, family=OP_FAMILY.get(name, "")))
        bias = args[2] if name in _CONVOLUTIONS and len(args) > 2 else None
        if isinstance(bias, torch.Tensor) and out_tensors:
            # PyTorch adds a convolution's bias after cuDNN, in a broadcast add over the whole output: one more
            # pass over it, in the non-vectorised elementwise kernel (H200 sweep: conv1d 144->288 at batch 32,
            # the add took 7.6 us of 25 us). Counted as its own operator, marked strided for that kernel.
            out_bytes = float(sum(t.numel() * self.itemsize(t) for t in out_tensors))
            self.records.append(OpRecord(
                name="aten.add", kind="elementwise", module=module, flops=float(out_tensors[0].numel()),
                bytes_read=out_bytes + infos[id(bias)].nbytes, bytes_written=out_bytes,
                param_bytes=infos[id(bias)].nbytes, dtype=dtype, kernels=1, strided=True, internal=True))
        self.track(out_tensors, in_tensors)


_CONVOLUTIONS = ("aten.convolution", "aten._convolution")

# Operators whose kernels differ within their kind (OpRecord.family): the roofline reads the family, never
# an ATen name.
OP_FAMILY = {"aten.native_batch_norm": "batch_norm", "aten.native_layer_norm": "layer_norm",
             "aten.layer_norm": "layer_norm", "aten.native_group_norm": "group_norm",
             "aten.group_norm": "group_norm"}

# Memory-bound kinds whose kernels slow down when an input is a permuted or transposed view.
_STRIDE_SENSITIVE_KINDS = ("elementwise", "norm", "softmax", "reduction", "copy")


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


def _swaps_heads_and_sequence(name: str, args: tuple) -> bool:
    """transpose(1, 2) or permute(0, 2, 1, 3) of a 4-D tensor."""
    if name == "aten.transpose" and len(args) >= 3:
        return {int(args[1]) % 4, int(args[2]) % 4} == {1, 2}
    if name == "aten.permute" and len(args) >= 2:
        return [int(d) % 4 for d in args[1]] == [0, 2, 1, 3]
    return False


class _DispatchCounter(TorchDispatchMode):
    def __init__(self, state: _State):
        super().__init__()
        self.state = state

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if not self.state.suppress:
            self.state.record(str(func.overloadpacket), args, kwargs, out)
        return out


class _FusedCounter(TorchFunctionMode):
    def __init__(self, state: _State):
        super().__init__()
        self.state = state

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = _FUSED.get(func) if not self.state.suppress else None
        if name is None:
            return func(*args, **kwargs)
        if name == "aten.scaled_dot_product_attention" and not _fused_sdpa_possible(args, kwargs):
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
        if name == "aten.scaled_dot_product_attention":
            self.state.record_head_dim_padding(args, kwargs)
        self.state.record(name, args, kwargs, out)
        return out


def _fused_sdpa_possible(args: tuple, kwargs: dict) -> bool:
    """Whether a fused SDPA kernel (flash, memory-efficient, cuDNN) can take these inputs on CUDA.

    PyTorch's kernel selection (aten/src/ATen/native/transformers/cuda/sdp_utils.cpp) rejects every fused
    kernel when query/key/value are not 4-D or when the last dimension of query, key, value or attn_mask does
    not have stride 1, and falls back to the math path. A contiguous mask (boolean or float) is taken by the
    memory-efficient kernel. Measured on the H200: DistilBERT's (batch, 1, 1, seq) boolean mask ran fused;
    Swin-T (5-D windows) and T5 (a permuted position bias) ran the math path.
    """
    q, k, v = (args[i] if len(args) > i else kwargs.get(n) for i, n in enumerate(("query", "key", "value")))
    mask = args[3] if len(args) > 3 else kwargs.get("attn_mask")
    tensors = [t for t in (q, k, v) if isinstance(t, torch.Tensor)]
    if any(t.dim() != 4 for t in tensors):
        return False
    if isinstance(mask, torch.Tensor):
        tensors.append(mask)
    return all(t.size(-1) == 1 or t.stride(-1) == 1 for t in tensors)


def _as_args(inputs) -> tuple:
    if isinstance(inputs, (tuple, list)):
        return tuple(inputs)
    return (inputs,)


def count_module(module: torch.nn.Module, inputs, dtype: str | None = None, *, name: str | None = None,
                 batch: int | None = None, strict: bool = False, source: str = "") -> Workload:
    """Count one forward pass of ``module`` on ``inputs`` (a tensor or a tuple of tensors).

    ``dtype`` (fp32, tf32, fp16, bf16, fp8, int8; None: the module's own) casts the module's floating-point
    parameters and buffers *in place* (like ``module.half()``) and the floating-point inputs. Meta tensors
    are counted as they are; real tensors are replaced by fake ones, so nothing is computed either way.
    Unsupported operators are listed in ``unsupported_ops`` and warned about (``strict``: CountingError).
    """
    label = source or type(module).__name__
    dtype = resolve_dtype(dtype, module)
    if dtype in _NARROW:
        from ..scaling import retype

        base = count_module(module, inputs, "fp16", name=name, batch=batch, strict=strict, source=source)
        return retype(base, dtype)
    compute = _TORCH_DTYPE[dtype]
    module.eval()
    module.to(compute)
    tensors = list(module.parameters()) + list(module.buffers())
    on_meta = all(t.is_meta for t in tensors)
    args = []
    for a in _as_args(inputs):
        if isinstance(a, torch.Tensor):
            if a.is_floating_point():
                a = a.to(compute)
            if on_meta and not a.is_meta:
                a = a.to("meta")
        args.append(a)
    args = tuple(args)
    if batch is None:
        first = next((a for a in args if isinstance(a, torch.Tensor) and a.dim() > 0), None)
        batch = int(first.shape[0]) if first is not None else 1

    state = _State(dtype, tensors)
    input_tensors = [a for a in tree_flatten(args)[0] if isinstance(a, torch.Tensor)]
    input_bytes = float(sum(a.numel() * state.itemsize(a) for a in input_tensors))
    state.live_bytes = state.peak_bytes = input_bytes

    def enter(path: str) -> None:
        state.stack.append(path)

    def leave(*_args) -> None:  # returns None: a forward hook's return value would replace the output
        state.stack.pop()

    hooks = []
    for path, sub in module.named_modules():
        hooks.append(sub.register_forward_pre_hook(lambda _m, _a, path=path: enter(path)))
        hooks.append(sub.register_forward_hook(leave, always_call=True))
    fake = None
    if not on_meta:
        from torch._subclasses.fake_tensor import FakeTensorMode

        fake = FakeTensorMode(allow_non_fake_inputs=True)
    try:
        with torch.no_grad():
            if fake is not None:
                fake.__enter__()
            try:
                with _DispatchCounter(state), _FusedCounter(state):
                    out = module(*args)
            finally:
                if fake is not None:
                    fake.__exit__(None, None, None)
    except CountingError:
        raise
    except Exception as exc:  # the model's own code failed: say where, in one line
        detail = one_line(exc)
        raise ForwardFailed(f"{label}: the forward pass failed: {detail}", detail) from exc
    finally:
        for h in hooks:
            h.remove()
    del out

    params = {id(p): p for p in module.parameters()}.values()
    n_params = int(sum(p.numel() for p in params))
    param_bytes = float(sum(p.numel() * state.itemsize(p) for p in params))
    unsupported = dict(sorted(state.unsupported.items()))
    if unsupported:
        listing = ", ".join(f"{op} ({n} call{'s' if n > 1 else ''})" for op, n in unsupported.items())
        if strict:
            raise CountingError(
                f"{label}: {len(unsupported)} operator(s) have no counting formula: {listing}",
                hint="drop --strict to count them as zero operations (their bytes are still counted), or "
                     "add a handle in tops_advisor/counting/handles.py")
        warnings.warn(f"{label}: no counting formula for {listing}; counted as zero operations",
                      UnsupportedOpWarning, stacklevel=2)
    return Workload(
        name=name or type(module).__name__, batch=batch, dtype=dtype, ops=tuple(state.records),
        params=n_params, param_bytes=param_bytes, input_bytes=input_bytes,
        activation_peak_bytes=float(state.peak_bytes), unsupported_ops=unsupported, source=source)


class UnsupportedOpWarning(UserWarning):
    """Some operators have no counting formula and were counted as zero operations."""


def count(model_path: str | Path, batch: int = 1, dtype: str = "fp32", strict: bool = False) -> Workload:
    """Load a model file (``build_model()``, ``example_inputs(batch_size)``) and count one forward pass.

    The model is built on the meta device when its code allows (no weight memory, no initialisation
    time), else on the CPU and counted through fake tensors.
    """
    from .model_file import load_model_file

    label = str(model_path)
    if isinstance(batch, bool) or not isinstance(batch, int) or batch <= 0:
        raise ModelFileError(f"{label}: batch must be a positive integer, got {batch!r}")
    try:
        dtype = parse_precision(dtype, COUNT_DTYPES)
    except InputError as exc:
        raise ModelFileError(f"{label}: {exc}", hint=exc.hint) from None
    model_file = load_model_file(model_path)
    module = model_file.build()
    inputs = model_file.inputs(batch, meta=all(t.is_meta for t in module.parameters()))
    try:
        return count_module(module, inputs, dtype, name=Path(model_path).stem, batch=batch, strict=strict,
                            source=label)
    except ForwardFailed as exc:
        raise ModelFileError(f"{label}: the forward pass failed on example_inputs({batch}): {exc.detail}") \
            from None

