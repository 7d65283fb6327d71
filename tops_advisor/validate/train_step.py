"""Measure one training step of a model on the local device (imports torch): the step ``count_training``
counts, run for real.

The model comes from the same source (``counting.load_model``) and is set up as the counter sets it up:
LoRA adapters (``counting.training.lora.add_lora``), the library's gradient checkpointing
(``counting.training.checkpointing``), the storage dtype and autocast dtype of the precision
(``counting.training.step.COUNT_AS``), the optimizer of ``counting.training.optimizers.build_optimizer``
(bitsandbytes' ``AdamW8bit`` for ``adamw-8bit``), the loss of ``counting.training.loss.make_loss`` on the
real output, and for ``amp`` a ``torch.amp.GradScaler``. TF32 is PyTorch's default for every precision but
``tf32`` (off for matmuls, on for cuDNN convolutions), on for both with ``tf32``, for the measurement only.

One step: ``zero_grad(set_to_none=True)``; forward and loss; backward; optimizer step (``scaler.step``,
``scaler.update`` with amp). The first step is timed by the host clock, synchronised (optimizer-state
creation, cuDNN/cuBLAS set-up, compilation); then the kit's timer (``probe.kit``: warm-up steps and seconds,
then steps back to back with no synchronisation between them, a training loop's steady state, events around
each step; the median of the repeats) and, inside each step, marks between its three parts (CUDA events;
the host clock on the CPU). Memory on CUDA: the peak allocated over the first step (reset before the model
is built) and over the steps after it (reset after the first step: the optimizer state exists, as in the
counted steady-state step), what stays allocated, and the exact bytes of weights, gradients and optimizer
state. On the CPU the same code runs with the host clock and no memory figures: a plumbing test.

Used by ``tops-advisor validate --train`` and ``benchmarks/harness/train_measure.py``.
"""

from __future__ import annotations

import contextlib
import gc
import statistics
import time
from collections.abc import Callable, Iterator

import torch

from ..counting.library_models import LibraryModel
from ..counting.model_file import ModelFile
from ..counting.training.checkpointing import enable_checkpointing
from ..counting.training.lora import add_lora
from ..counting.training.loss import Loss, make_loss
from ..counting.training.optimizers import LR, build_optimizer, state_tensors
from ..counting.training.step import COUNT_AS
from ..errors import InputError, ModelFileError, TopsAdvisorError, one_line
from ..probe.kit import CpuBackend, CudaBackend, is_oom
from ..train import TrainSetup
from .measure import WARMUP_S, cast_inputs, channels_last_inputs
from .train_compare import PARTS, StepMeasurement

LossRule = Callable[[object, tuple], Loss]


def counted_loss(source) -> LossRule:
    """The loss ``count_training`` backpropagates for ``source``: a model file's ``loss(output, *inputs)``, a
    library model's task loss, else a scalar forward or the sum of the output (``make_loss``)."""
    user_loss = getattr(source.module, "loss", None) if isinstance(source, ModelFile) else None
    library = isinstance(source, LibraryModel)
    return lambda output, args: make_loss(output, args, user_loss, source.label, library)


def storage_dtype(setup: TrainSetup) -> str:
    """The weights' dtype as a ``measure.DTYPES`` name: bf16 for ``bf16``, else fp32 (autocast casts)."""
    return "bf16" if COUNT_AS[setup.precision][0] == "bf16" else "fp32"


@contextlib.contextmanager
def training_flags(precision: str) -> Iterator[None]:
    """TF32 as the precision trains (see the module docstring), restored afterwards."""
    matmul, cudnn = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    torch.backends.cudnn.allow_tf32 = True
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = matmul, cudnn


def device_optimizer(name: str, params: list[torch.Tensor]):
    """The optimizer the counter counts, on real tensors: torch.optim's as ``build_optimizer`` makes them,
    bitsandbytes' ``AdamW8bit`` for ``adamw-8bit`` (the counter records its kernel)."""
    if name != "adamw-8bit" or not params:
        return build_optimizer(name, params, record=None)   # with no params: its one-line error
    try:
        import bitsandbytes as bnb
    except ImportError:
        raise InputError("--optimizer adamw-8bit measures bitsandbytes' AdamW8bit, and bitsandbytes is not "
                         "installed", hint="pip install bitsandbytes, or measure another --optimizer") from None
    return bnb.optim.AdamW8bit(params, lr=LR)


class Marks:
    """Points in a step's time: CUDA events on a GPU, the host clock on the CPU."""

    def __init__(self, device: str):
        self.cuda = device == "cuda"

    def mark(self):
        if not self.cuda:
            return time.perf_counter()
        event = torch.cuda.Event(enable_timing=True)
        event.record()
        return event

    def elapsed_s(self, a, b) -> float:
        return a.elapsed_time(b) / 1e3 if self.cuda else b - a


class TrainStep:
    """One training step of ``model`` on fixed inputs; each call appends the marks between its parts.
    ``part(name)`` is a context around each part (nothing by default; a profiler's ranges in the harness)."""

    def __init__(self, model, inputs, setup: TrainSetup, device: str, loss: LossRule):
        self.model, self.setup, self.device, self.loss_rule = model, setup, device, loss
        self.args, self.kwargs = ((), inputs) if isinstance(inputs, dict) else (tuple(inputs), {})
        self.optimizer = device_optimizer(setup.optimizer, [p for p in model.parameters() if p.requires_grad])
        self.scaler = torch.amp.GradScaler(device) if setup.grad_scaler else None
        self.autocast = COUNT_AS[setup.precision][1]
        self.timer = Marks(device)
        self.marks: list[tuple] = []
        self.loss_what = ""
        self.part: Callable[[str], contextlib.AbstractContextManager] = lambda _name: contextlib.nullcontext()

    def _forward(self) -> torch.Tensor:
        autocast = (torch.autocast(self.device, dtype=self.autocast) if self.autocast is not None
                    else contextlib.nullcontext())
        with autocast:
            out = self.model(*self.args, **self.kwargs)
            loss = self.loss_rule(out, self.args)
        self.loss_what = loss.what
        return loss.value

    def __call__(self) -> None:
        self.optimizer.zero_grad(set_to_none=True)
        m0 = self.timer.mark()
        with self.part("forward"):
            loss = self._forward()
        m1 = self.timer.mark()
        with self.part("backward"):
            (self.scaler.scale(loss) if self.scaler else loss).backward()
        m2 = self.timer.mark()
        with self.part("optimizer"):
            if self.scaler:
                self.scaler.step(self.optimizer)
                self.scaler.update()
            else:
                self.optimizer.step()
        self.marks.append((m0, m1, m2, self.timer.mark()))

    def part_medians_s(self, last: int) -> dict[str, float]:
        """The median seconds of each part over the last ``last`` steps: ``forward_s``, ``backward_s``, ..."""
        spans = [[self.timer.elapsed_s(m[i], m[i + 1]) for m in self.marks[-last:]] for i in range(len(PARTS))]
        return {f"{part}_s": statistics.median(s) for part, s in zip(PARTS, spans, strict=True)}


def _configure(model: torch.nn.Module, setup: TrainSetup, label: str) -> None:
    """LoRA adapters and the library's checkpointing, as ``count_training`` puts them on its model."""
    if setup.lora is not None:
        add_lora(model, setup.lora, label)
    if setup.checkpointing:
        enable_checkpointing(model, label)


def prepare_step(source, batch: int, setup: TrainSetup, device: str, *, compile: bool = False,
                 loss: LossRule | None = None) -> TrainStep:
    """The model built on ``device`` (random init), set up as the counter sets it up, in training mode at the
    storage dtype (``compile``: wrapped in ``torch.compile``, inductor's default mode; the optimizer stays
    eager), its inputs, and the step. ``loss``: the counted rule unless given."""
    try:
        with torch.device(device):             # initialise on the device: fast for 1B parameters
            model = source.build(meta=False)
    except Exception:                          # a builder that needs the CPU (or fails: then again, below)
        model = source.build(meta=False)
    _configure(model, setup, source.label)
    dtype = storage_dtype(setup)
    model = model.to(device, dtype=torch.bfloat16 if dtype == "bf16" else torch.float32).train()
    if setup.channels_last:
        model = model.to(memory_format=torch.channels_last)
    if compile:
        model = torch.compile(model)
    with torch.device(device):
        inputs = cast_inputs(source.inputs(batch, meta=False), dtype, device)
    if setup.channels_last:
        inputs = channels_last_inputs(inputs)
    return TrainStep(model, inputs, setup, device, loss or counted_loss(source))


def _memory(device: str, what: str) -> int | None:
    if device != "cuda":
        return None
    return {"allocated": torch.cuda.memory_allocated, "peak": torch.cuda.max_memory_allocated,
            "peak_reserved": torch.cuda.max_memory_reserved}[what]()


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def clean(device: str) -> None:
    """Free what an earlier measurement left and reset the peak counters."""
    gc.collect()
    if device == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


def _tensor_bytes(tensors) -> int:
    return sum(t.numel() * t.element_size() for t in tensors if isinstance(t, torch.Tensor))


def _held_bytes(step: TrainStep) -> dict:
    params = list(step.model.parameters())
    return {"parameters": sum(p.numel() for p in params),
            "trainable_parameters": sum(p.numel() for p in params if p.requires_grad),
            "param_bytes": _tensor_bytes(params), "grad_bytes": _tensor_bytes(p.grad for p in params),
            "optimizer_state_bytes": _tensor_bytes(state_tensors(step.optimizer))}


def time_step(step: TrainStep, *, repeats: int, warmup: int, warmup_s: float = WARMUP_S,
              budget_s: float | None = None) -> dict:
    """The first step (host clock), then the kit's timer over back-to-back steps; the ``StepMeasurement``
    fields measured (``budget_s``: fewer repeats past about this many timed seconds, at least 3)."""
    t = time.perf_counter()
    step()
    _sync(step.device)
    found = {"first_step_s": time.perf_counter() - t, "loss": step.loss_what}
    first_peak, first_reserved = _memory(step.device, "peak"), _memory(step.device, "peak_reserved")
    if step.device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    backend = CudaBackend() if step.device == "cuda" else CpuBackend()
    scale0 = step.scaler.get_scale() if step.scaler else None
    timing = backend.time(step, warmup=warmup, repeats=repeats, flush=False, sync_each=False,
                          warmup_s=warmup_s, budget_s=budget_s)
    _sync(step.device)
    found.update(step_s=timing.median_s, step_spread_s=(timing.min_s, timing.max_s), repeats=timing.repeats,
                 **step.part_medians_s(timing.repeats), **_held_bytes(step))
    if step.scaler:
        found["loss_scale"] = (scale0, step.scaler.get_scale())
    if step.device == "cuda":
        steady = _memory("cuda", "peak")
        found.update(after_steps_bytes=_memory("cuda", "allocated"), steady_peak_bytes=steady,
                     peak_bytes=max(first_peak, steady),
                     peak_reserved_bytes=max(first_reserved, _memory("cuda", "peak_reserved")))
    return found


def built_step(source, batch: int, setup: TrainSetup, device: str, *, compile: bool = False,
               loss: LossRule | None = None) -> tuple[TrainStep, dict]:
    """``prepare_step`` timed: the step, and its ``build_s`` and ``base_bytes`` (allocated once the model, its
    inputs and nothing else are on the device)."""
    t = time.perf_counter()
    step = prepare_step(source, batch, setup, device, compile=compile, loss=loss)
    _sync(device)
    return step, {"build_s": time.perf_counter() - t, "base_bytes": _memory(device, "allocated")}


def measure_training_step(source, batch: int, setup: TrainSetup, *, device: str = "cuda", repeats: int = 30,
                          warmup: int = 10, warmup_s: float = WARMUP_S, budget_s: float | None = None,
                          compile: bool = False) -> StepMeasurement:
    """Build ``source`` (a ``counting.load_model`` result) fresh on ``device`` and measure one training step
    at ``batch`` (``compile``: the model under ``torch.compile``, inductor's default mode). Out of memory is recorded in the measurement; the setup's own errors (LoRA without linear
    layers, no checkpointing to enable) raise InputError; any other failure of the model raises
    ModelFileError, in one line."""
    head = {"model": source.label, "batch": batch, "setup": setup.describe(), "device": device}
    clean(device)
    torch.manual_seed(0)
    step = None
    try:
        with training_flags(setup.precision):
            step, fields = built_step(source, batch, setup, device, compile=compile)
            fields.update(time_step(step, repeats=repeats, warmup=warmup, warmup_s=warmup_s, budget_s=budget_s))
    except TopsAdvisorError:
        raise
    except Exception as exc:
        if not is_oom(exc):
            raise ModelFileError(f"{source.label}: the training step failed on {device} at batch {batch}: "
                                 f"{one_line(exc)}") from exc
        fields = {"error": "out of memory"}
    finally:
        step = None
        clean(device)
    return StepMeasurement(**head, **fields)
