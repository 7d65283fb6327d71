"""The Python API behind the CLI, for capacity-planning scripts.

    from tops_advisor.api import ModelCosts, load_catalog, predict
    costs = ModelCosts("examples/resnet50.py")           # counts the model (twice, at two batches)
    costs = ModelCosts("timm:convnext_small")            # or a library model by name (the [models] extra)
    catalog = load_catalog()
    for hw in catalog:
        p = predict(costs.at(batch=32, dtype="fp16"), hw, mode="graph")
        print(hw.id, p.latency_s, p.bound)

Training: ``analyze_training(model, hw, batch=32, setup=TrainSetup("amp", "adamw"))`` counts one optimizer
step and predicts it; ``TrainingCosts(model, setup).at(batch)`` counts once for ``predict_training`` on every
device.

Counting needs torch; everything else is pure and fast (predicting one workload on the whole catalog takes
milliseconds).

What the work costs: ``load_pricing(catalog)`` (the shipped prices, your own with ``user_prices=``, and the
assumptions in ``CostSettings``) passed to ``recommend(..., pricing=...)`` or ``analyze_model(..., pricing=...)``;
``docs/recommend.md`` has a capacity-planning script.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from .accuracy import ErrorBand
from .calibration import Calibration, find_calibration, load_calibration
from .catalog import Catalog, Hardware, load_catalog
from .costs import Cost, CostSettings, PriceKind, Pricing, busy_fraction, load_pricing
from .errors import CountingError, DoesNotFitError, check_batch
from .formatting import fmt_bytes, fmt_memory
from .kinds import Lowering, Mode
from .roofline import Prediction, device_perf, predict
from .roofline.hosts import HostProfile, host_perf
from .scaling import batch_affine, retype
from .train import TrainingWorkload, TrainSetup
from .train.parallel import ParallelPlan
from .train.predict import TrainingPrediction, predict_training
from .workload import Workload

__all__ = ["Calibration", "Catalog", "Cost", "CostSettings", "Hardware", "ModelAnalysis", "ModelCosts", "Prediction",
           "Pricing", "TrainSetup", "TrainingAnalysis", "TrainingCosts", "TrainingPrediction", "TrainingWorkload",
           "Workload", "analyze_model", "analyze_training", "calibration_for", "check_model_for_mode", "device_perf",
           "largest_fitting_batch", "load_calibration", "load_catalog", "load_pricing", "operating_costs", "predict",
           "predict_training", "training_step"]

_COUNT_DTYPES = ("fp32", "fp16", "bf16", "amp")   # amp: an fp32 model under autocast (counting/amp.py)


class ModelCosts:
    """Count a model once and derive its workload at any batch and precision.

    ``model``: a model file path, ``timm:NAME``, ``torchvision:NAME``, ``hf:PATH_OR_ID`` (``task``, ``seq``,
    ``input_shape`` shape a library model's inputs), or a model already loaded (``counting.load_model``).

    The model is counted at two small batches; other batches are extrapolated (every per-operator count of
    a feed-forward model is affine in the batch, see ``scaling.batch_affine``). A model whose operator
    sequence changes with the batch is counted again at each batch asked for.

    ``mode`` picks the kernels the workloads list: eager PyTorch's for "graph" and "eager", inductor's fused
    kernels for "compiled" (``counting/lowering/inductor.py``); ``at(..., mode=...)`` overrides it per call.
    ``channels_last``: model and input in channels-last memory format (``model.to(memory_format=
    torch.channels_last)``): eager PyTorch's kernels run their convolutions as cuDNN's NHWC kernels
    (``counting.lowering.channels_last_convs``); inductor and TensorRT choose their own layouts, so it changes
    nothing in those modes.
    """

    def __init__(self, model, *, base_dtype: str = "fp16", strict: bool = False, batches: tuple[int, int] = (1, 2),
                 task: str | None = None, seq: int | None = None, input_shape: tuple[int, ...] | None = None,
                 mode: str = "graph", channels_last: bool = False):
        from .counting import count, load_model  # torch is only needed here

        check_model_for_mode(model, mode)
        for b in batches:
            check_batch(b, "batches")
        # a model file path, timm:NAME, torchvision:NAME, hf:PATH_OR_ID, or a counting.load_model result
        self._source = load_model(model, task=task, seq=seq, input_shape=input_shape)
        self.model_path = self._source.label
        self.base_dtype = base_dtype
        self.strict = strict
        self._count = count
        self.mode = mode
        self.channels_last = channels_last
        self._batches = batches
        self._cache: dict[tuple[int, str, tuple[str, bool]], Workload] = {}
        self._affine_ok: dict[tuple[str, bool], bool] = {}
        self._anchor_pairs: dict[tuple[str, bool], tuple[Workload, ...]] = {}
        self._anchors = self._anchors_for(_counting_for(mode))

    def _counted(self, batch: int, dtype: str, how: tuple[str, bool]) -> Workload:
        """Counted at ``batch`` and ``dtype`` with ``how`` = (lowering, captured); a forward that never asked
        whether it was captured (``counting/capture.py``) is counted once for both answers."""
        key = (batch, dtype, how)
        twin = self._cache.get((batch, dtype, (how[0], not how[1])))
        if key not in self._cache and twin is not None and not twin.capture_sensitive:
            self._cache[key] = replace(twin, captured=how[1])   # the same path, labelled as asked
        if key not in self._cache:
            self._cache[key] = self._count(self._source, batch=batch, dtype=dtype, strict=self.strict,
                                           lowering=how[0], captured=how[1])
        return self._cache[key]

    def _anchors_for(self, how: tuple[str, bool]) -> tuple[Workload, ...]:
        if how not in self._anchor_pairs:
            self._anchor_pairs[how] = tuple(self._counted(b, self.base_dtype, how) for b in self._batches)
        return self._anchor_pairs[how]

    @property
    def unsupported_ops(self) -> dict[str, int]:
        return dict(self._anchors[0].unsupported_ops)

    def at(self, batch: int, dtype: str | None = None, mode: str | None = None) -> Workload:
        """The workload at ``batch`` and ``dtype`` (fp32/fp16/bf16/amp counted; fp8/int8/int4 derived), as the
        kernels of ``mode`` (default: the one given at construction). A batch below 1 is an InputError."""
        check_batch(batch)
        dtype = dtype or self.base_dtype
        how = _counting_for(mode or self.mode)
        base = dtype if dtype in _COUNT_DTYPES else "fp16"
        if (batch, base, how) in self._cache or batch in self._batches:
            w = self._counted(batch, base, how)
        elif base == self.base_dtype and self._affine_ok.get(how, True):
            try:
                w = batch_affine(*self._anchors_for(how), batch)
            except CountingError:
                self._affine_ok[how] = False
                w = self._counted(batch, base, how)
            self._cache[(batch, base, how)] = w
        else:
            w = self._counted(batch, base, how)
        w = retype(w, dtype) if dtype != base else w
        if self.channels_last and how[0] == Lowering.PYTORCH_CUDA:
            from .counting.lowering import channels_last_convs
            w = channels_last_convs(w)
        return w


def check_model_for_mode(model, mode: str) -> None:
    """Refuse, in one line, a model the mode cannot take: a TensorRT engine is built from a model file or a
    library model, not from an LLM preset or config (TensorRT-LLM is not modelled)."""
    from .errors import InputError
    from .llm import is_llm_spec

    if mode == Mode.TENSORRT and isinstance(model, (str, Path)) and is_llm_spec(model):
        raise InputError(f"--engine tensorrt predicts a model file or a library model; {model} is an LLM config",
                         hint=f"TensorRT-LLM is not modelled; tops-advisor llm {model} --kernels fused")


def _counting_for(mode: str) -> tuple[str, bool]:
    """How a mode's workload is counted: (lowering, captured): inductor's kernels for compiled, eager
    PyTorch's else; captured (``counting/capture.py``) in graph and compiled mode."""
    from .counting.capture import captured_for
    from .counting.lowering import lowering_for

    return lowering_for(mode), captured_for(mode)


@dataclass(frozen=True)
class ModelAnalysis:
    """One model on one device: the workload counted, the prediction in the mode asked for and in the other
    one (for advice), the advice, and the expected-error band quoted beside it. Its ``--json`` form is
    ``render.json_units.analysis_json``."""

    workload: Workload
    prediction: Prediction
    other: Prediction | None   # None in compiled mode
    advice: list
    band: ErrorBand | None
    perf: object  # roofline.DevicePerf: the rates the prediction used (the roofline chart draws them)
    costs: tuple[Cost, ...] = ()         # rented and bought, where the device has such a price
    no_price: tuple[str, ...] = ()       # why a kind of price is missing

    @property
    def largest_fitting_batch(self) -> int:
        """The largest batch whose memory fits the device (``largest_fitting_batch``); 0 when none does."""
        return largest_fitting_batch(self.workload, self.prediction)

    def require_fit(self) -> None:
        """Raise DoesNotFitError, one line naming the memory needed, the device's and the largest batch that
        fits, when the workload does not fit in the device's memory."""
        p = self.prediction
        if p.fits_memory:
            return
        most = self.largest_fitting_batch
        have = f"{p.hardware} has {fmt_bytes(p.memory_capacity_bytes)}"
        if most < 1:
            raise DoesNotFitError(f"batch {p.batch} needs {fmt_memory(p.memory_required_bytes)}; {have}; even "
                                  "batch 1 does not fit", hint="lower the precision (--dtype int8 halves fp16 "
                                                               "weights) or choose a device with more memory")
        raise DoesNotFitError(f"batch {p.batch} needs {fmt_memory(p.memory_required_bytes)}; {have}; the largest "
                              f"batch that fits is ~{most:,}", hint=f"--batch {most} or less")


def analyze_model(model, hw: Hardware, *, batch: int = 1, dtype: str = "fp16", mode: str = "graph",
                  calibration: tuple[Calibration | None, str] = (None, ""), tf32_matmul: bool = False,
                  strict: bool = False, host: HostProfile | None = None, pricing: Pricing | None = None,
                  channels_last: bool = False, opt_batch: int | None = None) -> ModelAnalysis:
    """Count ``model`` (a path, a library spec or a ``counting.load_model`` result) at ``batch`` and predict
    it on ``hw``. Precisions without eager kernels (fp8, int8, ...) are counted in fp16 and rescaled; "amp" is
    counted under autocast; ``mode`` "compiled" counts inductor's kernels (docs/compiled.md), "tensorrt" a
    TensorRT engine's (docs/tensorrt.md; int8 where ``hw`` has an int8 peak). ``host``: an
    eager host profile (``roofline/hosts.py``) priced in place of the calibration's host cost. ``pricing``
    (``load_pricing``): what the operating point costs, rented and bought (``operating_costs``).
    ``channels_last``: model and input channels-last (``ModelCosts``). ``opt_batch`` (mode tensorrt): the batch
    the engine was built for (its optimisation profile's opt shape), whose kernels it runs at ``batch``."""
    import warnings

    from .accuracy import expected_error, model_family
    from .advice import advise
    from .counting import UnsupportedOpWarning
    from .errors import InputError, UnsupportedPrecisionError

    check_batch(batch)
    if opt_batch is not None and mode != Mode.TENSORRT:
        raise InputError(f"--opt-batch is a TensorRT engine's build batch; mode {mode} has none",
                         hint="add --engine tensorrt, or drop --opt-batch")
    if mode == Mode.TENSORRT and dtype == "amp":
        raise InputError("--dtype amp is torch.autocast; a TensorRT engine is built in one precision",
                         hint="--engine tensorrt --dtype fp16 (or int8, fp32)")
    if (peak := "fp16" if dtype == "amp" else dtype) not in hw.dense_tops:   # amp: autocast to fp16
        raise UnsupportedPrecisionError(f"{hw.id} has no {peak} peak; it has {', '.join(hw.dense_tops)}")
    base = dtype if dtype in _COUNT_DTYPES else "fp16"
    with warnings.catch_warnings():  # unsupported operators are in the workload; the caller shows them
        warnings.simplefilter("ignore", UnsupportedOpWarning)
        costs = ModelCosts(model, base_dtype=base, strict=strict, batches=(batch, batch), mode=mode,
                           channels_last=channels_last)
    workload = costs.at(batch, dtype)
    opt = costs.at(opt_batch, dtype) if opt_batch not in (None, batch) else None
    perf = device_perf(hw, *calibration)
    if host is not None:
        perf = host_perf(perf, host, dtype)
    pred = predict(workload, hw, mode=mode, tf32_matmul=tf32_matmul, perf=perf, opt_workload=opt)
    other = None
    if mode not in (Mode.COMPILED, Mode.TENSORRT):  # no eager counterpart from inductor's or an engine's kernels
        other_mode = Mode.GRAPH if mode == Mode.EAGER else Mode.EAGER
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UnsupportedOpWarning)
            other_workload = costs.at(batch, dtype, mode=other_mode)  # counted again only if the path differs
        other = predict(other_workload, hw, mode=other_mode, tf32_matmul=tf32_matmul, perf=perf)
    band = expected_error(model_family(workload), mode, pred.calibrated, hardware=hw, dtype=dtype)
    costs, no_price = operating_costs(pred, hw, pricing) if pricing is not None else ((), ())
    return ModelAnalysis(workload, pred, other, advise(pred, hw, other), band, perf, costs, no_price)


def operating_costs(pred: Prediction, hw: Hardware, pricing: Pricing) -> tuple[tuple[Cost, ...], tuple[str, ...]]:
    """What one card running ``pred`` flat out costs, rented and bought (where ``hw`` has such a price), and why
    each kind it has no price of is missing."""
    costs, missing = [], []
    for kind in (PriceKind.RENTAL, PriceKind.PURCHASE):
        cost = pricing.cost(hw, kind, units_per_s=pred.throughput_per_s,
                            busy=busy_fraction(pred.time_by_bound_s, pred.latency_s))
        if cost is None:
            missing.append(pricing.missing(hw, kind))
        else:
            costs.append(cost)
    return tuple(costs), tuple(missing)


def largest_fitting_batch(workload: Workload, pred: Prediction) -> int:
    """The largest batch whose memory fits ``pred``'s device, from the memory model the prediction used:
    weights and the runtime's reserve are fixed, activations and inputs grow in proportion to the batch (so
    ``required(b) = fixed + b * per_sample``); 0 when even batch 1 does not fit. An estimate: the activation
    peak of a real run is not exactly proportional."""
    per_batch = workload.activation_peak_bytes + workload.input_bytes
    fixed = pred.memory_required_bytes - per_batch
    room = pred.memory_capacity_bytes - fixed
    per_sample = per_batch / workload.batch
    if per_sample <= 0:
        return workload.batch if pred.fits_memory else 0
    return max(int(room // per_sample), 0)


def calibration_for(hw: Hardware, explicit: str | Path | None = None, use: bool = True
                    ) -> tuple[Calibration | None, str]:
    """The calibration to use for a device (explicit file > user's saved > shipped), and where it came from. A
    module in another power mode than its datasheet's (``Hardware.at_power_mode``) takes only an explicit file:
    a saved or shipped calibration measured it as probed, at other clocks."""
    if not use or (explicit is None and not hw.at_datasheet_mode):
        return None, ""
    return find_calibration(hw.id, explicit)


# --- training ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class TrainingAnalysis:
    """One training step of a model on one device: the counted step and its prediction."""

    workload: TrainingWorkload
    prediction: TrainingPrediction
    plan: ParallelPlan | None = None     # on several GPUs (DDP or FSDP)

    def require_fit(self) -> None:
        """Raise DoesNotFitError (one line: the peak, the device's memory) when the step does not fit."""
        p = self.prediction
        if self.plan is not None:
            if not self.plan.fits_memory:
                raise DoesNotFitError(
                    f"{self.plan.strategy} on {self.plan.devices} GPUs needs "
                    f"{fmt_memory(self.plan.memory_per_device_bytes)} per GPU at its peak; {p.hardware} has "
                    f"{fmt_bytes(p.memory_capacity_bytes)}", hint="--strategy fsdp shards the weights, gradients "
                                                                  "and optimizer state; or a smaller --batch")
            return
        if p.fits_memory:
            return
        raise DoesNotFitError(
            f"a training step at batch {p.batch} needs {fmt_memory(p.memory_required_bytes)} at its peak; "
            f"{p.hardware} has {fmt_bytes(p.memory_capacity_bytes)}",
            hint="a smaller --batch, --checkpointing, --lora r=16, bf16 or amp, or a device with more memory")


LLM_TRAIN_SEQ = 2048   # tokens per sequence of an LLM config trained without --seq (said in the output)


class TrainingCosts:
    """Count one training step of a model once (``count_training``) and predict it on any device.

    ``model``: anything ``ModelCosts`` takes; ``setup``: precision, optimizer, checkpointing, LoRA
    (``train.TrainSetup``). Each batch asked for is counted once (a step's memory timeline is not affine in
    the batch once checkpointing or the optimizer's temporaries set the peak)."""

    def __init__(self, model, setup: TrainSetup | None = None, *, strict: bool = False, task: str | None = None,
                 seq: int | None = None, input_shape: tuple[int, ...] | None = None):
        from .counting import load_model

        self.setup = setup or TrainSetup()
        self._source = load_model(model, task=task, seq=seq, input_shape=input_shape)
        self._strict = strict
        self._steps: dict[tuple[int, str], TrainingWorkload] = {}

    def at(self, batch: int, mode: str = "eager") -> TrainingWorkload:
        """The step at ``batch``, counted for ``mode`` (``compiled``: inductor's kernels, ``predict_training``
        with mode compiled; else eager PyTorch's)."""
        from .counting.lowering import lowering_for
        from .counting.training import count_training

        check_batch(batch)
        lowering = lowering_for(mode)
        if (batch, lowering) not in self._steps:
            self._steps[batch, lowering] = count_training(self._source, batch, self.setup, strict=self._strict,
                                                          lowering=lowering)
        return self._steps[batch, lowering]


def training_step(model, batch: int, setup: TrainSetup | None = None, *, strict: bool = False,
                  seq: int | None = None, mode: str = "eager") -> tuple[TrainingWorkload, int]:
    """One optimizer step of ``model`` at ``batch`` per device and the units FSDP wraps in it: a
    ``TrainingCosts`` or anything it takes is counted; an LLM preset or config.json is built analytically at
    ``seq`` tokens per sequence (``LLM_TRAIN_SEQ`` by default: ``llm.training``), its decoder layers one unit
    each (transformers' auto-wrap policy)."""
    from .llm import is_llm_spec, load_config
    from .llm import training_workload as llm_training_workload
    from .train.parallel import FSDP_UNITS_DEFAULT

    if not isinstance(model, TrainingCosts) and isinstance(model, (str, Path)) and is_llm_spec(model):
        if mode == "compiled":
            from .errors import InputError

            raise InputError(f"--mode compiled needs the model itself; {model} is an LLM preset or config, built "
                             "analytically as eager kernels", hint="pass a model file or hf:ID, or --mode eager")
        cfg = load_config(model, strict=strict)
        return llm_training_workload(cfg, batch, seq or LLM_TRAIN_SEQ, setup or TrainSetup()), cfg.num_layers
    import warnings

    from .counting import UnsupportedOpWarning

    with warnings.catch_warnings():  # unsupported operators are in the workload; the caller shows them
        warnings.simplefilter("ignore", UnsupportedOpWarning)
        costs = model if isinstance(model, TrainingCosts) else TrainingCosts(model, setup, strict=strict)
        return costs.at(batch, mode), FSDP_UNITS_DEFAULT


def analyze_training(model, hw: Hardware, *, batch: int = 1, setup: TrainSetup | None = None,
                     mode: str = "eager", calibration: tuple[Calibration | None, str] = (None, ""),
                     strict: bool = False, devices: int = 1, strategy: str = "ddp",
                     seq: int | None = None) -> TrainingAnalysis:
    """Count one optimizer step of ``model`` at ``batch`` per device (``training_step``) and predict it on
    ``hw``; on ``devices`` > 1 GPUs also plan it with ``strategy`` (ddp or fsdp, ``train.parallel``)."""
    from .train.parallel import STRATEGIES, plan_data_parallel

    if strategy not in STRATEGIES:
        from .errors import InputError

        raise InputError(f"unknown --strategy {strategy!r}; expected one of {', '.join(STRATEGIES)}")
    tw, units = training_step(model, batch, setup, strict=strict, seq=seq, mode=mode)
    perf = device_perf(hw, *calibration)
    pred = predict_training(tw, hw, mode=mode, perf=perf)
    plan = None
    if devices > 1:
        plan = plan_data_parallel(pred, hw, strategy, devices, calibration=calibration[0], units=units,
                                  reserve_bytes=pred.memory_required_bytes - pred.memory.peak_bytes)
    return TrainingAnalysis(tw, pred, plan)
