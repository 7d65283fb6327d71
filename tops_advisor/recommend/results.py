"""What the recommender returns, in base units (seconds, bytes, ops/s): one device at its operating point
(``Recommendation``), the fewest devices of a kind for an LLM (``LLMRecommendation``), an LLM serving plan
(``LLMServingRecommendation``), a device ruled out (``Rejection``) and the ranked whole (``RecommendResult``).
The ``--json`` keys in ms, TOPS and GB are made in ``render/json_units.py``.

Money (``CostFields``, on every recommendation, models' and LLMs'): ``usd_per_hour`` of all its devices,
``usd_per_million`` ``unit`` of work (samples, or generated tokens), and the price behind them (``price_kind``, ``price_source``, ``price_date``); all None where
the device has no price of the kind asked for, with ``no_price_reason`` saying why."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, PlainSerializer, computed_field, field_serializer

from ..accuracy import ErrorBand
from ..costs import Cost
from .constraints import Constraints

# A tuple in the model (frozen), a list in its dump (JSON's shape).
Lines = Annotated[tuple[str, ...], PlainSerializer(list, return_type=list)]


class CostFields(BaseModel):
    """What an operating point costs (``costs.Cost``), flat, with the price it comes from."""

    model_config = ConfigDict(frozen=True)

    replicas: int = 1                            # devices running the operating point side by side
    usd_per_hour: float | None = None            # all replicas
    usd_per_million: float | None = None         # per million ``unit`` of the work served
    unit: str = "samples"
    price_kind: str | None = None                # "rental" or "purchase"
    unit_price_usd: float | None = None          # one device's price: per GPU-hour (rental) or per card
    price_provider: str | None = None            # who rents or sells it, or "your prices (FILE)"
    price_source: str | None = None              # provider and source title, or "your prices (FILE)"
    price_date: str | None = None                # ISO date of the price (None for the user's own)
    price_basis: str | None = None               # how a derived price was derived ("8-GPU instance / 8", ...)
    price_older_than_a_year: bool | None = None
    up_front_usd: float | None = None            # purchase: all replicas' cards
    energy_usd_per_hour: float | None = None     # purchase: all replicas' electricity, PUE included
    amortisation_usd_per_hour: float | None = None  # purchase: all replicas' cards over the years of use
    power_w: float | None = None                 # purchase: one card's board power under the predicted load
    no_price_reason: str | None = None           # why the costs are None

    @staticmethod
    def of(cost: Cost) -> dict:
        """The fields of ``cost`` (``costs.Pricing.cost``), to pass to a model built on these fields."""
        return {"usd_per_hour": cost.usd_per_hour, "usd_per_million": cost.usd_per_million, "unit": cost.unit,
                "price_kind": cost.kind.value, "unit_price_usd": cost.price.usd, "price_provider": cost.provider,
                "price_source": cost.source, "price_date": cost.date, "price_basis": cost.price.basis,
                "price_older_than_a_year": cost.older_than_a_year, "up_front_usd": cost.up_front_usd,
                "energy_usd_per_hour": cost.energy_usd_per_hour,
                "amortisation_usd_per_hour": cost.amortisation_usd_per_hour, "power_w": cost.power_w}


class Recommendation(CostFields):
    """One device at its best operating point."""

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
    price_usd: float | None            # purchase price of one card (the cheapest current one)
    throughput_per_kusd: float | None  # samples/s per 1000 USD of that price
    headroom: float | None           # latency target / predicted latency (>= 1 meets it)
    calibrated: bool
    memory_required_bytes: float
    advice: Lines = ()
    expected_error: ErrorBand | None = None  # accuracy.expected_error's band for this model family, mode, calibration
    power_mode: str | None = None    # a module's power mode the prediction is for (tdp_w is its budget)


class LLMRecommendation(CostFields):
    """The fewest devices of one kind for an LLM; its costs per million generated tokens (``unit`` "tokens") of
    ``burst_prompts`` requests served together, prefill and decode (``tokens_per_s_served``)."""

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
    tokens_per_s_served: float | None = None  # generated tokens/s of all burst_prompts requests, prefill included
    unit: str = "tokens"         # what usd_per_million counts: generated tokens
    power_mode: str | None = None  # a module's power mode the plan is for (total_tdp_w counts its budget)


class LLMServingRecommendation(CostFields):
    """One replica (``devices`` of one kind, tensor parallel) serving with continuous batching at the most
        concurrent requests that keep the targets (``llm/serving.py`` says how each number is priced). Its costs are
    those of ``replicas`` such replicas (one without a request rate), per million generated tokens."""

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
    price_usd: float | None           # purchase price of the replica's devices
    requests_per_s_target: float | None = None  # the rate the fleet serves (--requests-per-s; None: not asked)
    fleet_devices: int = 1            # replicas x devices
    unit: str = "tokens"              # what usd_per_million counts: generated tokens
    calibrated: bool = False
    why: str = ""


class Rejection(BaseModel):
    model_config = ConfigDict(frozen=True)

    hardware: str
    reason: str
    closeness: float = Field(0.0, exclude=True)  # how close it came (1 = met); used to name the closest miss


class RecommendResult(BaseModel):
    """Ranked devices (``Recommendation``; for ``recommend --llm`` ``LLMRecommendation``, or
    ``LLMServingRecommendation`` for its serving plans) and the rest with why: ``rejected`` (fails a target, a
    filter or the budget) and ``no_price`` (meets the targets, but a ranking by price or cost cannot rank a device
    without a price of that kind). ``notes``: how they were ranked, and what the counts left out (operators
    counted as zero)."""

    model_config = ConfigDict(frozen=True)

    recommendations: list[Recommendation] | list[LLMRecommendation] | list[LLMServingRecommendation]
    rejected: list[Rejection]
    no_price: list[Rejection] = []
    constraints: Constraints
    notes: Lines = ()

    @computed_field
    @property
    def rank_by(self) -> str:
        return self.constraints.rank_by

    @field_serializer("constraints")
    def _constraints(self, c: Constraints) -> dict:
        return {**asdict(c), "dtypes": list(c.dtypes)}
