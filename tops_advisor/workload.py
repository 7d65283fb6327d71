"""What a model costs, independent of any hardware: per-operator operations, bytes and kernel launches.

Counted once (by ``tops_advisor.counting`` from a PyTorch model, or built analytically by
``tops_advisor.llm``), then predicted on any number of devices by ``tops_advisor.roofline``.
Base units only: ``flops`` are operations (one multiply-add = 2), bytes are bytes.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace

from .kinds import OpKind, Phase, StrEnum

# Operator kinds the roofline distinguishes (which unit does the work, which efficiency curve applies), in the
# order of ``OpKind.position``; each member equals its string ("matmul", "conv", ...).
OP_KINDS: tuple[OpKind, ...] = tuple(OpKind)
# OpRecord.family of a 2-D convolution that runs channels-last (NHWC: inductor's layout decision); its cuDNN
# kernels differ from the NCHW ones eager PyTorch runs for the same grouped or depthwise convolution.
CHANNELS_LAST_FAMILY = "channels_last"
# OpRecord.family of a 2-D depthwise convolution that PyTorch runs on its own CUDA kernel, not cuDNN's, even in
# fp16 (counting.conv_backend): its rate does not gain from half precision.
NATIVE_DEPTHWISE_FAMILY = "native_depthwise"
# OpRecord.family of the kernels of a convolution's backward (``aten.convolution_backward``: one record per
# gradient it computes). The data gradient (dgrad) and the weight gradient (wgrad) are implicit GEMMs of their
# own (kind conv, GemmShape below), the bias gradient (bgrad) a sum of the output gradient over the batch and
# the plane (kind reduction). A depthwise convolution PyTorch keeps from cuDNN (NATIVE_DEPTHWISE_FAMILY) runs
# PyTorch's own two backward kernels: the DEPTHWISE_ families.
CONV_DGRAD_FAMILY = "conv_dgrad"
CONV_WGRAD_FAMILY = "conv_wgrad"
CONV_BGRAD_FAMILY = "conv_bgrad"
DEPTHWISE_DGRAD_FAMILY = "native_depthwise_dgrad"
DEPTHWISE_WGRAD_FAMILY = "native_depthwise_wgrad"
# OpRecord.family of the optimizer's passes over lists of tensors (``_foreach_*``, the fused optimizers,
# GradScaler's unscale): PyTorch's multi_tensor_apply kernels, 320 blocks of 512 threads at most per launch.
MULTI_TENSOR_FAMILY = "multi_tensor_apply"


@dataclass(frozen=True)
class GemmShape:
    """The matrix product an operator runs: ``batch`` independent (m x k) @ (k x n) products.

    Convolutions report their implicit GEMM (m = N*H_out*W_out, n = C_out/groups, k = C_in/groups*kh*kw,
    batch = groups; a backward convolution's data gradient is the convolution that writes the input's
    gradient, m = N*H_in*W_in, n = C_in/groups, k = C_out/groups*kh*kw, and its weight gradient the product
    m = C_out/groups, n = C_in/groups*kh*kw, k = N*H_out*W_out: ``CONV_DGRAD_FAMILY``), their ``window`` (kh*kw: 1 for a pointwise convolution, which runs as a plain GEMM when
    its ``plane`` is aligned), ``spatial_dims`` (1-D convolutions run other kernels than 2-D ones) and
    ``plane`` (the spatial elements of one image and channel, H_out*W_out: the contiguous row of NCHW);
    attention reports its larger product (m = query length, n = key length, k = head dim,
    batch = batch*heads). Two memory-bound operators report their kernel's parallel shape here instead (k = 1):
    layer and group norms their rows (m) of n elements, bilinear upsampling its output positions (m = H*W) and
    planes (n = N*C); the roofline keeps each meaning in a field of its own (``roofline.arrays.SHAPE_FIELDS``).
    """

    m: int
    n: int
    k: int
    batch: int = 1
    window: int = field(default=1, compare=False)
    spatial_dims: int = field(default=0, compare=False)   # convolutions: 1, 2 or 3 (0: not a convolution)
    stride: int = field(default=1, compare=False)         # convolutions: the largest spatial stride
    dilation: int = field(default=1, compare=False)       # convolutions: the largest dilation
    plane: int = field(default=0, compare=False)          # convolutions: m per image (0: not known)


@dataclass(frozen=True)
class Reuse:
    """One activation an operator reads that an earlier operator of the same pass wrote, with what decides
    whether it is still in the device's L2 cache when it is read (``roofline/l2.py``): the traffic of the
    operators in between, the producer's and this operator's own (distinct bytes: an in-place write adds
    none). Bytes; hardware-independent (``counting/reuse.py``)."""

    bytes: float            # the bytes of the value this operator reads
    between_bytes: float    # reads + writes of the operators after the producer and before this one
    producer_bytes: float   # reads + writes of the producer itself
    consumer_bytes: float   # reads + writes of this operator (an in-place one's writes add none)


@dataclass(frozen=True)
class OpRecord:
    """One operator call as counted: the unit of prediction."""

    name: str                 # operator, e.g. "aten.convolution"
    kind: OpKind              # which unit does its work (a kind's string is taken too: "matmul")
    module: str               # module path it came from, e.g. "layer1.0.conv1" ("" for the top level)
    flops: float              # operations; one multiply-add = 2
    bytes_read: float         # minimal traffic: each input read once (parameters included)
    bytes_written: float      # each output written once
    param_bytes: float = 0.0  # the part of bytes_read that is parameters (weights, biases, tables)
    dtype: str = "fp32"       # precision the operator computes in ("fp16", "int8", ...)
    kernels: int = 1          # GPU kernels it usually launches
    gemm: GemmShape | None = None
    strided: bool = False     # reads an activation through a permuted/transposed view (uncoalesced traffic)
    internal: bool = False    # kernels launched inside another operator's call (a convolution's bias add):
                              # no host dispatch cost of its own in eager mode, only the extra launches
    family: str = ""          # a finer kind where kernels of one kind differ (norms: "batch_norm",
                              # "layer_norm", "group_norm"; convolutions: CHANNELS_LAST_FAMILY; the
                              # parts of a backward convolution: CONV_DGRAD_FAMILY, ...); "" when the kind
                              # says enough
    phase: Phase = Phase.FORWARD  # the part of a step it belongs to (forward, backward, optimizer)
    reuse: tuple[Reuse, ...] = ()  # activations it reads that an earlier operator wrote (eager lowering only)

    def __post_init__(self) -> None:
        if not isinstance(self.kind, OpKind):
            object.__setattr__(self, "kind", OpKind(self.kind))
        if not isinstance(self.phase, Phase):
            object.__setattr__(self, "phase", Phase(self.phase))

    @property
    def bytes(self) -> float:
        return self.bytes_read + self.bytes_written

    @property
    def intensity(self) -> float:
        """Operations per byte moved."""
        return self.flops / self.bytes if self.bytes else float("inf")


class NoteKind(StrEnum):
    """What a workload note is about (``Note.kind``): code acts on the kind, users read the text."""

    CAPTURE_FAILS = "capture-fails"    # CUDA-graph capture fails on the forward: graph and compiled need a change
    GPU_REFUSES = "gpu-refuses"        # a CUDA kernel refuses an operator at this size: the batch fails on the GPU
    CAPTURED_PATH = "captured-path"    # counted as the forward runs captured, where it takes another path
    COUNTED_ON_CPU = "counted-on-cpu"  # built on the CPU and counted through fake tensors (not the meta device)
    SOURCE = "source"                  # what loading the model chose: its inputs, an implementation
    PRECISION = "precision"            # an analytic build's precisions (weights, activations, KV cache) and what
                                       # weight-only quantization implies for the matrix products
    TENSOR_PARALLEL = "tensor-parallel"  # the operators are one rank's share; its collectives are not among them
    KV_CACHE = "kv-cache"              # how attention keeps its cache: a sliding window, a compressed latent (MLA)
    DERIVED = "derived"                # retyped from a count at another dtype (scaling.retype), not counted at it
    INFO = "info"                      # anything else


@dataclass(frozen=True)
class Note:
    """One note about a workload: its kind, and the sentence a user reads. It reads as its text (``str(note)``,
    ``"capture" in note``)."""

    kind: NoteKind
    text: str

    def __str__(self) -> str:
        return self.text

    def __contains__(self, part: str) -> bool:
        return part in self.text


def _as_note(note: Note | str) -> Note:
    return note if isinstance(note, Note) else Note(NoteKind.INFO, str(note))


@dataclass(frozen=True)
class Workload:
    """A whole model at one batch size and dtype, as a sequence of operators (in execution order)."""

    name: str
    batch: int
    dtype: str
    ops: tuple[OpRecord, ...]
    params: int = 0                   # parameter count (elements)
    param_bytes: float = 0.0          # parameter storage at this dtype
    input_bytes: float = 0.0          # the example inputs
    activation_peak_bytes: float = 0.0  # largest set of activations alive at once (estimate)
    unsupported_ops: dict[str, int] = field(default_factory=dict)  # operator -> calls counted as zero
    source: str = ""                  # the model file or LLM config it came from
    notes: tuple[Note, ...] = ()      # a plain string given here becomes a Note of kind INFO
    assumptions: tuple[str, ...] = ()  # what counting assumed about values it could not see (counting/host/reads.py)
    module_calls: int = 0             # nn.Module forward calls in one pass, the root included (0: not counted)
    python_calls: int = 0             # other Python function calls in one pass (counting/pycalls.py)
    empty_module_calls: int = 0       # module calls that ran no operator (Identity, Dropout in eval)
    functional: bool = False          # issued from plain functions (an LLM built analytically), not from
                                      # nn.Module calls: less host time per operator in eager mode
    lowering: str = ""                # how counted operators became kernels (a kinds.Lowering: "pytorch-cuda",
                                      # eager PyTorch on a CUDA GPU, counting/lowering/; "" when built as kernels
                                      # directly)
    captured: bool = False            # counted as the forward runs under CUDA-graph capture / torch.compile
    capture_sensitive: bool = False   # the forward asked whether it was captured (counting/capture.py)

    def __post_init__(self) -> None:
        if not all(isinstance(n, Note) for n in self.notes):
            object.__setattr__(self, "notes", tuple(_as_note(n) for n in self.notes))

    @property
    def flops(self) -> float:
        return float(sum(op.flops for op in self.ops))

    @property
    def bytes(self) -> float:
        return float(sum(op.bytes for op in self.ops))

    @property
    def kernels(self) -> int:
        return int(sum(op.kernels for op in self.ops))

    @property
    def intensity(self) -> float:
        b = self.bytes
        return self.flops / b if b else float("inf")

    def with_ops(self, ops: tuple[OpRecord, ...]) -> Workload:
        return replace(self, ops=tuple(ops))

    def model_dump(self) -> dict:
        """Plain JSON-ready dict: totals first, then the per-operator records."""
        ops = [asdict(op) for op in self.ops]
        return {
            "name": self.name, "batch": self.batch, "dtype": self.dtype, "source": self.source,
            "flops": self.flops, "bytes": self.bytes, "params": self.params, "param_bytes": self.param_bytes,
            "input_bytes": self.input_bytes, "activation_peak_bytes": self.activation_peak_bytes,
            "kernels": self.kernels, "intensity": self.intensity if self.bytes else None,
            "unsupported_ops": dict(self.unsupported_ops), "notes": [n.text for n in self.notes],
            "assumptions": list(self.assumptions), "module_calls": self.module_calls,
            "python_calls": self.python_calls, "empty_module_calls": self.empty_module_calls, "lowering": self.lowering,
            "ops": ops,
        }
