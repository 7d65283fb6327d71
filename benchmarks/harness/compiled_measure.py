"""Measure models as people deploy them: torch.compile (inductor, default mode) + CUDA-graph replay, and autocast.

For each (model, batch, dtype) it times, on the local CUDA GPU (CUDA events, median of ``--repeats``):
  graph_s           eager forward captured in one CUDA graph (the tool's ``graph`` mode reference)
  compiled_eager_s  torch.compile(model, dynamic=False), default mode, launched from Python
  compiled_s        the same compiled callable captured in one CUDA graph and replayed (``--mode compiled``)
and lists the CUDA kernels one compiled forward launches (torch.profiler: name, device us), and the eager
forward's kernel count. dtype "amp" is an fp32 model under torch.autocast("cuda", torch.float16).
Inductor's generated code (the .py files of its cache) is kept per configuration under --code-dir.

Needs only torch (and timm for ``timm:`` models); stops starting new configurations after --budget-s.

    python benchmarks/harness/compiled_measure.py --out results.json timm:resnet50:fp16:1,32 examples/resnet18.py:fp16:1
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import platform
import sys
import time
from pathlib import Path

import torch

from tops_advisor.probe.kit import CudaBackend, capture_graph


def build(spec: str):
    """(module, inputs(batch) -> tuple) for ``timm:NAME`` or a model file."""
    if spec.startswith("timm:"):
        import timm

        model = timm.create_model(spec[5:], pretrained=False)
        size = model.default_cfg.get("input_size", (3, 224, 224))
        return model, lambda b: (torch.randn(b, *size),)
    if ":" in spec:  # torchvision:NAME and other library forms with positional inputs
        from tops_advisor.counting import load_model

        source = load_model(spec)

        def positional(b):
            value = source.inputs(b, meta=False)
            return value if isinstance(value, tuple) else (value,)
        return source.build(meta=False), positional
    mod_spec = importlib.util.spec_from_file_location(Path(spec).stem, spec)
    mod = importlib.util.module_from_spec(mod_spec)
    mod_spec.loader.exec_module(mod)

    def inputs(b):
        x = mod.example_inputs(b)
        return x if isinstance(x, tuple) else (x,)

    return mod.build_model(), inputs


def time_fn(fn, repeats: int, warmup: int = 5) -> tuple[float, float, float]:
    """Median, best and worst seconds per call: the measuring kit's timer (CUDA events, the device
    synchronised after each call, no cache flush)."""
    t = CudaBackend().time(fn, warmup=warmup, repeats=repeats, flush=False, sync_each=True)
    return t.median_s, t.min_s, t.max_s


def kernels(fn) -> list[tuple[str, float]]:
    """(name, device us) of every CUDA kernel one call launches."""
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    out = []
    for evt in prof.events():
        if evt.device_type == torch.autograd.DeviceType.CUDA and "memcpy" not in evt.name.lower() \
                and "memset" not in evt.name.lower():
            out.append((evt.name[:120], round(evt.device_time_total if hasattr(evt, "device_time_total")
                                             else evt.cuda_time_total, 3)))
    return out


def measure(spec: str, batch: int, dtype: str, repeats: int, code_dir: Path) -> dict:
    torch.manual_seed(0)
    torch._dynamo.reset()
    tag = f"{Path(spec.replace(':', '_')).stem}_b{batch}_{dtype}"
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(code_dir / tag)
    model, make_inputs = build(spec)
    store = torch.float32 if dtype in ("fp32", "amp") else torch.float16
    model = model.cuda().to(store).eval()
    xs = tuple(t.cuda().to(store) if t.is_floating_point() else t.cuda() for t in make_inputs(batch))
    amp = (lambda: torch.autocast("cuda", dtype=torch.float16)) if dtype == "amp" else contextlib.nullcontext
    rec: dict = {"model": spec, "batch": batch, "dtype": dtype}
    with torch.no_grad():
        def eager():
            with amp():
                return model(*xs)
        rec["eager_kernels"] = len(kernels(eager))
        g = capture_graph(eager)
        rec["graph_s"], *rec["graph_spread"] = time_fn(g.replay, repeats)
        del g
        compiled = torch.compile(model, dynamic=False)

        def comp():
            with amp():
                return compiled(*xs)
        t0 = time.perf_counter()
        comp()
        torch.cuda.synchronize()
        rec["compile_s"] = time.perf_counter() - t0
        rec["compiled_eager_s"], *rec["compiled_eager_spread"] = time_fn(comp, repeats)
        ks = kernels(comp)
        rec["compiled_kernels"] = len(ks)
        rec["compiled_kernel_list"] = ks
        g = capture_graph(comp)
        rec["compiled_s"], *rec["compiled_spread"] = time_fn(g.replay, repeats)
        del g
    torch.cuda.empty_cache()
    return rec


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("configs", nargs="+", help="SPEC:DTYPE:B1,B2 (SPEC timm:NAME or a model file)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--code-dir", default="/tmp/inductor_code")
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--budget-s", type=float, default=400)
    args = ap.parse_args(argv)
    t_start = time.perf_counter()
    doc = {"command": " ".join([sys.executable, *sys.argv]), "environment": {
        "torch": torch.__version__, "gpu": torch.cuda.get_device_name(0), "python": platform.python_version(),
        "compile": "torch.compile(model, dynamic=False), default mode; CUDA graph captured by hand"}, "runs": []}
    for config in args.configs:
        spec, dtype, batches = config.rsplit(":", 2)
        for b in (int(x) for x in batches.split(",")):
            if time.perf_counter() - t_start > args.budget_s:
                doc["runs"].append({"model": spec, "batch": b, "dtype": dtype, "error": "skipped: budget"})
                continue
            try:
                rec = measure(spec, b, dtype, args.repeats, Path(args.code_dir))
            except Exception as exc:  # record and go on
                rec = {"model": spec, "batch": b, "dtype": dtype, "error": f"{type(exc).__name__}: {exc}"[:300]}
            print(json.dumps({k: v for k, v in rec.items() if k != "compiled_kernel_list"}), flush=True)
            doc["runs"].append(rec)
            Path(args.out).write_text(json.dumps(doc, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
