"""What the recommender returns, in base units (seconds, bytes, ops/s): one device at its operating point
(``Recommendation``), the fewest devices of a kind for an LLM (``LLMRecommendation``), a device ruled out
(``Rejection``) and the ranked whole (``RecommendResult``). The ``--json`` keys in ms, TOPS and GB are made in
``render/json_units.py``.

Money (``CostFields``, on every model recommendation): ``usd_per_hour`` of all its devices, ``usd_per_million``
``unit`` of work, and the price behind them (``price_kind``, ``price_source``, ``price_date``); all None where
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
    why: ``rejected`` (fails a target, a filter or the budget) and ``no_price`` (meets the targets, but a ranking
    by price or cost cannot rank a device without a price of that kind). ``notes``: how they were ranked, and
    what the counts left out (operators counted as zero)."""

    model_config = ConfigDict(frozen=True)

    recommendations: list[Recommendation] | list[LLMRecommendation]
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
