"""Kernel timeline of a CUDA-graph replay: each kernel's duration, launch shape and the idle gap before it.

The predictor charges a fixed gap between back-to-back kernels of a graph replay (``kernel_gap_s``), fitted as
(graph latency - summed kernel time) / kernels on per-operator profiles. That quotient varies 0.2-1.1 us per
kernel between models at batch 1 (benchmarks/results/*records*.json.gz). This records what the gap is made of:
the forward is captured once, replayed under torch.profiler (CUPTI reports the kernels of a graph launch one by
one), and for every kernel of the last replays the script writes its name, grid, block, duration and the time
from the previous kernel's end to its start. Runs on a CUDA GPU; gzipped JSON to ``--out``:

    python benchmarks/studies/graph-gaps/graph_gaps.py --models timm:mobileone_s1,examples/resnet50.py --batches 1,32 \
        --dtypes fp16 --out gaps.json.gz
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys

import torch
from torch.profiler import ProfilerActivity, profile

from tops_advisor.counting import load_model
from tops_advisor.validate.measure import DTYPES, capture_graph, cast_inputs, environment, forward_fn

REPLAYS = 5


def kernels_of_replays(graph, replays: int) -> list[list[dict]]:
    """Kernel events of ``replays`` replays, each a list in start order (separated by a synchronize)."""
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(replays):
            graph.replay()
            torch.cuda.synchronize()
    evts = sorted((e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA
                   and "memcpy" not in e.name.lower() and "memset" not in e.name.lower()),
                  key=lambda e: e.time_range.start)
    runs, current, last_end = [], [], None
    for e in evts:
        start, end = e.time_range.start, e.time_range.end
        if last_end is not None and start - last_end > 50.0:   # a synchronize between replays
            runs.append(current)
            current = []
        current.append({"name": e.name[:160], "start_us": start, "dur_us": end - start})
        last_end = end
    runs.append(current)
    return runs


def gaps(run: list[dict]) -> list[dict]:
    out, prev_end = [], None
    for k in run:
        gap = None if prev_end is None else k["start_us"] - prev_end
        out.append({"name": k["name"], "dur_us": round(k["dur_us"], 3),
                    "gap_us": None if gap is None else round(gap, 3)})
        prev_end = k["start_us"] + k["dur_us"]
    return out


def replay_us(graph, warmup: int = 5, timed: int = 20) -> float:
    """Mean time of one unprofiled replay, us: ``timed`` replays between CUDA events after ``warmup``."""
    for _ in range(warmup):
        graph.replay()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(timed):
        graph.replay()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1e3 / timed


def timeline(mf, spec: str, dtype: str, batch: int) -> dict:
    """One model at one batch and dtype: unprofiled replay time (mean of 20) and the last profiled replay."""
    model = mf.build(meta=False).to("cuda", dtype=DTYPES[dtype]).eval()
    inputs = cast_inputs(mf.inputs(batch, meta=False), dtype, "cuda")
    with torch.inference_mode():
        graph = capture_graph(forward_fn(model, inputs))
        graph_us = replay_us(graph)
        last = kernels_of_replays(graph, REPLAYS)[-1]
    span = last[-1]["start_us"] + last[-1]["dur_us"] - last[0]["start_us"]
    return {"model": spec, "dtype": dtype, "batch": batch, "graph_us": graph_us,
            "replay_span_us": span, "kernels": gaps(last)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", required=True)
    ap.add_argument("--batches", default="1,32")
    ap.add_argument("--dtypes", default="fp16")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    result = {"environment": environment("cuda"), "runs": []}
    for spec in args.models.split(","):
        mf = load_model(spec)
        for dtype in args.dtypes.split(","):
            for batch in [int(b) for b in args.batches.split(",")]:
                try:
                    r = timeline(mf, spec, dtype, batch)
                    print(f"{spec} {dtype} b={batch}: {len(r['kernels'])} kernels, graph {r['graph_us']:.1f} us, "
                          f"span {r['replay_span_us']:.1f} us", file=sys.stderr, flush=True)
                except Exception as exc:  # noqa: BLE001 - keep going; the failure is recorded
                    r = {"model": spec, "dtype": dtype, "batch": batch, "error": repr(exc)[:300]}
                    print(f"{spec} {dtype} b={batch}: {exc!r}"[:300], file=sys.stderr, flush=True)
                result["runs"].append(r)
                torch.cuda.empty_cache()
    with gzip.open(args.out, "wt") as f:
        json.dump(result, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
