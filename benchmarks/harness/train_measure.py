"""Measure training steps (forward + loss, backward, optimizer step) of models on the local device.

For each point of a plan (model, batch, precision, optimizer, mode) it builds the model fresh on the device,
runs one first step (timed by the host clock: optimizer-state creation, cuDNN/cuBLAS setup, compilation),
then times steps back to back with the kit's timer (``tops_advisor.probe.kit``: warm-up calls and seconds,
CUDA events around each step, the median of the repeats, no synchronisation between steps: a training loop's
steady state) and, inside each step, CUDA events between its three parts. Memory: the peak allocated over
every step (``torch.cuda.max_memory_allocated`` after a reset before the model is built), what stays
allocated after the steps (weights, gradients, optimizer state, inputs), and the exact bytes of weights,
gradients and optimizer state. A line of the plan marked ``profile`` also runs two steps under
``torch.profiler`` at its first point, with a synchronisation after each part, and keeps the device time of
every kernel summed by (part, outermost op, op that launched it, kernel name): not the trace.

Precisions: ``fp32`` (PyTorch's defaults: TF32 off for matmul, on for cuDNN convolutions; recorded),
``amp`` (fp32 weights, ``torch.autocast`` fp16, ``GradScaler``), ``amp-bf16`` (autocast bf16, no scaler),
``bf16`` (weights, gradients and optimizer state in bf16). Optimizers: ``adamw`` (foreach, the default),
``adamw-fused``, ``sgd`` (momentum 0.9, foreach). Modes: ``eager``, ``ckpt`` (eager with timm's
``set_grad_checkpointing``), ``compile`` (``torch.compile(model)``, inductor's default mode; the optimizer
stays eager; ``first_step_s`` holds the compilation). Loss: cross-entropy on random labels over the output's
classes (batch, classes), tokens (batch, seq, vocab >= 1000) or pixels (batch, classes, h, w); the mean of
the output otherwise. Inputs are the model's own random example inputs.

A plan line: ``MODEL BATCHES PRECISIONS OPTIMIZERS MODES [profile]``, comma-separated lists, e.g.
``examples/resnet50.py 32,128 amp,fp32 adamw eager profile``; ``#`` starts a comment. Results are rewritten
after every point (a timeout keeps what was measured): ``train_points.json`` and ``train_profiles.json``
under ``--out``, each with the environment and the command. Out of memory or a failure at one point is
recorded and the run goes on. On the CPU (``--device cpu``) the same code runs: a plumbing test.

    python benchmarks/harness/train_measure.py --plan benchmarks/studies/training-step/plan.txt --out OUT
    python benchmarks/harness/train_measure.py --device cpu --line "examples/small_cnn.py 2 fp32 adamw eager profile" --out /tmp/t
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import statistics
import sys
import time
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from tops_advisor.counting import load_model
from tops_advisor.errors import one_line
from tops_advisor.probe.kit import CpuBackend, CudaBackend, environment, is_oom
from tops_advisor.validate.measure import cast_inputs

PARTS = ("forward", "backward", "optimizer")
RANGE = "train:"                     # record_function names of the parts while profiling: train:forward, ...
PROFILE_STEPS = 2
COMPILE_RESERVE_S = 150.0            # a compile point starts only with this much of the time budget left
KERNEL_NAME_CHARS = 200


@dataclass(frozen=True)
class Precision:
    """How a precision trains: the weights' dtype, the autocast dtype (None: no autocast), a GradScaler."""

    name: str
    weights: str                     # a validate.measure DTYPES name: 'fp32' or 'bf16'
    autocast: torch.dtype | None
    scaler: bool


PRECISIONS = {p.name: p for p in (Precision("fp32", "fp32", None, False),
                                  Precision("amp", "fp32", torch.float16, True),
                                  Precision("amp-bf16", "fp32", torch.bfloat16, False),
                                  Precision("bf16", "bf16", None, False))}
OPTIMIZERS = ("adamw", "adamw-fused", "sgd")
MODES = ("eager", "ckpt", "compile")


@dataclass(frozen=True)
class PlanLine:
    model: str
    batches: tuple[int, ...]
    precisions: tuple[str, ...]
    optimizers: tuple[str, ...]
    modes: tuple[str, ...]
    profile: bool = False


@dataclass
class TrainPoint:
    """One training step configuration, measured. Seconds and bytes; None where not measured."""

    model: str
    batch: int
    precision: str
    optimizer: str
    mode: str
    device: str
    loss: str = ""                   # what the loss was: cross-entropy over classes/tokens/pixels, or mean
    parameters: int = 0
    build_s: float | None = None
    first_step_s: float | None = None   # host clock, synchronised: the first step with all its set-up
    step_s: float | None = None         # median of the timed steps (kit timer: events around each step)
    step_spread_s: tuple[float, float] | None = None
    forward_s: float | None = None      # medians of the parts (events inside each step)
    backward_s: float | None = None
    optimizer_s: float | None = None
    repeats: int = 0
    param_bytes: int = 0
    grad_bytes: int = 0
    optimizer_state_bytes: int = 0
    base_bytes: int | None = None        # allocated once the model and inputs are on the device
    after_steps_bytes: int | None = None  # allocated after the timed steps: weights, grads, state, inputs
    peak_bytes: int | None = None        # max allocated over every step
    peak_reserved_bytes: int | None = None
    loss_scale: tuple[float, float] | None = None   # GradScaler scale before and after the timed steps
    error: str | None = None


def parse_line(text: str) -> PlanLine | None:
    """One plan line (None for a blank or comment line); ValueError names what is wrong."""
    words = text.split("#", 1)[0].split()
    if not words:
        return None
    if len(words) not in (5, 6) or (len(words) == 6 and words[5] != "profile"):
        raise ValueError(f"plan line {text.strip()!r}: expected MODEL BATCHES PRECISIONS OPTIMIZERS MODES [profile]")
    lists = [tuple(w.split(",")) for w in words[1:5]]
    for values, known, what in ((lists[1], PRECISIONS, "precision"), (lists[2], OPTIMIZERS, "optimizer"),
                                (lists[3], MODES, "mode")):
        bad = [v for v in values if v not in known]
        if bad:
            raise ValueError(f"plan line {text.strip()!r}: unknown {what} {bad[0]!r}; expected one of {list(known)}")
    return PlanLine(words[0], tuple(int(b) for b in lists[0]), lists[1], lists[2], lists[3], len(words) == 6)


def read_plan(lines: list[str]) -> list[PlanLine]:
    return [p for p in (parse_line(t) for t in lines) if p is not None]


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


class Loss:
    """Cross-entropy on random labels made at the first call for the output's shape (or the mean)."""

    def __init__(self):
        self.labels = None
        self.kind = ""

    def __call__(self, out) -> torch.Tensor:
        out = first_tensor(out).float()
        if self.labels is None:
            self.kind, self.labels = make_labels(out)
        if self.labels is None:
            return out.mean()
        if out.dim() == 3:
            return torch.nn.functional.cross_entropy(out.flatten(0, 1), self.labels.flatten())
        return torch.nn.functional.cross_entropy(out, self.labels)


def first_tensor(out) -> torch.Tensor:
    """The logits of a model output: the tensor itself, ``.logits``, the first value of a dict or tuple."""
    if isinstance(out, torch.Tensor):
        return out
    if getattr(out, "logits", None) is not None:
        return out.logits
    if isinstance(out, dict):
        return first_tensor(next(iter(out.values())))
    return first_tensor(out[0])


def make_labels(out: torch.Tensor) -> tuple[str, torch.Tensor | None]:
    """(what the loss is, random labels or None for the mean) for an output's shape."""
    shape = tuple(out.shape)
    if out.dim() == 2:
        return f"cross-entropy over {shape[1]} classes", torch.randint(0, shape[1], shape[:1], device=out.device)
    if out.dim() == 3 and shape[2] >= 1000:
        return f"cross-entropy over {shape[2]} tokens", torch.randint(0, shape[2], shape[:2], device=out.device)
    if out.dim() == 4:
        labels = torch.randint(0, shape[1], (shape[0], *shape[2:]), device=out.device)
        return f"cross-entropy over {shape[1]} classes per pixel", labels
    return f"mean of the output {list(shape)}", None


def make_optimizer(name: str, params) -> torch.optim.Optimizer:
    if name == "sgd":
        return torch.optim.SGD(params, lr=1e-2, momentum=0.9)
    return torch.optim.AdamW(params, lr=1e-4, fused=True if name == "adamw-fused" else None)


class TrainStep:
    """One training step of a model on fixed inputs; each call appends its part marks to ``marks``."""

    def __init__(self, model, inputs, precision: Precision, optimizer: str, device: str):
        self.model, self.inputs, self.precision, self.device = model, inputs, precision, device
        self.optimizer = make_optimizer(optimizer, model.parameters())
        self.scaler = torch.amp.GradScaler(device) if precision.scaler else None
        self.loss = Loss()
        self.timer = Marks(device)
        self.marks: list[tuple] = []
        self.profiling = False

    def _part(self, name: str):
        """While profiling: a record_function range, ended by a synchronisation (kernels stay inside it)."""
        if not self.profiling:
            return contextlib.nullcontext()
        stack = contextlib.ExitStack()   # exits last-in first-out: the synchronisation, then the range
        stack.enter_context(torch.profiler.record_function(RANGE + name))
        stack.callback(lambda: torch.cuda.synchronize() if self.device == "cuda" else None)
        return stack

    def _forward(self) -> torch.Tensor:
        autocast = (torch.autocast(self.device, dtype=self.precision.autocast) if self.precision.autocast
                    else contextlib.nullcontext())
        with autocast:
            out = self.model(**self.inputs) if isinstance(self.inputs, dict) else self.model(*self.inputs)
            return self.loss(out)

    def __call__(self) -> None:
        self.optimizer.zero_grad(set_to_none=True)
        m0 = self.timer.mark()
        with self._part("forward"):
            loss = self._forward()
        m1 = self.timer.mark()
        with self._part("backward"):
            (self.scaler.scale(loss) if self.scaler else loss).backward()
        m2 = self.timer.mark()
        with self._part("optimizer"):
            if self.scaler:
                self.scaler.step(self.optimizer)
                self.scaler.update()
            else:
                self.optimizer.step()
        self.marks.append((m0, m1, m2, self.timer.mark()))

    def part_medians_s(self, last: int) -> dict[str, float]:
        """The median seconds of each part over the last ``last`` steps."""
        spans = [[self.timer.elapsed_s(m[i], m[i + 1]) for m in self.marks[-last:]] for i in range(3)]
        return {f"{part}_s": statistics.median(s) for part, s in zip(PARTS, spans, strict=True)}


def tensor_bytes(tensors) -> int:
    return sum(t.numel() * t.element_size() for t in tensors if isinstance(t, torch.Tensor))


def build(line_model: str, batch: int, precision: Precision, mode: str, device: str):
    """The model (in train mode, at the precision's weight dtype, on the device) and its inputs."""
    src = load_model(line_model)
    dtype = torch.bfloat16 if precision.weights == "bf16" else torch.float32
    try:
        with torch.device(device):             # initialise on the device: fast for 1B parameters
            model = src.build(meta=False)
    except Exception:                          # a builder that needs the CPU
        model = src.build(meta=False)
    model = model.to(device, dtype=dtype).train()
    if mode == "ckpt":
        if not hasattr(model, "set_grad_checkpointing"):
            raise ValueError(f"{line_model} has no set_grad_checkpointing (timm models do)")
        model.set_grad_checkpointing(True)
    if mode == "compile":
        model = torch.compile(model)
    with torch.device(device):
        inputs = cast_inputs(src.inputs(batch, meta=False), precision.weights, device)
    return model, inputs


def memory(device: str, what: str) -> int | None:
    if device != "cuda":
        return None
    return {"allocated": torch.cuda.memory_allocated, "peak": torch.cuda.max_memory_allocated,
            "peak_reserved": torch.cuda.max_memory_reserved}[what]()


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def time_steps(step: TrainStep, point: TrainPoint, args) -> None:
    """The first step (host clock), then the kit's timer over back-to-back steps; fills ``point``."""
    t = time.perf_counter()
    step()
    sync(step.device)
    point.first_step_s = time.perf_counter() - t
    point.loss = step.loss.kind
    backend = CudaBackend() if step.device == "cuda" else CpuBackend()
    scale0 = step.scaler.get_scale() if step.scaler else None
    timing = backend.time(step, warmup=args.warmup, repeats=args.repeats, flush=False, sync_each=False,
                          warmup_s=args.warmup_s, budget_s=args.budget_s)
    sync(step.device)
    point.step_s, point.step_spread_s, point.repeats = timing.median_s, (timing.min_s, timing.max_s), timing.repeats
    for name, value in step.part_medians_s(timing.repeats).items():
        setattr(point, name, value)
    if step.scaler:
        point.loss_scale = (scale0, step.scaler.get_scale())
    params = list(step.model.parameters())
    point.parameters = sum(p.numel() for p in params)
    point.param_bytes = tensor_bytes(params)
    point.grad_bytes = tensor_bytes(p.grad for p in params)
    point.optimizer_state_bytes = sum(tensor_bytes(s.values()) for s in step.optimizer.state.values())
    point.after_steps_bytes = memory(step.device, "allocated")
    point.peak_bytes, point.peak_reserved_bytes = memory(step.device, "peak"), memory(step.device, "peak_reserved")


def clean(device: str) -> None:
    gc.collect()
    if device == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


def measure_point(line: PlanLine, batch: int, prec: str, opt: str, mode: str, args,
                  want_profile: bool) -> tuple[TrainPoint, dict | None]:
    """One point, measured (and profiled when asked); failures are recorded in the point."""
    point = TrainPoint(line.model, batch, prec, opt, mode, args.device)
    profile = None
    clean(args.device)
    torch.manual_seed(0)
    try:
        t = time.perf_counter()
        model, inputs = build(line.model, batch, PRECISIONS[prec], mode, args.device)
        sync(args.device)
        point.build_s, point.base_bytes = time.perf_counter() - t, memory(args.device, "allocated")
        step = TrainStep(model, inputs, PRECISIONS[prec], opt, args.device)
        time_steps(step, point, args)
        if want_profile:
            profile = {**asdict(point), **profile_steps(step)}
    except Exception as exc:  # noqa: BLE001 - recorded, the run goes on
        point.error = "out of memory" if is_oom(exc) else one_line(exc)
    finally:
        step = model = inputs = None
        clean(args.device)
    return point, profile


def profile_steps(step: TrainStep) -> dict:
    """Two steps under torch.profiler, each part in a record_function range ending with a synchronisation."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if step.device == "cuda" else [])
    step.profiling = True
    try:
        with profile(activities=activities) as prof:
            for _ in range(PROFILE_STEPS):
                step()
    finally:
        step.profiling = False
    return summarize_profile(prof.events(), PROFILE_STEPS, step.device == "cuda")


def part_windows(events) -> list[tuple[float, float, str]]:
    """(start_us, end_us, part) of the host ranges of the parts."""
    return [(e.time_range.start, e.time_range.end, e.name[len(RANGE):]) for e in events
            if e.name.startswith(RANGE) and e.device_type == torch.autograd.DeviceType.CPU]


def part_at(t_us: float, windows) -> str:
    return next((part for start, end, part in windows if start <= t_us <= end), "other")


def outermost(event) -> str:
    """The outermost op above an event inside its part (e.g. 'autograd::engine::evaluate_function: MmBackward0')."""
    top = event
    while top.cpu_parent is not None and not top.cpu_parent.name.startswith(RANGE):
        top = top.cpu_parent
    return top.name


def summarize_profile(events, steps: int, cuda: bool) -> dict:
    """Per-step device time by (part, outermost op, op, kernel), and each part's total device time.

    On a GPU: the kernels each op launched (``FunctionEvent.kernels``), and every device event by the part whose
    host range holds its start (``device_us``: the kernels not tied to an op too). On the CPU: the self time of
    each leaf ATen op, as its own 'kernel'."""
    windows = part_windows(events)
    rows: dict[tuple, list] = defaultdict(lambda: [0, 0.0])
    device_us: dict[str, float] = defaultdict(float)
    for e in events:
        if e.device_type != torch.autograd.DeviceType.CPU:
            if not getattr(e, "is_user_annotation", False) and not e.name.startswith(RANGE):
                device_us[part_at(e.time_range.start, windows)] += e.time_range.elapsed_us()
            continue
        if cuda:
            kernels = [(k.name, k.duration) for k in e.kernels if not k.name.startswith(RANGE)]
        else:
            kernels = [(e.name, e.self_cpu_time_total)] if e.name.startswith("aten::") and not e.cpu_children else []
        if kernels:
            key = (part_at(e.time_range.start, windows), outermost(e), e.name)
            for name, us in kernels:
                row = rows[(*key, name[:KERNEL_NAME_CHARS])]
                row[0], row[1] = row[0] + 1, row[1] + us
    table = [{"part": k[0], "top": k[1], "op": k[2], "kernel": k[3], "calls_per_step": n / steps,
              "device_us_per_step": round(us / steps, 3)} for k, (n, us) in sorted(rows.items())]
    parts = {p: {"device_us_per_step": round(device_us.get(p, 0.0) / steps, 3),
                 "op_kernels_us_per_step": round(sum(r["device_us_per_step"] for r in table if r["part"] == p), 3),
                 "host_us_per_step": round(sum(e - s for s, e, q in windows if q == p) / steps, 3)}
             for p in (*PARTS, "other")}
    return {"profile_steps": steps, "parts": parts, "kernels": table}


def points_of(line: PlanLine):
    for batch in line.batches:
        for prec in line.precisions:
            for opt in line.optimizers:
                for mode in line.modes:
                    yield batch, prec, opt, mode


def run_plan(plan: list[PlanLine], args, env: dict) -> None:
    """Every point of the plan in order, results rewritten under ``args.out`` after each one."""
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    points, profiles = [], []
    t0 = time.perf_counter()
    for line in plan:
        first = True
        for batch, prec, opt, mode in points_of(line):
            left = args.time_budget - (time.perf_counter() - t0)
            if left <= 0 or (mode == "compile" and left < COMPILE_RESERVE_S):
                print(f"skip {line.model} b={batch} {prec} {opt} {mode}: {left:.0f} s of the budget left",
                      file=sys.stderr, flush=True)
                continue
            point, profile = measure_point(line, batch, prec, opt, mode, args, line.profile and first)
            first = False
            points.append(asdict(point))
            write_json(out / "train_points.json", {"environment": env, "points": points})
            if profile is not None:
                profiles.append(profile)
                write_json(out / "train_profiles.json", {"environment": env, "profiles": profiles})
            print(describe(point, time.perf_counter() - t0), file=sys.stderr, flush=True)


def write_json(path: Path, data: dict) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1))
    tmp.replace(path)


def describe(p: TrainPoint, elapsed_s: float) -> str:
    head = f"[{elapsed_s:6.1f} s] {p.model} b={p.batch} {p.precision} {p.optimizer} {p.mode}:"
    if p.error:
        return f"{head} {p.error}"
    peak = f" peak {p.peak_bytes / 1e9:.2f} GB" if p.peak_bytes is not None else ""
    return (f"{head} step {p.step_s * 1e3:.2f} ms (fwd {p.forward_s * 1e3:.2f} bwd {p.backward_s * 1e3:.2f} "
            f"opt {p.optimizer_s * 1e3:.2f}) x{p.repeats}, first {p.first_step_s:.2f} s{peak}")


def extra_environment(device: str) -> dict[str, str]:
    """What else decides a training step's speed: library versions and the backends' flags."""
    import importlib.metadata as md

    env = {}
    for pkg in ("torchvision", "timm", "transformers", "triton"):
        try:
            env[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            env[pkg] = "not installed"
    env.update(cudnn_benchmark=str(torch.backends.cudnn.benchmark),
               cudnn_deterministic=str(torch.backends.cudnn.deterministic),
               float32_matmul_precision=torch.get_float32_matmul_precision())
    if device == "cuda":
        env["allow_fp16_reduced_precision_reduction"] = str(
            torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction)
    return env


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--plan", help="a plan file: one line per MODEL BATCHES PRECISIONS OPTIMIZERS MODES [profile]")
    ap.add_argument("--line", action="append", default=[], help="a plan line (repeatable; after --plan's)")
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    ap.add_argument("--repeats", type=int, default=15, help="timed steps per point (fewer past --budget-s)")
    ap.add_argument("--warmup", type=int, default=3, help="untimed steps after the first one")
    ap.add_argument("--warmup-s", type=float, default=0.3, help="and untimed steps until this many seconds")
    ap.add_argument("--budget-s", type=float, default=2.0, help="timed seconds per point, about (3 steps at least)")
    ap.add_argument("--time-budget", type=float, default=1e9, help="start no point after this many seconds")
    ap.add_argument("--out", required=True, help="folder for train_points.json and train_profiles.json")
    args = ap.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        print("error: no CUDA GPU visible to PyTorch; use --device cpu for a plumbing test", file=sys.stderr)
        return 2
    try:
        text = Path(args.plan).read_text(encoding="utf-8").splitlines() if args.plan else []
        plan = read_plan(text + args.line)
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    env = {**environment(args.device, command=" ".join([sys.executable, *sys.argv])), **extra_environment(args.device)}
    print(json.dumps(env), file=sys.stderr, flush=True)
    run_plan(plan, args, env)
    return 0


if __name__ == "__main__":
    sys.exit(main())
