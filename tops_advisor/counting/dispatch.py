"""The two modes that see a forward's calls while it is counted, and route each one.

``OperatorCounter`` (a ``TorchDispatchMode``) sees each ATen operator with its real shapes after autograd and
composite decomposition: host reads are answered, operators on host data run uncounted, ``--dtype amp``'s
casts are made, and every other call is run (on meta or fake tensors) and recorded. ``FunctionCounter`` (a
``TorchFunctionMode``) sees torch functions before they decompose: ``F.scaled_dot_product_attention``,
``F.rms_norm`` and a fused ``nn.MultiheadAttention`` are counted as the fused kernels they are on a GPU (on
meta/CPU tensors SDPA runs its math path: matmul, softmax, matmul), and host-data factories and moves to the
device are followed.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

from .attention_choice import SDPA, fused_sdpa_possible
from .fused_backward import attach, needs_grad
from .host.copies import copies_host_data, copies_python_data
from .host.data import copies_to_device, makes_host_data, moves_to_device
from .layout import cudnn_output_layout
from .mha import MHA_FUNCTION
from .mha import fused_on_cuda as mha_fused_on_cuda
from .mha import record_fused as record_mha
from .state import CountingRun
from .tensors import flat_tensors

# Functions counted before they decompose, as the single fused kernel they are on a GPU (the profiler of
# benchmarks/harness/profile_records.py times the same calls whole).
FUSED_FUNCTIONS = {
    F.scaled_dot_product_attention: SDPA,
    F.rms_norm: "aten.rms_norm",
    torch.rms_norm: "aten.rms_norm",
}


class _CountingMode:
    """What both counting modes hold: the run they count into (before the torch mode in the bases)."""

    def __init__(self, run: CountingRun):
        super().__init__()
        self.run = run


class OperatorCounter(_CountingMode, TorchDispatchMode):
    """Counts each ATen operator call into ``run``."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        run = self.run
        name = str(func.overloadpacket)
        on_host = run.host_data.runs_on_host(flat_tensors((args, kwargs))) and not copies_to_device(kwargs)
        if run.host.handles(name):
            return run.host.answer(name, func, args, kwargs, on_host)
        if on_host:
            return self._on_host(func, args, kwargs)
        if run.casting():  # --dtype amp: autocast's casts
            args, kwargs = run.autocast.cast(name, args, kwargs, run.weight_key)
        from .meta_kernels import lookup as shape_function  # meta kernels that refuse dtypes the GPU runs

        run.python.depth += 1
        try:
            out = (shape_function(name) or func)(*args, **kwargs)
        finally:
            run.python.depth -= 1
        out = cudnn_output_layout(name, args, out)
        if not run.suppress and copies_host_data(name, args, out):
            run.found.cpu_copies += 1
        if not run.suppress:
            run.record(name, args, kwargs, out)
        return out

    def _on_host(self, func, args: tuple, kwargs: dict):
        """Run an operator on host data: no kernel, nothing recorded; its outputs are host data too."""
        out = func(*args, **kwargs)
        self.run.host_data.mark(flat_tensors(out))
        return out


class FunctionCounter(_CountingMode, TorchFunctionMode):
    """Counts the functions taken whole (fused attention, RMS norm) and follows host data, into ``run``."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        run = self.run
        if copies_python_data(func, args, kwargs):
            run.found.cpu_copies += 1
        if makes_host_data(func, args, kwargs):
            return self._host_factory(func, args, kwargs)
        if moves_to_device(func, args, kwargs):
            return self._move(func, args, kwargs)
        if run.casting():  # before conv2d's own dtype checks
            args, kwargs = run.autocast.cast_function(func, args, kwargs, run.weight_key)
        elif run.casting_functions():  # a training step: every autocast cast, above autograd
            args, kwargs, in_kernel = self._cast_for_training(func, args, kwargs)
            if in_kernel:
                return func(*args, **kwargs)
        if func is MHA_FUNCTION and not run.suppress and mha_fused_on_cuda(args, kwargs):
            return self._fused_mha(func, args, kwargs)
        name = FUSED_FUNCTIONS.get(func) if not run.suppress else None
        if name is None:
            return func(*args, **kwargs)
        if name == SDPA and not fused_sdpa_possible(args, kwargs):
            # No fused kernel takes these inputs, so PyTorch runs the math path on CUDA (profiled on the H200:
            # Swin-T's 5-D windows, T5's permuted position bias): upcast to fp32, bmm, mask add, safe softmax,
            # bmm. It decomposes the same way on meta tensors, so let it and count each kernel; a zero-cost
            # marker keeps the attention call visible.
            out = func(*args, **kwargs)
            run.recorder.record_marker(name)
            return out
        if needs_grad(args, kwargs):  # a training step: the fused kernel's backward, not the decomposition's
            with torch.no_grad():
                out = self._uncounted(func, args, kwargs)
            run.record(name, args, kwargs, out)
            return attach(run.record, name, args, kwargs, out)
        out = self._uncounted(func, args, kwargs)
        run.record(name, args, kwargs, out)
        return out

    def _cast_for_training(self, func, args: tuple, kwargs: dict) -> tuple[tuple, dict, bool]:
        """Autocast's casts for a training step's function; a cast inside the kernel (fp32-output functions)
        is made uncounted."""
        run = self.run
        name = getattr(func, "__name__", "")
        from .amp import TRAIN_FP32_OUTPUT

        if name in TRAIN_FP32_OUTPUT:
            run.suppress += 1
            try:
                cast = run.autocast.cast_for_training(func, args, kwargs, run.weight_key)
            finally:
                run.suppress -= 1
            # the kernel reads the half input itself: in the dataflow the upcast copy is that input's value
            for new, old in zip(flat_tensors(cast[:2]), flat_tensors((args, kwargs)), strict=False):
                if new is not old:
                    run.flow.alias([new], [old])
            return cast
        return run.autocast.cast_for_training(func, args, kwargs, run.weight_key)

    def _uncounted(self, func, args: tuple, kwargs: dict):
        """Run a call whose own operators are not counted (it is counted whole)."""
        self.run.suppress += 1
        try:
            return func(*args, **kwargs)
        finally:
            self.run.suppress -= 1

    def _move(self, func, args: tuple, kwargs: dict):
        """``t.to(device)``: host data moved to the device is device data (and a copy from pageable memory)."""
        if self.run.host_data.faked_copy(args):
            self.run.found.cpu_copies += 1
        out = func(*args, **kwargs)
        self.run.host_data.unmark(flat_tensors(out))
        return out

    def _fused_mha(self, func, args: tuple, kwargs: dict):
        """``nn.MultiheadAttention`` without weights: run uncounted, record its three CUDA kernels (mha.py)."""
        run = self.run
        run.suppress += 1
        try:
            out = func(*args, **kwargs)
            with torch.no_grad():
                calls = []
                record_mha(lambda *call: calls.append(call), args, kwargs, out)
        finally:
            run.suppress -= 1
        roles = run.tensors
        views_of_weights = [t for _name, call_args, _, _ in calls for t in call_args
                            if isinstance(t, torch.Tensor) and t._base is not None and id(t._base) in roles.param_ids]
        roles.hold(views_of_weights, roles.param_ids)   # the transposed projection weights
        for call in calls:
            run.record(*call)
        return out

    def _host_factory(self, func, args: tuple, kwargs: dict):
        """A factory called with no device: it and its operators make host data."""
        self.run.host_data.making += 1
        try:
            out = func(*args, **kwargs)
        finally:
            self.run.host_data.making -= 1
        self.run.host_data.mark(flat_tensors(out))
        return out
