"""Measure a model file's real latency on the local device (imports torch).

Timing on a CUDA GPU: CUDA events around each forward (eager) or CUDA-graph replay (graph: the eager forward
captured; compiled: ``torch.compile(model, dynamic=False)``, inductor's default mode, captured the same way
after it compiled), after warm-up; the
median of ``repeats`` timed iterations and the spread (min, max). Inputs are random, never zeros. On the CPU
(a plumbing test, not an accuracy measurement) the same loop is timed with ``time.perf_counter`` and only
eager mode exists. ``profile_ops`` runs one eager forward under torch.profiler and returns the device time
per ATen operator.

Used by ``tops-advisor validate`` and by ``benchmarks/harness/measure_models.py``; the record format
(``Measurement.model_dump``) is the one in ``benchmarks/results/h200_models.json``.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from pydantic import BaseModel, ConfigDict, Field, model_serializer

from ..errors import ModelFileError, ProbeError, one_line
from ..probe.kit import CpuBackend, CudaBackend, Timing, capture_graph, device_name, environment, is_oom

__all__ = ["DEFAULT_MODES", "DTYPES", "MEASURED_MODES", "Measurement", "MeasurementSet", "capture_graph", "cast_inputs",
           "check_device", "device_name", "environment", "is_oom", "measure_batches", "measure_one",
           "forward_fn", "profile_ops", "time_fn"]

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16,
          "amp": torch.float32}   # amp: an fp32 model under torch.autocast("cuda", torch.float16)
AUTOCAST_DTYPE = torch.float16
MEASURED_MODES = ("eager", "graph", "compiled")
DEFAULT_MODES = ("eager", "graph")   # compiled on request: compiling takes seconds to minutes per batch


class Measurement(BaseModel):
    """One model at one batch and dtype on one device. Seconds; ``None`` for a mode not measured.

    ``model_dump()`` gives the record format of ``benchmarks/results/*.json`` (written since the first
    measurements, read back by ``from_record``): keys absent where not measured, ``device`` only when it is
    not 'cuda', the spreads under ``eager_spread``/``graph_spread``. That format is older than this model,
    so the serializer below writes it by hand instead of renaming the fields.
    """

    model_config = ConfigDict(frozen=True)

    model: str
    batch: int
    dtype: str
    device: str = "cuda"
    eager_s: float | None = None
    eager_spread_s: tuple[float, float] | None = None
    graph_s: float | None = None
    graph_spread_s: tuple[float, float] | None = None
    compiled_s: float | None = None               # torch.compile (default mode) replayed as a CUDA graph
    compiled_spread_s: tuple[float, float] | None = None
    kernels_by_op: dict[str, dict] | None = None   # ATen op -> calls, device_us, self_device_us, outer_device_us
    error: str | None = None                       # "out of memory" or why this batch failed

    def latency_s(self, mode: str) -> float | None:
        return getattr(self, f"{mode}_s")

    def spread_s(self, mode: str) -> tuple[float, float] | None:
        return getattr(self, f"{mode}_spread_s")

    @model_serializer(mode="plain")
    def _record(self) -> dict:
        d: dict = {"model": self.model, "batch": self.batch, "dtype": self.dtype}
        if self.device != "cuda":
            d["device"] = self.device
        if self.error:
            d["error"] = self.error
            return d
        for mode in MEASURED_MODES:
            if self.latency_s(mode) is not None:
                d[f"{mode}_s"] = self.latency_s(mode)
                d[f"{mode}_spread"] = list(self.spread_s(mode))
        if self.kernels_by_op is not None:
            d["kernels_by_op"] = self.kernels_by_op
        return d

    @classmethod
    def from_record(cls, rec: dict) -> Measurement:
        spread = {m: tuple(rec[f"{m}_spread"]) if f"{m}_spread" in rec else None for m in MEASURED_MODES}
        return cls(model=rec["model"], batch=rec["batch"], dtype=rec["dtype"], device=rec.get("device", "cuda"),
                   eager_s=rec.get("eager_s"), eager_spread_s=spread["eager"], graph_s=rec.get("graph_s"),
                   graph_spread_s=spread["graph"], compiled_s=rec.get("compiled_s"),
                   compiled_spread_s=spread["compiled"], kernels_by_op=rec.get("kernels_by_op"),
                   error=rec.get("error"))


def check_device(device: str) -> None:
    """ProbeError (one line) when ``device`` cannot be measured here."""
    if device == "cuda" and not torch.cuda.is_available():
        raise ProbeError("no CUDA GPU found: the model is measured on a local GPU",
                         hint="run it on a machine with an NVIDIA GPU, or pass --device cpu to test the "
                              "plumbing (not accuracy)")
    if device not in ("cuda", "cpu"):
        raise ProbeError(f"unknown device {device!r}; expected cuda or cpu")


def _cast(t, dtype: str, device: str):
    if not isinstance(t, torch.Tensor):
        return t
    return t.to(device, dtype=DTYPES[dtype]) if t.is_floating_point() else t.to(device)


def cast_inputs(inputs, dtype: str, device: str) -> tuple | dict:
    """The inputs on ``device``, floating point ones at ``dtype``: a tuple, or a dict of keyword inputs."""
    if isinstance(inputs, dict):
        return {k: _cast(v, dtype, device) for k, v in inputs.items()}
    if isinstance(inputs, torch.Tensor):
        inputs = (inputs,)
    return tuple(_cast(t, dtype, device) for t in inputs)


def channels_last_inputs(inputs):
    """The inputs' image tensors (4-D, floating point) in channels-last memory format; the rest as given."""
    from torch.utils._pytree import tree_map_only

    return tree_map_only(torch.Tensor, lambda t: t.to(memory_format=torch.channels_last)
                         if t.dim() == 4 and t.is_floating_point() else t, inputs)


def forward_fn(model, inputs: tuple | dict, autocast: bool = False) -> Callable[[], object]:
    """One forward pass on positional or keyword inputs (``autocast``: under torch.autocast on CUDA, fp16)."""
    call = (lambda: model(**inputs)) if isinstance(inputs, dict) else (lambda: model(*inputs))
    if not autocast:
        return call

    def under_autocast():
        with torch.autocast("cuda", dtype=AUTOCAST_DTYPE):
            return call()
    return under_autocast


def compiled_fn(model, inputs: tuple | dict, autocast: bool = False) -> Callable[[], object]:
    """The forward of ``torch.compile(model, dynamic=False)`` (inductor, default mode: no max-autotune, no
    CUDA graphs of its own); called once here, which compiles it."""
    import torch._dynamo

    torch._dynamo.reset()  # no guards or code from an earlier batch: each batch compiles static shapes
    forward = forward_fn(torch.compile(model, dynamic=False), inputs, autocast)
    forward()
    return forward


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


# Warm-up time before timing a model: the H200 of the device machine idles at 345 MHz (nvidia-smi before a
# run) and its host's eager launch time fell from 9.6 to 6.5 us within one run of the machine (benchmarks/harness/launch_time.py,
# benchmarks/rounds/round-10/measured/): ten warm-up calls of a 1 ms forward left batch 1 slower than batch 8 on 6 of
# 9 models in blind round 15, graph and eager. Half a second of calls brings both clocks up.
WARMUP_S = 0.5


def time_fn(fn: Callable[[], object], repeats: int, warmup: int, device: str = "cuda") -> Timing:
    """Seconds per call of ``fn``: ``repeats`` timed calls after ``warmup`` untimed ones, each from an idle
    device (the kit's timer with ``sync_each``: no L2 flush, a synchronisation after every call)."""
    backend = CudaBackend() if device == "cuda" else CpuBackend()
    return backend.time(fn, warmup=warmup, repeats=repeats, flush=False, sync_each=True,
                        warmup_s=WARMUP_S if warmup else 0.0)


def measure_one(model_file, batch: int, dtype: str, *, repeats: int = 30, warmup: int = 10,
                profile: bool = False, device: str = "cuda", modes: tuple[str, ...] = DEFAULT_MODES,
                model_name: str | None = None, channels_last: bool = False) -> Measurement:
    """Build the model of a loaded model file (``counting.load_model_file``) and time it at one batch
    (``channels_last``: model and image inputs in channels-last memory format).

    Raises whatever the model raises (the caller tells out-of-memory, ``is_oom``, from other failures).
    Graph mode needs CUDA: on the CPU only eager is measured.
    """
    torch.manual_seed(0)
    model = model_file.build(meta=False).to(device, dtype=DTYPES[dtype]).eval()
    inputs = cast_inputs(model_file.inputs(batch, meta=False), dtype, device)
    if channels_last:
        model, inputs = model.to(memory_format=torch.channels_last), channels_last_inputs(inputs)
    forward = forward_fn(model, inputs, autocast=dtype == "amp")
    found: dict = {}
    try:
        if "eager" in modes or "graph" in modes or profile:
            with torch.inference_mode():
                found.update(_timed(forward, modes, repeats, warmup, device))
                if profile:
                    found["kernels_by_op"] = profile_ops(forward, device)
        if "compiled" in modes and device == "cuda":
            with torch.no_grad():  # inductor compiles under no_grad (inference_mode tensors are fine too)
                graph = capture_graph(compiled_fn(model, inputs, autocast=dtype == "amp"))
                t = time_fn(graph.replay, repeats, warmup, device)
                found.update(compiled_s=t.median_s, compiled_spread_s=(t.min_s, t.max_s))
                del graph
    finally:
        if device == "cuda":
            torch.cuda.empty_cache()
    return Measurement(model=model_name or model_file.label, batch=batch, dtype=dtype, device=device, **found)


def _timed(forward: Callable[[], object], modes: tuple[str, ...], repeats: int, warmup: int,
           device: str) -> dict:
    """Eager and CUDA-graph timings of one forward, as ``Measurement`` fields."""
    found: dict = {}
    if "eager" in modes:
        t = time_fn(forward, repeats, warmup, device)
        found.update(eager_s=t.median_s, eager_spread_s=(t.min_s, t.max_s))
    if "graph" in modes and device == "cuda":
        graph = capture_graph(forward)
        t = time_fn(graph.replay, repeats, warmup, device)
        found.update(graph_s=t.median_s, graph_spread_s=(t.min_s, t.max_s))
        del graph
    return found


def _device_us(evt, self_only: bool = False) -> float:
    if self_only:
        v = getattr(evt, "self_device_time_total", None)
        return v if v is not None else getattr(evt, "self_cuda_time_total", 0.0)
    v = getattr(evt, "device_time_total", None)
    return v if v is not None else getattr(evt, "cuda_time_total", 0.0)


def _is_outermost(evt) -> bool:
    parent = evt.cpu_parent
    while parent is not None:
        if parent.name.startswith("aten::"):
            return False
        parent = parent.cpu_parent
    return True


def profile_ops(forward: Callable[[], object], device: str = "cuda") -> dict[str, dict]:
    """Time per ATen operator from one eager forward under torch.profiler, in microseconds.

    ``device_us`` includes the operators it calls, ``self_device_us`` only its own kernels, and
    ``outer_device_us`` counts only the calls not made from inside another ATen operator (so summing it over
    operators counts every kernel once, under the operator the model called). On the CPU the times are host
    times (there are no kernels).
    """
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    with torch.inference_mode(), profile(activities=activities) as prof:
        forward()
        _sync(device)
    cpu = device != "cuda"
    result: dict[str, dict] = {}
    for evt in prof.key_averages():
        total = evt.cpu_time_total if cpu else _device_us(evt)
        own = evt.self_cpu_time_total if cpu else _device_us(evt, self_only=True)
        if evt.key.startswith("aten::") and total > 0:
            result[evt.key] = {"calls": evt.count, "device_us": total, "self_device_us": own,
                               "outer_device_us": 0.0}
    for evt in prof.events():
        if evt.name in result and _is_outermost(evt):
            result[evt.name]["outer_device_us"] += evt.cpu_time_total if cpu else _device_us(evt)
    return result


def measure_batches(model_file, batches: list[int], dtype: str, *, repeats: int = 30, warmup: int = 10,
                    profile: bool = False, device: str = "cuda", modes: tuple[str, ...] = DEFAULT_MODES,
                    model_name: str | None = None, keep_going: bool = False,
                    progress: Callable[[Measurement], None] | None = None, channels_last: bool = False
                    ) -> list[Measurement]:
    """Measure every batch. Out of memory at one batch is recorded and the others go on; any other failure
    raises ModelFileError (one line), or with ``keep_going`` is recorded too."""

    name = model_name or model_file.label
    out = []
    for batch in batches:
        def failed(error: str, batch=batch) -> Measurement:
            return Measurement(model=name, batch=batch, dtype=dtype, device=device, error=error)

        try:
            m = measure_one(model_file, batch, dtype, repeats=repeats, warmup=warmup, profile=profile,
                            device=device, modes=modes, model_name=name, channels_last=channels_last)
        except ModelFileError as exc:  # build_model() or example_inputs() raised
            if not keep_going:
                raise
            m = failed(str(exc))
        except Exception as exc:  # the model's own failure on this device: one line, or record and go on
            if is_oom(exc):
                m = failed("out of memory")
            elif keep_going:
                m = failed(one_line(exc))
            else:
                raise ModelFileError(f"{name} failed on {device} at batch {batch}: {one_line(exc)}") from None
        if device == "cuda" and m.error:
            torch.cuda.empty_cache()  # after the exception (and the frames holding the model) is gone
        out.append(m)
        if progress:
            progress(m)
    return out


class MeasurementSet(BaseModel):
    """Measurements and the environment they were taken in (the JSON of ``benchmarks/results/``). Frozen
    fields; ``runs`` is the list a measuring script appends to as it goes."""

    model_config = ConfigDict(frozen=True)

    environment: dict
    runs: list[Measurement] = Field(default_factory=list)
