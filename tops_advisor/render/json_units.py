"""The ``--json`` form of results: the models hold base units (seconds, bytes, ops/s); the human-unit keys
(``latency_ms``, ``memory_required_gb``, ``attainable_tops``) are made here, from two tables.

* ``ADDED``: keys a pydantic result gains after its own fields (both ``latency_s`` and ``latency_ms`` appear).
* ``RENAMED``: a prediction's dump (``Prediction.model_dump``) in base units, each base key replaced in place
  by its human key (only ``latency_ms`` appears).

``to_json`` walks a result (models, lists, tuples, dicts of them) and applies both, and writes each
``accuracy.ErrorBand`` with the keys of its source in their order. Conversions: ms = s * 1e3,
GB = bytes / 1e9, TOPS = ops/s / 1e12 (decimal units, as the catalog's).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pydantic import BaseModel

from ..accuracy import ErrorBand
from ..api import ModelAnalysis
from ..llm.analysis import LLMAnalysis, PhaseResult
from ..recommend import LLMRecommendation, LLMServingRecommendation, Recommendation
from ..recommend.results import CostFields
from ..roofline import Prediction
from ..validate.train_compare import TrainValidationReport


def ms(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1e3


def gb(nbytes: float | None) -> float | None:
    return None if nbytes is None else nbytes / 1e9


def tops(ops_per_s: float | None) -> float | None:
    return None if ops_per_s is None else ops_per_s / 1e12


def same(value):
    return value


@dataclass(frozen=True)
class Key:
    """One JSON key made from an attribute in base units (``base`` None: the key is null)."""

    key: str
    base: str | None
    convert: Callable = same

    def value(self, obj):
        if self.base is None:
            return None
        v = getattr(obj, self.base)
        return {k: self.convert(x) for k, x in v.items()} if isinstance(v, dict) else self.convert(v)


ADDED: dict[type, tuple[Key, ...]] = {
    PhaseResult: (Key("latency_ms", "latency_s", ms),),
    LLMAnalysis: (
        Key("latency_ms", "latency_s", ms), Key("ttft_ms", "ttft_s", ms),
        Key("time_per_output_token_ms", "tpot_s", ms),
        Key("decode_tokens_per_s_per_request", "decode_tokens_per_s_per_request"),
        Key("decode_tokens_per_s", "decode_tokens_per_s"), Key("request_latency_ms", "request_latency_s", ms),
        Key("memory_required_gb", "memory_required_bytes", gb), Key("memory_capacity_gb", "memory_capacity_bytes", gb),
        Key("memory_per_device_gb", "memory_per_device_bytes", gb),
        Key("kv_cache_bytes_per_token", "kv_cache_bytes_per_token")),
    Recommendation: (Key("latency_ms", "latency_s", ms), Key("attainable_tops", "attainable_ops_per_s", tops),
                     Key("memory_required_gb", "memory_required_bytes", gb)),
    # the LLM form fills the keys the model form's table reads: latency is the time per output token
    LLMRecommendation: (Key("latency_ms", "tpot_s", ms), Key("ttft_ms", "ttft_s", ms),
                        Key("memory_required_gb", "memory_required_bytes", gb), Key("dtype", None),
                        Key("batch", None), Key("throughput_per_s", "tokens_per_s")),
    LLMServingRecommendation: (Key("ttft_ms", "ttft_s", ms), Key("time_per_output_token_ms", "step_s", ms),
                               Key("decode_step_ms", "decode_step_s", ms), Key("prefill_ms", "prefill_s", ms),
                               Key("memory_required_gb", "memory_required_bytes", gb),
                               Key("kv_cache_gb", "kv_cache_bytes", gb)),
    # each {measured, predicted}
    TrainValidationReport: (Key("step_time_ms", "step_time_s", ms), Key("forward_ms", "forward_s", ms),
                            Key("backward_ms", "backward_s", ms), Key("optimizer_ms", "optimizer_s", ms)),
}

RENAMED: dict[str, tuple[str, Callable]] = {
    "latency_s": ("latency_ms", ms), "device_time_s": ("device_time_ms", ms), "host_time_s": ("host_time_ms", ms),
    "compute_s": ("compute_ms", ms), "memory_s": ("memory_ms", ms), "overhead_s": ("overhead_ms", ms),
    "time_by_bound_s": ("time_by_bound_ms", ms), "attainable_ops_per_s": ("attainable_tops", tops),
    "peak_ops_per_s": ("peak_tops", tops), "memory_required_bytes": ("memory_required_gb", gb),
    "memory_capacity_bytes": ("memory_capacity_gb", gb),
}

# An error band's keys in the order each source has always written them; fields that are None are left out.
BAND_KEYS = {
    "report": ("family", "mode", "calibrated", "median_abs_error", "worst_abs_error", "n", "card", "text",
               "blind_rounds", "borrowed_from"),
    "blind": ("mode", "dtype", "calibrated", "round", "median_abs_error", "worst_abs_error", "n", "card", "text",
              "borrowed_from"),
    "published": ("median_abs_error", "worst_abs_error", "n", "card", "basis", "text", "family", "mode",
                  "calibrated", "borrowed_from", "unmeasured"),
}


def band_json(band: ErrorBand) -> dict:
    d = band.model_dump()
    d["blind_rounds"] = list(d["blind_rounds"]) or None  # none: no key, as for the other missing fields
    return {k: d[k] for k in BAND_KEYS[band.source] if d[k] is not None}


def renamed(d: dict) -> dict:
    """``d`` with each base-unit key of ``RENAMED`` replaced, in place, by its human key."""
    out = {}
    for k, v in d.items():
        if k in RENAMED:
            key, convert = RENAMED[k]
            out[key] = {n: convert(x) for n, x in v.items()} if isinstance(v, dict) else convert(v)
        else:
            out[k] = [renamed(x) for x in v] if k == "ops" else v
    return out


def prediction_json(p: Prediction, with_ops: bool = True) -> dict:
    return renamed(p.model_dump(with_ops=with_ops))


def analysis_json(a: ModelAnalysis, plot: str | None = None) -> dict:
    """``analyze --json``: the prediction, then the advice, the counter's caveats, the error band, and what the
    operating point costs (``costs``: one record per kind of price the device has, with the keys of a
    recommendation's costs; ``no_price``: why a kind is missing)."""
    w = a.workload
    return {**prediction_json(a.prediction), "advice": a.advice, "unsupported_ops": dict(w.unsupported_ops),
            # the prediction's assumptions (mode, rates, an int8 engine's calibration caveat), then the count's
            "assumptions": [*a.prediction.assumptions, *w.assumptions], "notes": [n.text for n in w.notes],
            "expected_error": band_json(a.band) if a.band else None, "plot": plot,
            "costs": [{"devices": c.devices, **CostFields.of(c)} for c in a.costs], "no_price": list(a.no_price),
            **_power_mode(a.perf.hardware)}


def _power_mode(hw) -> dict:
    """``power_mode`` for a module (the nvpmodel mode predicted), nothing for a device without modes."""
    return {"power_mode": hw.power_mode} if hw.power_modes else {}


_SPECIAL = {ErrorBand: band_json, Prediction: prediction_json, ModelAnalysis: analysis_json}


def _converts(value) -> bool:
    """Whether ``value`` holds anything ``to_json`` writes differently from ``model_dump``."""
    if isinstance(value, tuple(ADDED) + tuple(_SPECIAL)):
        return True
    if isinstance(value, BaseModel):
        return any(_converts(getattr(value, f)) for f in type(value).model_fields)
    if isinstance(value, list | tuple):
        return any(_converts(x) for x in value)
    if isinstance(value, dict):
        return any(_converts(x) for x in value.values())
    return False


def to_json(obj):
    """The JSON-ready form of a result (see the module docstring); anything else as ``model_dump`` has it."""
    special = _SPECIAL.get(type(obj))
    if special is not None:
        return special(obj)
    if isinstance(obj, BaseModel):
        d = obj.model_dump()
        for name in type(obj).model_fields:
            if name in d and _converts(value := getattr(obj, name)):
                d[name] = to_json(value)
        for k in ADDED.get(type(obj), ()):
            d[k.key] = k.value(obj)
        return d
    if isinstance(obj, list | tuple):
        return [to_json(x) for x in obj]
    if isinstance(obj, dict):
        return {k: to_json(v) for k, v in obj.items()}
    return obj
