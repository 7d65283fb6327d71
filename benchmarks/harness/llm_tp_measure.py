"""Measure tensor-parallel decode of a LLaMA-3-8B-shaped decoder and compare it with ``tops-advisor llm --tp N``.

The model is ``llm_measure.Decoder`` (random bf16 weights, Hugging Face's eager LLaMA operators) split the
Megatron way, as ``tops_advisor.llm.parallel`` costs it: each rank holds 1/N of the query and KV heads, of
the MLP intermediate size and of the output head's vocabulary; one all-reduce after the attention output
projection and one after the MLP down projection (torch.distributed, NCCL on GPUs, gloo on CPUs). The
embedding is replicated and the logits are not gathered (the predictor ignores both collectives too).

Each rank times the same decode steps with CUDA events (perf_counter on the CPU); the slowest rank's median
counts. Every row carries two predictions: with the catalog's link bandwidth and, when the calibration has
``links`` from ``tops-advisor probe --all-gpus``, with the measured bus bandwidth and latency.

    # 2 x H200 (nvidia-h200-x2): ~2 minutes
    NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 \\
      torchrun --standalone --nproc-per-node 2 benchmarks/harness/llm_tp_measure.py \\
        --calibration h200-links.json --out benchmarks/results/llm_tp2_h200.json
    # CPU smoke test with gloo (seconds)
    torchrun --standalone --nproc-per-node 2 benchmarks/harness/llm_tp_measure.py --tiny --out /tmp/llm_tp_tiny.json

The NVLink-multicast switches are set again inside each rank before NCCL starts, so they hold even when the
launcher's environment lacks them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

SAFE_ENV = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
os.environ.update(SAFE_ENV)  # before torch / NCCL read them

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from llm_measure import (  # noqa: E402
    LLAMA3_8B,
    TINY,
    Decoder,
    add_point_arguments,
    decode_points,
    environment,
    point_lists,
    time_runs,
)


def predictions(cfg: dict, tp: int, hardware: str, calibration: str | None) -> tuple[callable, dict]:
    """(fn(batch, context, mode) -> dict of predictions, info); the fn returns {} when tops_advisor is missing."""
    try:
        from tops_advisor.api import calibration_for
        from tops_advisor.catalog import load_catalog
        from tops_advisor.llm import config_from_dict
        from tops_advisor.llm.analysis import analyze_llm
    except Exception as exc:  # noqa: BLE001 - the benchmark runs without tops_advisor too
        return (lambda *a: {}), {"note": f"tops_advisor not importable: {exc}"}
    hw = load_catalog().get(hardware)
    cal, src = calibration_for(hw, calibration)
    llm = config_from_dict(cfg, name="llama3-8b-shaped" if cfg["hidden_size"] == 4096 else "tiny")
    has_links = cal is not None and cal.links is not None
    catalog_cal = cal.model_copy(update={"links": None}) if has_links else cal

    def fn(batch: int, context: int, mode: str) -> dict:
        out = {}
        for key, c in (("catalog_links", catalog_cal), ("measured_links", cal if has_links else None)):
            if key == "measured_links" and not has_links:
                continue
            a = analyze_llm(llm, hw, tp=tp, batch=batch, context=context, mode=mode, calibration=c,
                            find_crossover=False, suggest=False)
            out[f"predicted_ms_{key}"] = a.decode.latency_s * 1e3
            out[f"predicted_comm_ms_{key}"] = a.decode.communication_s * 1e3
            out[f"link_{key}"] = a.link
        return out

    return fn, {"hardware": hardware, "calibration": src or "datasheet defaults", "measured_links": has_links}


def start_rank(device_arg: str, tiny: bool) -> tuple[int, int, torch.device]:
    """(rank, tp, device) of this torchrun rank, its process group started (NCCL on GPUs, gloo on CPUs)."""
    rank, tp = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local = int(os.environ.get("LOCAL_RANK", rank))
    if device_arg == "cuda" or (device_arg == "auto" and torch.cuda.is_available() and not tiny):
        torch.cuda.set_device(local)
        device = torch.device("cuda", local)
        dist.init_process_group("nccl", device_id=device)
    else:
        device = torch.device("cpu")
        torch.set_num_threads(max(1, (os.cpu_count() or 2) // tp))
        dist.init_process_group("gloo")
    return rank, tp, device


def slowest(ms: float, device: torch.device) -> float:
    """The largest of every rank's ``ms``."""
    t = torch.tensor([ms], dtype=torch.float64, device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return float(t.item())


def record(result: dict, out: Path, row: dict) -> None:
    """Add a row (rank 0) with its errors against each prediction; rewrite the file and print it."""
    med = row["median_ms"]
    keys = [k for k in ("catalog_links", "measured_links") if f"predicted_ms_{k}" in row]
    for key in keys:
        row[f"error_pct_{key}"] = (row[f"predicted_ms_{key}"] - med) / med * 100
    result["results"].append(row)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    pred = "".join(f"  predicted {row[f'predicted_ms_{k}']:8.3f} ms ({k}, {row[f'error_pct_{k}']:+.1f}%)"
                   for k in keys)
    print(f"tp {result['tp']} decode {row['mode']:6s} batch {row['batch']:3d} context {row['context']:5d}: "
          f"{med:9.3f} ms{pred}", flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, type=Path, help="JSON results file (written by rank 0).")
    ap.add_argument("--tiny", action="store_true", help="A tiny config (smoke test; gloo on the CPU by default).")
    ap.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    add_point_arguments(ap)
    ap.add_argument("--calibration", default=None, help="Calibration file (with links from probe --all-gpus).")
    args = ap.parse_args(argv)
    if "RANK" not in os.environ:
        ap.error("start it with torchrun, e.g. torchrun --standalone --nproc-per-node 2 " + sys.argv[0])
    rank, tp, device = start_rank(args.device, args.tiny)
    cfg = TINY if args.tiny else LLAMA3_8B
    batches, contexts, modes = point_lists(args, tiny_contexts="64")
    modes = [m for m in modes if m != "graph" or device.type == "cuda"] or ["eager"]
    iters = args.iters or (30 if device.type == "cuda" else 5)
    warmup = 5 if device.type == "cuda" else 1

    model = Decoder(cfg, device, tp=tp, rank=rank)
    predict, info = predictions(cfg, tp, args.hardware, args.calibration) if rank == 0 else ((lambda *a: {}), {})
    result = {"command": " ".join([sys.executable, *sys.argv]), "tp": tp,
              "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "environment": {**environment(device), "backend": dist.get_backend(),
                              **{k: os.environ.get(k, "") for k in SAFE_ENV}},
              "config": cfg, "param_bytes_per_rank": model.param_bytes(), "prediction": info, "results": []}

    def capture_failed(exc: RuntimeError) -> None:  # NCCL inside a CUDA graph needs a recent NCCL
        if rank == 0:
            print(f"graph capture failed, skipping graph mode: {str(exc).splitlines()[0]}")

    for b, c, mode, fn in decode_points(model, batches, contexts, modes, device, capture_failed):
        ts = time_runs(fn, device, warmup, iters)
        med = slowest(statistics.median(ts) * 1e3, device)
        if rank == 0:
            record(result, args.out, {"phase": "decode", "mode": mode, "batch": b, "context": c,
                                      "median_ms": med, "min_ms": min(ts) * 1e3, "iters": len(ts),
                                      **predict(b, c, mode)})
        del fn  # before the next point's capture
    if rank == 0:
        args.out.write_text(json.dumps(result, indent=2))
        print(f"wrote {args.out}")
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
