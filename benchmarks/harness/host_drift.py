"""Host-speed drift: eager batch-1 fp16 latency of several models, each timing preceded by two host probes (the
probe's trivial-kernel launch; a 64-module nn.Sequential of tiny Linear layers, per module call), in several
passes. Runs on a CUDA GPU; JSON on stdout, one line per timing on stderr:

    python benchmarks/harness/host_drift.py timm:ecaresnet50d,torchvision:resnet101 PASSES SECONDS > drift.json
"""

from __future__ import annotations

import json
import statistics
import sys
import time

import torch

from tops_advisor.counting.sources import load_model
from tops_advisor.probe.kit import CudaBackend
from tops_advisor.probe.overhead import eager_kernel_s, module_call_s
from tops_advisor.validate.measure import cast_inputs, forward_fn, time_fn


def probes(backend) -> dict:
    """The trivial-kernel launch time (median of 3) and the per-module time of the probe's module stack, in
    us (``probe.overhead.module_call_s``; rounds 15 and 23 ran the same stack written out here)."""
    launch = statistics.median(eager_kernel_s(backend) * 1e6 for _ in range(3))
    return {"launch_us": launch, "stack_us_per_module": module_call_s(backend) * 1e6}


def main(specs: list[str], passes: int, budget_s: float) -> list[dict]:
    backend = CudaBackend()
    models = {}
    for s in specs:
        mf = load_model(s)
        m = mf.build(meta=False).to("cuda", dtype=torch.float16).eval()
        models[s] = forward_fn(m, cast_inputs(mf.inputs(1, meta=False), "fp16", "cuda"))
    out, t0 = [], time.time()
    for p in range(passes):
        for s, f in models.items():
            if time.time() - t0 > budget_s:
                return out
            pr = probes(backend)
            with torch.inference_mode():
                e = time_fn(f, 20, 5).median_s
            out.append({"pass": p, "model": s, "eager_s": e, **pr})
            print(json.dumps(out[-1]), file=sys.stderr, flush=True)
    return out


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1].split(","), int(sys.argv[2]), float(sys.argv[3]))))
