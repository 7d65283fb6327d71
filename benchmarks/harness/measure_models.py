"""Measure real latency of model files on the local CUDA GPU, eager and replayed as a CUDA graph.

Writes one JSON file with every measurement and the environment; ``benchmarks/reports/accuracy.py`` puts the
predictions beside them. Run on a GPU machine:

    python benchmarks/harness/measure_models.py --models examples/resnet50.py,examples/bert_large.py \
        --batches 1,8,32,128 --dtypes fp16,fp32 --out results.json

The measuring itself lives in ``tops_advisor.validate.measure`` (shared with ``tops-advisor validate``):
CUDA events around each forward (eager) or graph replay, after warm-up; median of ``--repeats`` timed
iterations; inputs are random (never zeros). OOM or a failure at one batch is recorded and the run goes on.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from launch_time import probe as launch_probe

from tops_advisor.counting import load_model
from tops_advisor.errors import TopsAdvisorError
from tops_advisor.validate.measure import MeasurementSet, check_device, environment, measure_batches


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", required=True, help="comma-separated model files")
    ap.add_argument("--batches", default="1,8,32,128")
    ap.add_argument("--dtypes", default="fp16")
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--profile-batch", type=int, default=0, help="also profile per aten op at this batch")
    ap.add_argument("--time-budget", type=float, default=1e9, help="stop after this many seconds")
    ap.add_argument("--modes", default="eager,graph", help="comma-separated: eager, graph, compiled")
    ap.add_argument("--channels-last", action="store_true", help="model and inputs in channels-last memory format")
    ap.add_argument("--out", required=True)
    ap.add_argument("--launch-out", help="also probe the eager launch time (probe.overhead.eager_kernel_s, median "
                                         "of 3) right before each model, dtype and batch, and write the probes "
                                         "here: the host's speed when that point's eager time was taken")
    args = ap.parse_args()
    try:
        check_device("cuda")
    except TopsAdvisorError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    t0 = time.time()
    results = MeasurementSet(environment=environment("cuda"))
    out = Path(args.out)

    def progress(m) -> None:
        results.runs.append(m)
        times = {k: getattr(m, f"{k}_s", None) for k in ("eager", "graph", "compiled")}
        msg = m.error or "  ".join(f"{k} {v * 1e3:.3f} ms" for k, v in times.items() if v)
        print(f"{m.model} {m.dtype} b={m.batch}: {msg}", file=sys.stderr, flush=True)
        out.write_text(json.dumps(results.model_dump(), indent=1))

    probes: list[dict] = []
    for path in args.models.split(","):
        try:
            model_file = load_model(path)
        except TopsAdvisorError as exc:
            print(f"error: {exc}", file=sys.stderr)
            continue
        for dtype in args.dtypes.split(","):
            for batch in [int(b) for b in args.batches.split(",")]:
                if time.time() - t0 > args.time_budget:
                    print("time budget reached; stopping", file=sys.stderr)
                    break
                if args.launch_out:
                    now = launch_probe(3)
                    probes.append({"model": path, "dtype": dtype, "batch": batch,
                                   "kernel_eager_us": now["kernel_eager_us"], "module_call_us": now["module_call_us"]})
                    Path(args.launch_out).write_text(json.dumps({"probes": probes}, indent=1))
                measure_batches(model_file, [batch], dtype, repeats=args.repeats, warmup=args.warmup,
                                profile=batch == args.profile_batch, model_name=path, keep_going=True,
                                modes=tuple(args.modes.split(",")), channels_last=args.channels_last,
                                progress=progress)
    out.write_text(json.dumps(results.model_dump(), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
