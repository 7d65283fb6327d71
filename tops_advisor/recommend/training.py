"""Rank devices for training a model: one counted step (``TrainingWorkload``) predicted on every device that
passes the filters, with the step-time, throughput and time-to-train targets, on one GPU or several
(``train.parallel``: DDP or FSDP)."""

from __future__ import annotations

from dataclasses import dataclass

from ..calibration import Calibration
from ..catalog import Hardware
from ..costs import PriceKind
from ..errors import InputError, NothingFeasibleError
from ..formatting import fmt_bytes, fmt_memory, format_seconds
from ..train.parallel import FSDP_UNITS_DEFAULT, STRATEGIES, ParallelPlan, plan_data_parallel
from ..train.predict import TrainingPrediction, predict_training
from ..train.workload import TrainingWorkload
from .constraints import Constraints
from .ranking import candidates, rank
from .results import CostFields, Rejection


@dataclass(frozen=True)
class TrainTargets:
    """What a training run must reach: a step time, a throughput, or ``samples`` within ``max_time_s``; on
    ``devices`` GPUs per card kind with ``strategy`` (ddp or fsdp) when more than one."""

    step_time_s: float | None = None
    samples_per_s: float | None = None
    max_time_s: float | None = None
    samples: float | None = None
    devices: int = 1
    strategy: str = "ddp"
    fsdp_units: int = FSDP_UNITS_DEFAULT   # the units FSDP wraps (an LLM's decoder layers)

    def __post_init__(self):
        if (self.max_time_s is None) != (self.samples is None):
            raise InputError("--max-time and --samples go together (the time to train that many samples)",
                             hint="e.g. --max-time 12h --samples 1.2e8")
        if self.devices < 1:
            raise InputError(f"--devices must be at least 1, got {self.devices}")
        if self.strategy not in STRATEGIES:
            raise InputError(f"unknown --strategy {self.strategy!r}; expected one of {', '.join(STRATEGIES)}")
        for name in ("step_time_s", "samples_per_s", "max_time_s", "samples"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise InputError(f"{name} must be greater than zero, got {value}")


@dataclass(frozen=True)
class TrainingRecommendation:
    hardware: str
    name: str
    devices: int
    strategy: str
    step_s: float
    samples_per_s: float
    mfu: float
    bound: str
    memory_per_device_bytes: float
    tdp_w: float
    time_to_train_s: float | None
    prediction: TrainingPrediction
    plan: ParallelPlan | None = None
    cost: dict | None = None          # CostFields.of(costs.Cost) of all devices; None without a price
    no_price: str | None = None       # why there is no cost

    @property
    def usd_per_run(self) -> float | None:
        """What training ``samples`` costs: the time to train at the devices' hourly cost."""
        if self.cost is None or self.time_to_train_s is None:
            return None
        return self.cost["usd_per_hour"] * self.time_to_train_s / 3600

    @property
    def samples_per_s_per_watt(self) -> float:
        return self.samples_per_s / (self.tdp_w * self.devices) if self.tdp_w else 0.0


SCORES = {"efficiency": lambda r: r.samples_per_s_per_watt, "throughput": lambda r: r.samples_per_s,
          "latency": lambda r: -r.step_s, "price": lambda r: r.samples_per_s_per_watt,
          "cost": lambda r: -r.cost["usd_per_million"] if r.cost else float("-inf")}


def _cost(hw: Hardware, pricing, kind: PriceKind, rate: float, devices: int, busy: float) -> tuple[dict | None, str | None]:
    if pricing is None:
        return None, None
    cost = pricing.cost(hw, kind, units_per_s=rate, devices=devices, busy=busy)
    return (CostFields.of(cost), None) if cost is not None else (None, pricing.missing(hw, kind))


def _miss(rec: TrainingRecommendation, t: TrainTargets) -> str | None:
    if t.step_time_s and rec.step_s > t.step_time_s:
        return f"step {format_seconds(rec.step_s)} > {format_seconds(t.step_time_s)}"
    if t.samples_per_s and rec.samples_per_s < t.samples_per_s:
        return f"{rec.samples_per_s:,.0f} samples/s < {t.samples_per_s:,.0f}"
    if t.max_time_s and rec.time_to_train_s and rec.time_to_train_s > t.max_time_s:
        return f"{format_seconds(rec.time_to_train_s)} to train > {format_seconds(t.max_time_s)}"
    return None


def evaluate(tw: TrainingWorkload, hw: Hardware, t: TrainTargets, mode: str,
             calibration: Calibration | None = None, pricing=None,
             kind: PriceKind = PriceKind.RENTAL) -> TrainingRecommendation | Rejection:
    """One device: its step (on ``t.devices`` of it), or why it is ruled out."""
    pred = predict_training(tw, hw, calibration, mode)
    plan = None
    step, rate, memory = pred.step_s, pred.samples_per_s, pred.memory_required_bytes
    if t.devices > 1:
        if not (hw.peer_link_bandwidth_gb_s or hw.pcie_bandwidth_bytes_per_s):
            return Rejection(hardware=hw.id, reason="no peer link or PCIe in the catalog to join several")
        plan = plan_data_parallel(pred, hw, t.strategy, t.devices, calibration=calibration, units=t.fsdp_units,
                                  reserve_bytes=pred.memory_required_bytes - pred.memory.peak_bytes)
        step, rate, memory = plan.step_s, plan.samples_per_s, plan.memory_per_device_bytes
    if memory > hw.memory_bytes:
        return Rejection(hardware=hw.id, reason=f"needs {fmt_memory(memory)} per device, has "
                                                f"{fmt_bytes(hw.memory_bytes)}")
    busy = min(1.0, sum(p.device_s for p in pred.parts) / pred.step_s) if pred.step_s else 1.0
    cost, no_price = _cost(hw, pricing, kind, rate, t.devices, busy)
    rec = TrainingRecommendation(
        hardware=hw.id, name=hw.name, devices=t.devices, strategy=t.strategy if t.devices > 1 else "single",
        step_s=step, samples_per_s=rate, mfu=pred.mfu * pred.step_s / step, bound=pred.bound,
        memory_per_device_bytes=memory, tdp_w=hw.tdp_w,
        time_to_train_s=t.samples / rate if t.samples and rate else None, prediction=pred, plan=plan, cost=cost,
        no_price=no_price)
    why = _miss(rec, t)
    return rec if why is None else Rejection(hardware=hw.id, reason=why)


def recommend_training(tw: TrainingWorkload, devices: list[Hardware], c: Constraints, t: TrainTargets,
                       calibrations: dict[str, Calibration | None] | None = None, pricing=None
                       ) -> tuple[list[TrainingRecommendation], list[Rejection]]:
    """Devices that train ``tw`` within the targets, best first by ``c.rank_by``, and the others with why.
    ``pricing`` (``costs.Pricing``): each device's cost per hour, per million samples and per run (rented, or
    bought per ``c.price_kind``); ``rank_by`` "cost" ranks the cheapest per million samples first and lists
    devices without a price among the rejections."""
    calibrations = calibrations or {}
    kept, rejected = candidates(devices, c)
    mode = c.mode if c.mode in ("eager", "graph", "compiled") else "eager"

    def nothing(rej: list[Rejection]) -> NothingFeasibleError:
        return NothingFeasibleError("no device trains it within the targets", hint="; ".join(
            f"{r.hardware}: {r.reason}" for r in rej[:4]))

    kind = PriceKind.RENTAL if c.price_kind == "rental" else PriceKind.PURCHASE

    def one(hw: Hardware):
        rec = evaluate(tw, hw, t, mode, calibrations.get(hw.id), pricing, kind)
        if c.rank_by == "cost" and isinstance(rec, TrainingRecommendation) and rec.cost is None:
            return Rejection(hardware=hw.id, reason=rec.no_price or "no price")
        return rec

    return rank(kept, rejected, c, one, SCORES, nothing)
