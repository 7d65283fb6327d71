"""What the recommender returns, in base units (seconds, bytes, ops/s): one device at its operating point
(``Recommendation``), the fewest devices of a kind for an LLM (``LLMRecommendation``), an LLM serving plan
(``LLMServingRecommendation``), a device ruled out
(``Rejection``) and the ranked whole (``RecommendResult``). The ``--json`` keys in ms, TOPS and GB are made in
``render/json_units.py``."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, PlainSerializer, computed_field, field_serializer

from ..accuracy import ErrorBand
from .constraints import Constraints

# A tuple in the model (frozen), a list in its dump (JSON's shape).
Lines = Annotated[tuple[str, ...], PlainSerializer(list, return_type=list)]


class Recommendation(BaseModel):
    """One device at its best operating point."""

    model_config = ConfigDict(frozen=True)

    hardware: str
    name: str
    dtype: str
    batch: int
    mode: str
    latency_s: float
    throughput_per_s: float
    attainable_ops_per_s: float
    utilisation: float
    bound: str
    tdp_w: float
    tops_per_watt: float             # attainable TOPS per watt of TDP
    throughput_per_watt: float
    price_usd: float | None
    throughput_per_kusd: float | None  # samples/s per 1000 USD
    headroom: float | None           # latency target / predicted latency (>= 1 meets it)
    calibrated: bool
    memory_required_bytes: float
    advice: Lines = ()
    expected_error: ErrorBand | None = None  # accuracy.expected_error's band for this model family, mode, calibration


class LLMRecommendation(BaseModel):
    """The fewest devices of one kind for an LLM."""

    model_config = ConfigDict(frozen=True)

    hardware: str
    devices: int                 # tensor-parallel degree needed
    tokens_per_s: float          # decode tokens/s per request
    ttft_s: float
    tpot_s: float
    memory_required_bytes: float  # per device
    bound: str
    total_tdp_w: float
    tokens_per_s_per_watt: float  # per request, over all devices' TDP
    price_usd: float | None      # all devices
    calibrated: bool
    why: str
    kernels: str = "torch"       # --kernels as run: torch, fused, or an engine profile (llama.cpp:Q4_0, gpt-fast)
    weight_dtype: str = "bf16"
    act_dtype: str = "bf16"
    kv_dtype: str = "bf16"
    ttft_kind: str = "burst"     # TTFT is the prefill of burst_prompts prompts in one pass
    burst_prompts: int = 1


class LLMServingRecommendation(BaseModel):
    """One replica (``devices`` of one kind, tensor parallel) serving with continuous batching at the most
    concurrent requests that keep the targets (``llm/serving.py`` says how each number is priced)."""

    model_config = ConfigDict(frozen=True)

    hardware: str
    devices: int                      # per replica: the tensor-parallel degree
    concurrent_requests: int          # requests served at once by one replica
    limited_by: str                   # what stops one more: memory, token budget, decode rate, TTFT
    tokens_per_s_per_request: float   # per-user decode rate (1 / step_s)
    tokens_per_s: float               # generated tokens per second of the replica
    tokens_per_s_per_gpu: float
    requests_per_s: float             # requests one replica completes per second
    ttft_s: float                     # one new prompt, chunked beside the running decodes
    step_s: float                     # mean step: the decode step and the prompts' share
    decode_step_s: float
    prefill_s: float                  # one prompt alone
    token_budget: int                 # tokens per step (vLLM's max_num_batched_tokens)
    prompt: int
    generate: int
    kv_cache_bytes: float             # per device
    memory_required_bytes: float      # per device
    bound: str                        # of the decode step
    kernels: str
    weight_dtype: str
    act_dtype: str
    kv_dtype: str
    total_tdp_w: float                # the replica's devices
    tokens_per_s_per_watt: float      # generated tokens/s per watt of the replica's TDP
    price_usd: float | None           # list price of the replica's devices
    usd_per_hour: float | None        # the replica, rented
    usd_per_million: float | None     # per million generated tokens, rented
    unit: str = "tokens"              # what usd_per_million counts
    price_kind: str | None = None     # rental
    price_source: str | None = None
    price_date: str | None = None
    replicas: int | None = None       # to serve requests_per_s_target (None: no rate asked)
    fleet_devices: int | None = None
    fleet_usd_per_hour: float | None = None
    calibrated: bool = False
    why: str = ""


class Rejection(BaseModel):
    model_config = ConfigDict(frozen=True)

    hardware: str
    reason: str
    closeness: float = Field(0.0, exclude=True)  # how close it came (1 = met); used to name the closest miss


class RecommendResult(BaseModel):
    """Ranked devices (``Recommendation``; for ``recommend --llm`` ``LLMRecommendation``, or
    ``LLMServingRecommendation`` for its serving plans) and the rest with why. ``notes``: how they were ranked, and what the counts left out (operators counted as zero)."""

    model_config = ConfigDict(frozen=True)

    recommendations: list[Recommendation] | list[LLMRecommendation] | list[LLMServingRecommendation]
    rejected: list[Rejection]
    constraints: Constraints
    notes: Lines = ()

    @computed_field
    @property
    def rank_by(self) -> str:
        return self.constraints.rank_by

    @field_serializer("constraints")
    def _constraints(self, c: Constraints) -> dict:
        return {**asdict(c), "dtypes": list(c.dtypes)}
