"""What ``analyze_llm`` answers, in base units (seconds, bytes, tokens/s): one pass (``PhaseResult``) and the
whole answer (``LLMAnalysis``). The ``--json`` keys in ms and GB are made in ``render/json_units.py``."""

from __future__ import annotations

from operator import attrgetter
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, PlainSerializer, computed_field

from .memory import MemoryBreakdown
from .precision import Precision

# A tuple in the model (frozen, hashable), a list in its dump (JSON's shape).
Lines = Annotated[tuple[str, ...], PlainSerializer(list, return_type=list)]
_FROZEN = ConfigDict(frozen=True)


def _part(path: str, kind: type, *, dumped: bool = False) -> Any:
    """A read-only property: the attribute at ``path`` (dotted, into a part of the result), of type ``kind``;
    ``dumped``: a computed field, in the JSON too."""
    get = attrgetter(path)
    prop = property(lambda self: get(self), doc=f"``self.{path}``")
    return computed_field(prop, return_type=kind) if dumped else prop


class PhaseResult(BaseModel):
    """One forward pass (a prefill, or one decode step) on each of ``tp`` devices."""

    model_config = _FROZEN

    phase: str
    batch: int
    context: int
    latency_s: float          # roofline time of one rank + all-reduces
    compute_s: float          # the roofline's part
    communication_s: float    # tensor-parallel all-reduces
    bound: str                # compute | memory | overhead | communication
    tokens_per_s: float       # tokens this pass produces or consumes per second (all sequences)
    flops: float              # per rank
    bytes: float              # per rank
    kernels: int              # per rank


class LLMAnalysis(BaseModel):
    """The answer in base units; the dump flattens the precision and names the headline numbers."""

    model_config = _FROZEN

    model: str
    hardware: str
    mode: str
    layout: str = Field(exclude=True)    # dumped as kernel_layout
    precision: Precision = Field(exclude=True)  # dumped as weight_dtype, act_dtype, kv_dtype, precision_note
    tp: int
    batch: int
    phase: str
    context: int
    prompt: int | None
    generate: int | None
    requested: PhaseResult = Field(exclude=True)  # prefill or decode, whichever ``phase`` asked for
    prefill: PhaseResult
    decode: PhaseResult
    memory: MemoryBreakdown = Field(exclude=True)  # per device
    link: str | None                     # what tensor parallelism talks over
    request_latency_s: float | None = Field(exclude=True)
    max_batch: int                       # at this context (0: not even one sequence fits)
    max_context: int                     # at this batch (tokens per sequence; 0: none fits)
    devices_needed: int | None           # fewest devices that hold it (None: not within MAX_TP)
    decode_compute_bound_batch: int | None  # smallest batch where a decode step is compute-bound
    gemm_ridge_batch: float | None       # decode batch where the weight GEMMs reach the datasheet ridge
    reasons: Lines = ()                  # why it cannot run as asked
    suggestions: Lines = ()              # what would make it possible
    notes: Lines = ()
    warnings: Lines = ()                 # config keys that may change cost but are not modelled

    # headline numbers (base units), each read from the part that holds it (JSON: the computed ones)
    latency_s = _part("requested.latency_s", float)
    tokens_per_s = _part("requested.tokens_per_s", float, dumped=True)
    ttft_s = _part("prefill.latency_s", float)
    tpot_s = _part("decode.latency_s", float)
    fits_memory = _part("memory.fits", bool, dumped=True)
    memory_required_bytes = _part("memory.total_bytes", float)
    memory_capacity_bytes = _part("memory.capacity_bytes", float)

    @property
    def memory_per_device_bytes(self) -> dict[str, float]:
        """Each part of the per-device memory, by name (weights, kv_cache, ..., capacity, total)."""
        return {k.removesuffix("_bytes"): v for k, v in self.memory.model_dump().items() if k.endswith("_bytes")}

    kv_cache_bytes_per_token = _part("memory.kv_bytes_per_token", float)

    @property
    def decode_tokens_per_s_per_request(self) -> float:
        return 1.0 / self.tpot_s

    @property
    def decode_tokens_per_s(self) -> float:
        return self.batch / self.tpot_s

    bound = _part("requested.bound", str, dumped=True)

    @computed_field
    @property
    def possible(self) -> bool:
        return not self.reasons

    # what the JSON adds: names, the precision flattened
    kernel_layout = _part("layout", str, dumped=True)
    weight_dtype = _part("precision.weight", str, dumped=True)
    act_dtype = _part("precision.act", str, dumped=True)
    kv_dtype = _part("precision.kv", str, dumped=True)

    @computed_field
    @property
    def precision_note(self) -> str:
        return self.precision.describe()

    devices = _part("tp", int, dumped=True)
