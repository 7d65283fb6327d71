"""What the recommender returns, in base units (seconds, bytes, ops/s): one device at its operating point
(``Recommendation``), the fewest devices of a kind for an LLM (``LLMRecommendation``), a device ruled out
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
    power_mode: str | None = None    # a module's power mode the prediction is for (tdp_w is its budget)


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
    power_mode: str | None = None  # a module's power mode the plan is for (total_tdp_w counts its budget)


class Rejection(BaseModel):
    model_config = ConfigDict(frozen=True)

    hardware: str
    reason: str
    closeness: float = Field(0.0, exclude=True)  # how close it came (1 = met); used to name the closest miss


class RecommendResult(BaseModel):
    """Ranked devices (``Recommendation``, or ``LLMRecommendation`` for ``recommend --llm``) and the rest with
    why. ``notes``: how they were ranked, and what the counts left out (operators counted as zero)."""

    model_config = ConfigDict(frozen=True)

    recommendations: list[Recommendation] | list[LLMRecommendation]
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
