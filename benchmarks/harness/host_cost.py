"""Host time of eager PyTorch per operator and per module call, on model files and library models.

For each model: count it here (ATen operators, kernels, nn.Module calls: ``Workload.module_calls``), then on
the local CUDA GPU time the Python forward's *host* side (the wall time of the call with no synchronisation
inside: kernel launches are asynchronous, so at small batch this is the time the host needs to issue the
forward), the eager latency (synchronised) and the CUDA-graph replay. ``benchmarks/studies/host-cost-fit/host_cost_fit.py`` fits
host seconds per operator and per module call from the JSON (no GPU needed).

    python benchmarks/harness/host_cost.py --models timm:resnet50,examples/resnet50.py --batches 1 --out host.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

from tops_advisor.counting import count, load_model
from tops_advisor.validate.measure import DTYPES, cast_inputs, environment, forward_fn, is_oom, measure_one


def host_seconds(forward, repeats: int = 30, warmup: int = 5) -> list[float]:
    """Wall time of ``forward()`` on the host, the device idle at the start of each call."""
    times = []
    for i in range(warmup + repeats):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        forward()
        t1 = time.perf_counter()
        if i >= warmup:
            times.append(t1 - t0)
    torch.cuda.synchronize()
    return times


def one(spec: str, batch: int, dtype: str, repeats: int) -> dict:
    source = load_model(spec)
    w = count(source, batch=batch, dtype=dtype)
    rec = {"model": spec, "batch": batch, "dtype": dtype, "ops": len(w.ops), "kernels": w.kernels,
           "kernel_ops": sum(1 for op in w.ops if op.kernels >= 1), "module_calls": w.module_calls,
           "empty_module_calls": w.empty_module_calls, "python_calls": w.python_calls,
           "flops": w.flops, "bytes": w.bytes}
    m = measure_one(source, batch, dtype, repeats=repeats, warmup=5, model_name=spec)
    rec.update(eager_s=m.eager_s, graph_s=m.graph_s)
    model = source.build(meta=False).to("cuda", dtype=DTYPES[dtype]).eval()
    forward = forward_fn(model, cast_inputs(source.inputs(batch, meta=False), dtype, "cuda"))
    with torch.inference_mode():
        host = host_seconds(forward, repeats)
    rec.update(host_s=statistics.median(host), host_min_s=min(host))
    del model
    torch.cuda.empty_cache()
    return rec


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", required=True, help="comma-separated model files or library specs")
    ap.add_argument("--batches", default="1")
    ap.add_argument("--dtype", default="fp16")
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    out = {"environment": environment("cuda", command="python " + " ".join(sys.argv)), "runs": []}
    for spec in args.models.split(","):
        for batch in (int(b) for b in args.batches.split(",")):
            try:
                rec = one(spec, batch, args.dtype, args.repeats)
            except Exception as exc:  # record and go on
                rec = {"model": spec, "batch": batch, "error": "out of memory" if is_oom(exc)
                       else f"{type(exc).__name__}: {exc}"[:300]}
                torch.cuda.empty_cache()
            out["runs"].append(rec)
            print(json.dumps(rec), file=sys.stderr, flush=True)
            Path(args.out).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
