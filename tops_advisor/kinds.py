"""The names that cross module boundaries, defined once: modes, operator kinds, bounds, lowerings, phases.

A leaf module: it imports nothing from the package, so every layer can use it. Each is a ``StrEnum``: a
member compares equal to its string and serialises as it (``json.dumps(Mode.GRAPH) == '"graph"'``), so JSON
output and user input keep the same words.
"""

from __future__ import annotations

import enum

try:
    from enum import StrEnum
except ImportError:  # Python 3.10
    class StrEnum(str, enum.Enum):  # type: ignore[no-redef]
        """A str whose ``str()`` is its value (the 3.11 ``enum.StrEnum``)."""

        def __str__(self) -> str:
            return str(self.value)


class Mode(StrEnum):
    """How a model runs on the device."""

    GRAPH = "graph"          # CUDA-graph replay: no host launch cost
    EAGER = "eager"          # plain PyTorch: the host launches each operator
    COMPILED = "compiled"    # torch.compile (inductor) fused kernels, replayed as a CUDA graph
    TENSORRT = "tensorrt"    # a TensorRT engine built from the model (--engine tensorrt): its fused kernels,
                             # enqueued once (tops_advisor/tensorrt.py)


class OpKind(StrEnum):
    """Which unit does an operator's work and which efficiency curve applies. The order is the index the
    roofline's arrays use (``OpKind.position``)."""

    MATMUL = "matmul"            # linear, matmul, bmm, einsum, addmm: tensor cores
    CONV = "conv"                # convolution of every kind: tensor cores (implicit GEMM)
    ATTENTION = "attention"      # fused scaled-dot-product attention: tensor cores
    ELEMENTWISE = "elementwise"  # activations, add, mul, casts: vector units, memory-bound
    NORM = "norm"                # batch/layer/group/RMS norm
    SOFTMAX = "softmax"
    REDUCTION = "reduction"      # sum, mean, max
    POOL = "pool"                # max/avg/adaptive pooling
    EMBEDDING = "embedding"      # gathers of table rows
    COPY = "copy"                # cat, contiguous copies, layout changes, upsampling by copy
    OTHER = "other"

    @property
    def position(self) -> int:
        return _OP_KIND_INDEX[self]


_OP_KIND_INDEX = {k: i for i, k in enumerate(OpKind)}


class Bound(StrEnum):
    """What limits an operator or a whole prediction."""

    COMPUTE = "compute"
    MEMORY = "memory"
    OVERHEAD = "overhead"            # per-kernel floors, gaps and host launches
    COMMUNICATION = "communication"  # collectives between devices (LLM tensor parallelism)


class Lowering(StrEnum):
    """How counted operators become the kernels a device runs."""

    PYTORCH_CUDA = "pytorch-cuda"     # eager PyTorch on a CUDA GPU
    INDUCTOR_CUDA = "inductor-cuda"   # torch.compile (inductor, default mode) on a CUDA GPU
    TENSORRT = "tensorrt"             # a TensorRT engine on a CUDA GPU (the profile in tops_advisor/tensorrt.py)
    NONE = "none"                     # one kernel per operator, as counted


class Phase(StrEnum):
    """Which part of a step an operator belongs to."""

    FORWARD = "forward"
    BACKWARD = "backward"
    OPTIMIZER = "optimizer"
