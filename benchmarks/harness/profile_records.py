"""Measure the device time of every counted operator of real models on the local CUDA GPU.

The predictor's unit is one ATen operator call as the counter sees it (a ``TorchDispatchMode`` over the
forward, with ``F.scaled_dot_product_attention`` and ``F.rms_norm`` caught whole). This script runs the real
forward on the GPU under the same two modes, wraps each of those calls in a profiler range, and records the
summed duration of the kernels each call launched (CUDA kernels, memcpy and memset), median over ``--iters``
profiled forwards. It also times the whole forward replayed as a CUDA graph and eagerly, so the gap between
kernels is known. ``benchmarks/reports/op_accuracy.py`` lines these records up with the meta-device count and the
per-operator predictions.

    python benchmarks/harness/profile_records.py --models examples/resnet50.py,examples/gpt2.py \
        --batches 1,8,32,128 --dtypes fp16,fp32 --out records.json.gz

Output (gzip JSON): ``environment``, ``kernel_names`` (a table), and ``runs``: one per model, dtype and
batch, with ``graph_s``, ``eager_s``, ``kernels_us`` (sum of all kernel time in one forward) and ``ops``:
``[name, device_us, kernel_count, index of the longest kernel's name]`` in execution order.
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import sys
import time
from pathlib import Path

import torch
from torch.overrides import TorchFunctionMode
from torch.profiler import ProfilerActivity, profile, record_function
from torch.utils._python_dispatch import TorchDispatchMode

from tops_advisor.counting import load_model
from tops_advisor.counting.attention_choice import fused_sdpa_possible
from tops_advisor.counting.dispatch import FUSED_FUNCTIONS
from tops_advisor.validate.measure import (
    DTYPES,
    capture_graph,
    cast_inputs,
    channels_last_inputs,
    environment,
    forward_fn,
    is_oom,
    time_fn,
)

PREFIX = "ta#"


class _DispatchRanges(TorchDispatchMode):
    """Each ATen operator call in a profiler range of its own, labelled with the running index; it holds what
    both modes share: that index, and whether a call taken whole is in progress (its operators unlabelled)."""

    def __init__(self, tag: int):
        super().__init__()
        self.tag, self.index, self.suppress = tag, 0, 0

    def label(self, name: str) -> str:
        self.index += 1
        return f"{PREFIX}{self.tag}#{self.index - 1}#{name}"

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if self.suppress:
            return func(*args, **kwargs)
        with record_function(self.label(str(func.overloadpacket))):
            return func(*args, **kwargs)


class _FunctionRanges(TorchFunctionMode):
    """The functions the counter takes whole, each in one range, their operators inside it unlabelled."""

    def __init__(self, ranges: _DispatchRanges):
        super().__init__()
        self.ranges = ranges

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = FUSED_FUNCTIONS.get(func) if not self.ranges.suppress else None
        if name is None or (name == "aten.scaled_dot_product_attention"
                            and not fused_sdpa_possible(args, kwargs)):
            return func(*args, **kwargs)
        self.ranges.suppress += 1
        try:
            with record_function(self.ranges.label(name)):
                return func(*args, **kwargs)
        finally:
            self.ranges.suppress -= 1


def _annotation(evt) -> str | None:
    while evt is not None:
        if evt.name.startswith(PREFIX):
            return evt.name
        evt = evt.cpu_parent
    return None


def profile_forward(forward, iters: int, names: dict[str, int]) -> tuple[list, float]:
    """Per counted call: [name, median device us, kernels, longest kernel's name index]; and total us."""
    per_iter: list[dict[int, list]] = []
    # no_grad, as the counter runs: under inference_mode composite operators (linear) reach the mode whole
    with torch.no_grad(), profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for it in range(iters):
            ranges = _DispatchRanges(it)
            with ranges, _FunctionRanges(ranges):
                forward()
            if torch.cuda.is_available():
                torch.cuda.synchronize()
    calls: dict[tuple[int, int], list] = {}
    total = [0.0] * iters
    for evt in prof.events():
        kernels = getattr(evt, "kernels", None)
        if not kernels:
            continue
        label = _annotation(evt)
        if label is None:
            continue
        _, tag, index, name = label.split("#", 3)
        rec = calls.setdefault((int(tag), int(index)), [name, 0.0, 0, "", 0.0])
        for k in kernels:
            if k.name.startswith(PREFIX):  # the GPU-side copy of a range is not a kernel
                continue
            rec[1] += k.duration
            rec[2] += 1
            total[int(tag)] += k.duration
            if k.duration > rec[4]:
                rec[3], rec[4] = k.name, k.duration
    # every counted call, with or without kernels, in order (index from the first iteration's labels)
    for evt in prof.events():
        if evt.name.startswith(PREFIX):
            _, tag, index, name = evt.name.split("#", 3)
            calls.setdefault((int(tag), int(index)), [name, 0.0, 0, "", 0.0])
    for it in range(iters):
        per_iter.append({i: rec for (t, i), rec in calls.items() if t == it})
    ops = []
    for i in sorted(per_iter[0]):
        recs = [p[i] for p in per_iter if i in p]
        name, kernels, longest = recs[0][0], recs[0][2], recs[0][3][:160]
        ops.append([name, round(statistics.median(r[1] for r in recs), 3), kernels,
                    names.setdefault(longest, len(names))])
    return ops, statistics.median(total)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", required=True, help="comma-separated model files")
    ap.add_argument("--batches", default="1,8,32,128")
    ap.add_argument("--small-batches", default="1,2", help="batches for --small-models")
    ap.add_argument("--small-models", default="", help="models measured only at --small-batches")
    ap.add_argument("--dtypes", default="fp16,fp32")
    ap.add_argument("--iters", type=int, default=3, help="profiled forwards per run (median per call)")
    ap.add_argument("--repeats", type=int, default=15, help="timed graph/eager forwards per run")
    ap.add_argument("--time-budget", type=float, default=1e9)
    ap.add_argument("--channels-last", action="store_true", help="model and inputs in channels-last memory format")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("error: no CUDA GPU found; this script measures a GPU", file=sys.stderr)
        return 2
    t0 = time.time()
    names: dict[str, int] = {}
    result = {"environment": environment("cuda"), "kernel_names": [], "runs": []}
    small = set(filter(None, args.small_models.split(",")))

    def save() -> None:
        result["kernel_names"] = sorted(names, key=names.get)
        with gzip.open(args.out, "wt") as f:
            json.dump(result, f)

    for path in args.models.split(","):
        model_file = load_model(path)
        batches = args.small_batches if path in small or Path(path).stem in small else args.batches
        for dtype in args.dtypes.split(","):
            torch.manual_seed(0)
            model = model_file.build(meta=False).to("cuda", dtype=DTYPES[dtype]).eval()
            if args.channels_last:
                model = model.to(memory_format=torch.channels_last)
            for batch in [int(b) for b in batches.split(",")]:
                if time.time() - t0 > args.time_budget:
                    print("time budget reached; stopping", file=sys.stderr)
                    save()
                    return 0
                run = {"model": path, "dtype": dtype, "batch": batch}
                try:
                    inputs = cast_inputs(model_file.inputs(batch, meta=False), dtype, "cuda")
                    if args.channels_last:
                        inputs = channels_last_inputs(inputs)
                    forward = forward_fn(model, inputs, autocast=dtype == "amp")
                    with torch.inference_mode():
                        t = time_fn(forward, args.repeats, 3)
                        run["eager_s"] = t.median_s
                        graph = capture_graph(forward, warmup=1)
                        run["graph_s"] = time_fn(graph.replay, args.repeats, 3).median_s
                        del graph
                    run["ops"], run["kernels_us"] = profile_forward(forward, args.iters, names)
                except Exception as exc:  # record and go on: one failure must not lose the others
                    run["error"] = "out of memory" if is_oom(exc) else f"{type(exc).__name__}: {exc}"[:300]
                    torch.cuda.empty_cache()
                result["runs"].append(run)
                print(f"{path} {dtype} b={batch}: " + (run.get("error") or
                      f"graph {run['graph_s'] * 1e3:.3f} ms, kernels {run['kernels_us'] / 1e3:.3f} ms, "
                      f"{len(run['ops'])} calls"), file=sys.stderr, flush=True)
                save()
            del model
            torch.cuda.empty_cache()
    save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
