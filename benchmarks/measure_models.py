"""Measure real latency of model files on the local CUDA GPU, eager and replayed as a CUDA graph.

Writes one JSON file with every measurement and the environment; ``benchmarks/accuracy.py`` puts the
predictions beside them. Run on a GPU machine:

    python benchmarks/measure_models.py --models examples/resnet50.py,examples/bert_large.py \
        --batches 1,8,32,128 --dtypes fp16,fp32 --out results.json

Timing: CUDA events around each forward (eager) or graph replay, after warm-up; median of ``--repeats``
timed iterations; inputs are random (never zeros). OOM at one batch is recorded and the run goes on.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import torch

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def load(path: str):
    spec = importlib.util.spec_from_file_location(Path(path).stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def cast_inputs(inputs, dtype):
    if isinstance(inputs, torch.Tensor):
        inputs = (inputs,)
    return tuple(t.to("cuda", dtype=dtype) if t.is_floating_point() else t.to("cuda") for t in inputs)


def time_fn(fn, repeats: int, warmup: int) -> list[float]:
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    return times


def measure_one(mod, batch: int, dtype: str, repeats: int, warmup: int, profile: bool) -> dict:
    torch.manual_seed(0)
    model = mod.build_model().to("cuda", dtype=DTYPES[dtype]).eval()
    inputs = cast_inputs(mod.example_inputs(batch), DTYPES[dtype])
    out: dict = {"batch": batch, "dtype": dtype}
    with torch.inference_mode():
        eager = time_fn(lambda: model(*inputs), repeats, warmup)
        out["eager_s"] = statistics.median(eager)
        out["eager_spread"] = [min(eager), max(eager)]
        # graph: capture one forward on a side stream after warm-up, then replay
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                model(*inputs)
        torch.cuda.current_stream().wait_stream(s)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            model(*inputs)
        g = time_fn(graph.replay, repeats, warmup)
        out["graph_s"] = statistics.median(g)
        out["graph_spread"] = [min(g), max(g)]
        if profile:
            out["kernels_by_op"] = profile_ops(model, inputs)
        del graph
    torch.cuda.empty_cache()
    return out


def profile_ops(model, inputs) -> dict:
    """Device time and kernel count per aten operator, from one eager forward under torch.profiler."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        model(*inputs)
        torch.cuda.synchronize()
    result = {}
    for evt in prof.key_averages():
        dev = getattr(evt, "device_time_total", None) or getattr(evt, "cuda_time_total", 0)
        self_dev = getattr(evt, "self_device_time_total", None) or getattr(evt, "self_cuda_time_total", 0)
        if evt.key.startswith("aten::") and dev > 0:
            result[evt.key] = {"calls": evt.count, "device_us": dev, "self_device_us": self_dev}
    return result


def environment() -> dict:
    props = torch.cuda.get_device_properties(0)
    env = {"gpu": props.name, "sm_count": props.multi_processor_count, "torch": torch.__version__,
           "cuda": torch.version.cuda, "cudnn": str(torch.backends.cudnn.version()),
           "python": platform.python_version(), "host": platform.node(),
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "command": " ".join(sys.argv), "allow_tf32_matmul": torch.backends.cuda.matmul.allow_tf32,
           "allow_tf32_cudnn": torch.backends.cudnn.allow_tf32}
    try:
        import pynvml

        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(0)
        env["driver"] = pynvml.nvmlSystemGetDriverVersion()
        env["sm_clock_max_mhz"] = pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_SM)
        env["power_limit_w"] = pynvml.nvmlDeviceGetPowerManagementLimit(h) / 1000
    except Exception as exc:  # NVML is optional here
        env["nvml"] = f"unavailable: {exc}"
    return env


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", required=True, help="comma-separated model files")
    ap.add_argument("--batches", default="1,8,32,128")
    ap.add_argument("--dtypes", default="fp16")
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--profile-batch", type=int, default=0, help="also profile per aten op at this batch")
    ap.add_argument("--time-budget", type=float, default=1e9, help="stop after this many seconds")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("error: no CUDA GPU; this script measures on a GPU", file=sys.stderr)
        return 2
    t0 = time.time()
    results = {"environment": environment(), "runs": []}
    for path in args.models.split(","):
        mod = load(path)
        for dtype in args.dtypes.split(","):
            for batch in [int(b) for b in args.batches.split(",")]:
                if time.time() - t0 > args.time_budget:
                    print("time budget reached; stopping", file=sys.stderr)
                    break
                rec = {"model": path}
                try:
                    rec.update(measure_one(mod, batch, dtype, args.repeats, args.warmup,
                                           profile=batch == args.profile_batch))
                except torch.cuda.OutOfMemoryError:
                    rec.update({"batch": batch, "dtype": dtype, "error": "out of memory"})
                    torch.cuda.empty_cache()
                except Exception as exc:  # record and go on with the others
                    rec.update({"batch": batch, "dtype": dtype, "error": f"{type(exc).__name__}: {exc}"})
                results["runs"].append(rec)
                msg = rec.get("error") or f"eager {rec['eager_s']*1e3:.3f} ms  graph {rec['graph_s']*1e3:.3f} ms"
                print(f"{path} {dtype} b={batch}: {msg}", file=sys.stderr, flush=True)
                Path(args.out).write_text(json.dumps(results, indent=1))
    Path(args.out).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
