"""Lowering: turn the hardware-independent operator list into the kernels one software stack launches.

The counter (``counter.py``, each call through ``recording.py``) records what the model computes, operator
by operator, plus a few facts about each call (:class:`OpFacts`: a convolution's bias, the query/key/value of
an attention call, whether a copy copies an attention output) and its dataflow (:class:`Flow`). A lowering
reads them and rewrites the list into what a given stack really runs. Pure: no torch, no hardware numbers;
``count_module`` applies one as an explicit step and the ``Workload`` names it (``Workload.lowering``). The
lowerings, by :class:`tops_advisor.kinds.Lowering`:

- ``pytorch-cuda`` (:func:`lower_pytorch_cuda`, ``eager_cuda.py``): eager PyTorch on a CUDA GPU (cuDNN
  convolutions, fused SDPA kernels);
- ``inductor-cuda`` (:func:`lower_inductor_cuda`, ``inductor.py``, with inductor's per-operator layout and
  padding decisions in ``inductor_layout.py``): ``torch.compile``'s inductor, fused triton kernels around the
  library GEMMs, convolutions and attention (``--mode compiled``); a training step's forward and backward
  as two compiled graphs, its optimizer eager (:func:`lower_inductor_step`, ``inductor_training.py``; what
  the compiled step saves for its backward: ``remat.py``);
- ``tensorrt`` (:func:`lower_tensorrt`, ``tensorrt.py``): an engine TensorRT builds from the model, as the
  profile in ``tops_advisor/tensorrt.py`` describes it (``--engine tensorrt``);
- ``none`` (:func:`no_lowering`): the operators as counted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ...errors import CountingError
from ...kinds import Lowering, Mode
from ...workload import OpRecord
from .eager_cuda import lower_pytorch_cuda
from .facts import CountedOp, Flow, OpFacts, TensorFacts, Value
from .inductor import lower_inductor_cuda
from .inductor_layout import channels_last_convs, channels_last_step
from .inductor_training import lower_inductor_step
from .remat import saved_bytes
from .tensorrt import lower_tensorrt

PYTORCH_CUDA = Lowering.PYTORCH_CUDA
INDUCTOR_CUDA = Lowering.INDUCTOR_CUDA   # torch.compile (inductor, default mode) on a CUDA GPU: inductor.py
TENSORRT = Lowering.TENSORRT           # a TensorRT engine on a CUDA GPU: tensorrt.py
NO_LOWERING = Lowering.NONE


def no_lowering(ops: Iterable[CountedOp]) -> tuple[OpRecord, ...]:
    """The operator list as counted: what the model computes, not what a stack launches."""
    return tuple(counted.record for counted in ops)


LOWERINGS: dict[Lowering, Callable[[Iterable[CountedOp]], tuple[OpRecord, ...]]] = {
    Lowering.PYTORCH_CUDA: lower_pytorch_cuda,
    Lowering.INDUCTOR_CUDA: lower_inductor_step,
    Lowering.TENSORRT: lower_tensorrt,
    Lowering.NONE: no_lowering,
}


_MODE_LOWERINGS = {Mode.COMPILED: Lowering.INDUCTOR_CUDA, Mode.TENSORRT: Lowering.TENSORRT}


def lowering_for(mode: str) -> Lowering:
    """The lowering a prediction mode runs on: inductor's kernels for ``compiled``, a TensorRT engine's for
    ``tensorrt``, eager PyTorch's else."""
    return _MODE_LOWERINGS.get(mode, Lowering.PYTORCH_CUDA)


def lower(name: str, ops: Iterable[CountedOp]) -> tuple[OpRecord, ...]:
    """Apply the lowering called ``name`` (one of LOWERINGS)."""
    try:
        fn = LOWERINGS[name]
    except KeyError:
        raise CountingError(f"unknown lowering {name!r}; expected one of {', '.join(LOWERINGS)}") from None
    return fn(ops)


__all__ = ["INDUCTOR_CUDA", "LOWERINGS", "NO_LOWERING", "PYTORCH_CUDA", "TENSORRT", "CountedOp", "Flow", "OpFacts",
           "TensorFacts", "Value", "channels_last_convs", "channels_last_step", "lower", "lower_inductor_cuda", "lower_inductor_step",
           "lower_pytorch_cuda", "lower_tensorrt", "lowering_for", "no_lowering", "saved_bytes"]
