"""Two operators whose fp16 kernels run far below their bytes on the H200 (blind round 10's profile):
bilinear upsampling (NCHW) and convolutions with few input channels (3-channel stems).

Times each shape on the local CUDA GPU (a CUDA graph of 10 calls, median of 5 replays) with the kernels
PyTorch launched, for the roofline's per-operator model. No model is involved.

    python benchmarks/studies/slow-ops/slow_ops_sweep.py --out slow_ops.json
"""

from __future__ import annotations

import argparse
import json
import sys

import torch
import torch.nn.functional as F

from tops_advisor.probe.kit import CudaBackend, capture_graph, environment

UPSAMPLE = [(n, c, hin, hout) for n in (8, 128) for c, hin, hout in
            ((21, 65, 520), (128, 33, 65), (768, 7, 56), (768, 28, 56), (64, 56, 112), (256, 14, 224),
             (3, 112, 224))]
STEMS = [(n, cin, cout, k, s, side) for n in (8, 128) for cin in (3, 8) for cout, k, s, side in
         ((16, 3, 2, 520), (64, 7, 2, 224), (32, 3, 2, 224), (64, 7, 4, 224), (96, 4, 4, 224))]


def kernels(fn) -> list[str]:
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return [e.key[:90] for e in prof.key_averages() if e.device_type.name == "CUDA"]


def timed(fn, backend: CudaBackend) -> tuple[float, list[str]]:
    graph = capture_graph(fn, calls=10)
    t = backend.time(graph.replay, warmup=3, repeats=5, flush=False, warmup_s=0.1)
    return t.median_s / 10, kernels(fn)


def new_result(*lists: str) -> dict:
    """A sweep's result document: the environment with the command line, and an empty list per name."""
    return {"environment": environment("cuda", command="python " + " ".join(sys.argv)), **{k: [] for k in lists}}


def write_result(path: str, doc: dict) -> None:
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)


def run_cases(path: str, key: str, case, params, line) -> dict:
    """A one-list sweep: ``case(*p, backend)`` for each ``p`` of ``params`` under inference mode on one CUDA
    backend, each record printed to stderr as ``line(record)``, the document written to ``path``."""
    backend = CudaBackend()
    out = new_result(key)
    with torch.inference_mode():
        for p in params:
            rec = case(*p, backend)
            out[key].append(rec)
            print(line(rec), file=sys.stderr)
    write_result(path, out)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    backend, h = CudaBackend(), torch.float16
    out = new_result("upsample", "stem")
    with torch.inference_mode():
        for n, c, hin, hout in UPSAMPLE:
            x = torch.randn(n, c, hin, hin, device="cuda", dtype=h)
            s, names = timed(lambda x=x, hout=hout: F.interpolate(x, size=(hout, hout), mode="bilinear"), backend)
            out["upsample"].append({"n": n, "c": c, "in": hin, "out": hout, "time_s": s, "kernels": names})
            print(f"upsample n={n} c={c} {hin}->{hout}: {s * 1e6:.1f} us {names[:1]}", file=sys.stderr)
        for n, cin, cout, k, s_, side in STEMS:
            x = torch.randn(n, cin, side, side, device="cuda", dtype=h)
            w = torch.randn(cout, cin, k, k, device="cuda", dtype=h)
            s, names = timed(lambda x=x, w=w, s_=s_, k=k: F.conv2d(x, w, stride=s_, padding=k // 2), backend)
            out["stem"].append({"n": n, "cin": cin, "cout": cout, "k": k, "stride": s_, "side": side,
                                "time_s": s, "kernels": names})
            print(f"stem n={n} cin={cin} cout={cout} k={k}/{s_} {side}: {s * 1e6:.1f} us {len(names)} kernels",
                  file=sys.stderr)
    write_result(args.out, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
