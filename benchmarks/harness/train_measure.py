"""Measure training steps (forward + loss, backward, optimizer step) of models on the local device.

For each point of a plan (model, batch, precision, optimizer, mode) it builds the model fresh on the device
and measures one training step with ``tops_advisor.validate.train_step`` (the code ``tops-advisor validate
--train`` runs; its docstring is the method): the step ``count_training`` counts (the same model set-up,
optimizer and loss), one first step timed by the host clock (optimizer-state creation, cuDNN/cuBLAS setup,
compilation), then the kit's timer over steps back to back (``tops_advisor.probe.kit``: warm-up calls and
seconds, CUDA events around each step, the median of the repeats, no synchronisation between steps: a
training loop's steady state) and, inside each step, CUDA events between its three parts. Memory: the peak
allocated over every step (``torch.cuda.max_memory_allocated`` after a reset before the model is built),
the peak over the steps after the first (``steady_peak_bytes``: the optimizer state exists), what stays
allocated after the steps (weights, gradients, optimizer state, inputs), and the exact bytes of weights,
gradients and optimizer state. A line of the plan marked ``profile`` also runs two steps under
``torch.profiler`` at its first point, with a synchronisation after each part, and keeps the device time of
every kernel summed by (part, outermost op, op that launched it, kernel name): not the trace.

Precisions (``tops_advisor.train.TRAIN_PRECISIONS``): ``fp32`` (PyTorch's defaults: TF32 off for matmul, on
for cuDNN convolutions; recorded), ``tf32`` (TF32 on for both), ``amp`` (fp32 weights, ``torch.autocast``
fp16, ``GradScaler``), ``amp-bf16`` (autocast bf16, no scaler), ``bf16`` (weights, gradients and optimizer
state in bf16). Optimizers (``tops_advisor.train.OPTIMIZERS``): ``adamw`` (foreach), ``adam``, ``sgd``
(momentum 0.9, foreach), ``adamw-fused``, ``adamw-8bit`` (bitsandbytes). Modes: ``eager``, ``ckpt`` (eager
with the library's gradient checkpointing: timm's ``set_grad_checkpointing``, transformers'
``gradient_checkpointing_enable``), ``cl`` (eager, model and batch channels-last), ``compile`` (``torch.compile(model)``, inductor's default mode; the
optimizer stays eager; ``first_step_s`` holds the compilation). Loss (``--loss``): ``counted`` (the default)
is the loss ``count_training`` backpropagates (a model file's ``loss()``, a scalar forward, a library
model's task loss, else the sum of the output); ``study`` is the 2026-12-01 study's (cross-entropy on random
labels over the output's classes, tokens (vocabulary >= 1000) or pixels, the mean of the output otherwise).
Inputs are the model's own random example inputs.

A plan line: ``MODEL BATCHES PRECISIONS OPTIMIZERS MODES [profile]``, comma-separated lists, e.g.
``examples/resnet50.py 32,128 amp,fp32 adamw eager profile``; ``#`` starts a comment. Results are rewritten
after every point (a timeout keeps what was measured): ``train_points.json`` and ``train_profiles.json``
under ``--out``, each with the environment and the command. Out of memory or a failure at one point is
recorded and the run goes on. On the CPU (``--device cpu``) the same code runs: a plumbing test.

    python benchmarks/harness/train_measure.py --plan benchmarks/studies/training-step/plan.txt --loss study --out OUT
    python benchmarks/harness/train_measure.py --device cpu --line "examples/small_cnn.py 2 fp32 adamw eager profile" --out /tmp/t
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from tops_advisor.counting import load_model
from tops_advisor.counting.training.loss import Loss
from tops_advisor.errors import one_line
from tops_advisor.probe.kit import environment, is_oom
from tops_advisor.train import OPTIMIZERS, TRAIN_PRECISIONS, TrainSetup
from tops_advisor.validate.train_step import TrainStep, built_step, clean, time_step, training_flags

PARTS = ("forward", "backward", "optimizer")
RANGE = "train:"                     # record_function names of the parts while profiling: train:forward, ...
PROFILE_STEPS = 2
COMPILE_RESERVE_S = 150.0            # a compile point starts only with this much of the time budget left
KERNEL_NAME_CHARS = 200
MODES = ("eager", "ckpt", "compile", "cl")
LOSSES = ("counted", "study")


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
    loss: str = ""                   # what the loss was (--loss: the counted rule, or the study's)
    parameters: int = 0
    trainable_parameters: int = 0
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
    steady_peak_bytes: int | None = None  # max allocated over the steps after the first
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
    for values, known, what in ((lists[1], TRAIN_PRECISIONS, "precision"), (lists[2], OPTIMIZERS, "optimizer"),
                                (lists[3], MODES, "mode")):
        bad = [v for v in values if v not in known]
        if bad:
            raise ValueError(f"plan line {text.strip()!r}: unknown {what} {bad[0]!r}; expected one of {list(known)}")
    return PlanLine(words[0], tuple(int(b) for b in lists[0]), lists[1], lists[2], lists[3], len(words) == 6)


def read_plan(lines: list[str]) -> list[PlanLine]:
    return [p for p in (parse_line(t) for t in lines) if p is not None]


class StudyLoss:
    """The loss of the 2026-12-01 study (``--loss study``): cross-entropy on random labels made at the first
    call for the output's shape (classes, tokens with a vocabulary of 1000 or more, pixels), else the mean."""

    def __init__(self):
        self.labels = None
        self.kind = ""

    def __call__(self, out, _args) -> Loss:
        out = first_tensor(out).float()
        if self.labels is None:
            self.kind, self.labels = make_labels(out)
        if self.labels is None:
            return Loss(out.mean(), self.kind)
        if out.dim() == 3:
            return Loss(torch.nn.functional.cross_entropy(out.flatten(0, 1), self.labels.flatten()), self.kind)
        return Loss(torch.nn.functional.cross_entropy(out, self.labels), self.kind)


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


def setup_of(precision: str, optimizer: str, mode: str) -> TrainSetup:
    return TrainSetup(precision=precision, optimizer=optimizer, checkpointing=mode == "ckpt",
                      channels_last=mode == "cl")


def measure_point(line: PlanLine, batch: int, prec: str, opt: str, mode: str, args,
                  want_profile: bool) -> tuple[TrainPoint, dict | None]:
    """One point, measured (and profiled when asked); failures are recorded in the point."""
    point = TrainPoint(line.model, batch, prec, opt, mode, args.device)
    profile = None
    clean(args.device)
    torch.manual_seed(0)
    step = None
    try:
        with training_flags(prec):
            step, found = built_step(load_model(line.model), batch, setup_of(prec, opt, mode), args.device,
                                     compile=mode == "compile", loss=StudyLoss() if args.loss == "study" else None)
            found.update(time_step(step, repeats=args.repeats, warmup=args.warmup, warmup_s=args.warmup_s,
                                   budget_s=args.budget_s))
            for name, value in found.items():
                setattr(point, name, value)
            if want_profile:
                profile = {**asdict(point), **profile_steps(step)}
    except Exception as exc:  # noqa: BLE001 - recorded, the run goes on
        point.error = "out of memory" if is_oom(exc) else one_line(exc)
    finally:
        step = None
        clean(args.device)
    return point, profile


def _profiled_part(device: str):
    """A record_function range around a part, ended by a synchronisation (kernels stay inside it)."""
    def part(name: str):
        stack = contextlib.ExitStack()   # exits last-in first-out: the synchronisation, then the range
        stack.enter_context(torch.profiler.record_function(RANGE + name))
        stack.callback(lambda: torch.cuda.synchronize() if device == "cuda" else None)
        return stack
    return part


def profile_steps(step: TrainStep) -> dict:
    """Two steps under torch.profiler, each part in a record_function range ending with a synchronisation."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if step.device == "cuda" else [])
    plain, step.part = step.part, _profiled_part(step.device)
    try:
        with profile(activities=activities) as prof:
            for _ in range(PROFILE_STEPS):
                step()
    finally:
        step.part = plain
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
    ap.add_argument("--loss", choices=LOSSES, default="counted",
                    help="counted: the loss count_training backpropagates (the default); study: the 2026-12-01 "
                         "study's cross-entropy on random labels")
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
