"""Why a grouped convolution of one shape runs other cuDNN kernels inside a model than alone (probe, H200).

For each grouped 3x3 convolution of a few library models, captures its input in the model's forward and
profiles the same call several ways: the module on the captured input, F.conv2d on fresh tensors, under
no_grad and under inference_mode, with the weight as a Parameter and as a plain tensor. Prints the kernels.

    python benchmarks/studies/grouped-conv/grouped_conv_context.py --out grouped_context.json
"""

from __future__ import annotations

import argparse
import json
import sys

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

from tops_advisor.counting import load_model


def kernels(fn) -> tuple[list[str], float]:
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    ev = [e for e in prof.events() if e.device_type.name == "CUDA"]
    return [e.name[:70] for e in ev], sum(e.device_time for e in ev)


def grouped_inputs(spec: str, batch: int, dtype: torch.dtype) -> list[tuple[torch.nn.Conv2d, torch.Tensor]]:
    src = load_model(spec)
    model = src.build(meta=False).to("cuda", dtype=dtype).eval()
    inputs = src.inputs(batch, meta=False)
    inputs = tuple(t.to("cuda", dtype=dtype) for t in inputs) if isinstance(inputs, tuple) else inputs
    seen = []

    def hook(mod, args):
        if len(seen) < 6 and mod.groups > 1 and mod.groups != mod.in_channels:
            seen.append((mod, args[0].detach().clone()))
    hs = [m.register_forward_pre_hook(hook) for m in model.modules() if isinstance(m, torch.nn.Conv2d)]
    with torch.no_grad():
        model(*inputs)
    for h in hs:
        h.remove()
    return seen


def variants(mod: torch.nn.Conv2d, x: torch.Tensor) -> dict:
    """The same convolution called several ways: (grad mode, call)."""
    w = mod.weight
    xf, wf = torch.randn_like(x), torch.randn_like(w.detach())

    def conv(a, b):
        return lambda: F.conv2d(a, b, None, mod.stride, mod.padding, mod.dilation, mod.groups)
    return {"module_no_grad": (torch.no_grad, lambda: mod(x)),
            "module_inference": (torch.inference_mode, lambda: mod(x)),
            "F_param_no_grad": (torch.no_grad, conv(x, w)),
            "F_fresh_no_grad": (torch.no_grad, conv(xf, wf)),
            "F_fresh_inference": (torch.inference_mode, conv(xf, wf))}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    cases = [("torchvision:regnet_y_8gf", 32, torch.float16), ("torchvision:regnet_y_8gf", 32, torch.float32),
             ("timm:regnety_008", 8, torch.float16), ("timm:regnety_008", 8, torch.float32),
             ("torchvision:resnext50_32x4d", 128, torch.float32)]
    out = []
    for spec, batch, dtype in cases:
        for mod, x in grouped_inputs(spec, batch, dtype):
            w = mod.weight
            row = {"model": spec, "batch": batch, "dtype": str(dtype), "x": list(x.shape), "w": list(w.shape),
                   "groups": mod.groups, "stride": mod.stride, "x_ptr": x.data_ptr() % 1024,
                   "w_ptr": w.data_ptr() % 1024, "w_contig": w.is_contiguous(), "bias": mod.bias is not None}
            for name, (ctx, fn) in variants(mod, x).items():
                with ctx():
                    names, us = kernels(fn)
                row[name] = {"n": len(names), "us": us, "names": names[:6]}
            print(json.dumps({k: (v if not isinstance(v, dict) else (v["n"], round(v["us"], 1), v["names"][:2]))
                              for k, v in row.items()}), file=sys.stderr, flush=True)
            out.append(row)
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
