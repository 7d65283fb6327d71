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
import torch.nn.functional as F  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from llm_measure import LLAMA3_8B, TINY, Decoder, environment, graphed, time_runs  # noqa: E402


class TPDecoder(Decoder):
    """One rank's shard of ``Decoder``: heads, KV heads, intermediate and vocabulary divided by ``tp``."""

    def __init__(self, cfg: dict, device: torch.device, tp: int, rank: int, dtype=torch.bfloat16, seed: int = 0):
        h, i, v = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
        heads, kv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
        if heads % tp or kv % tp or i % tp:
            raise SystemExit(f"--tp {tp} does not divide {heads} heads, {kv} KV heads and intermediate {i}")
        g = torch.Generator(device=device).manual_seed(seed + rank)
        self.cfg, self.device, self.dtype, self.tp = cfg, device, dtype, tp
        self.heads, self.kv_heads, self.d = heads // tp, kv // tp, h // heads
        self.eps = cfg["rms_norm_eps"]

        def w(*shape):
            return (torch.randn(*shape, generator=g, device=device, dtype=torch.float32) * 0.02).to(dtype)

        self.embed = w(v, h)                       # replicated (a lookup of batch rows: no collective costed)
        self.layers = []
        for _ in range(cfg["num_hidden_layers"]):
            self.layers.append({
                "ln1": torch.ones(h, device=device, dtype=dtype), "ln2": torch.ones(h, device=device, dtype=dtype),
                "q": w(self.heads * self.d, h), "k": w(self.kv_heads * self.d, h), "v": w(self.kv_heads * self.d, h),
                "o": w(h, self.heads * self.d), "gate": w(i // tp, h), "up": w(i // tp, h), "down": w(h, i // tp)})
        self.norm = torch.ones(h, device=device, dtype=dtype)
        self.lm_head = w(-(-v // tp), h)          # column-parallel output head, logits not gathered
        self.inv_freq = 1.0 / (cfg["rope_theta"] ** (torch.arange(0, self.d, 2, device=device).float() / self.d))
        self.caches = []
        self.gqa_path = ""

    def forward(self, tokens, positions, start: int):
        """As Decoder.forward (decode only), with the two all-reduces per layer."""
        b, s = tokens.shape
        x = F.embedding(tokens, self.embed)
        cos, sin = self.cos_sin(positions)
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
        for layer, (k_cache, v_cache) in zip(self.layers, self.caches, strict=True):
            r = x
            x = self.rms_norm(x, layer["ln1"])
            q = F.linear(x, layer["q"]).view(b, s, self.heads, self.d).transpose(1, 2)
            k = F.linear(x, layer["k"]).view(b, s, self.kv_heads, self.d).transpose(1, 2)
            v = F.linear(x, layer["v"]).view(b, s, self.kv_heads, self.d).transpose(1, 2)
            q, k = self.rope(q, cos, sin), self.rope(k, cos, sin)
            k_cache[:, :, start:start + s] = k
            v_cache[:, :, start:start + s] = v
            qg = q.reshape(b, self.kv_heads, self.heads // self.kv_heads, self.d)
            o = F.scaled_dot_product_attention(qg, k_cache[:, :, :start + 1], v_cache[:, :, :start + 1])
            o = F.linear(o.reshape(b, 1, self.heads * self.d), layer["o"])
            dist.all_reduce(o)
            x = r + o
            r = x
            x = self.rms_norm(x, layer["ln2"])
            x = F.linear(F.silu(F.linear(x, layer["gate"])) * F.linear(x, layer["up"]), layer["down"])
            dist.all_reduce(x)
            x = r + x
        x = self.rms_norm(x, self.norm)
        return F.linear(x[:, -1:, :], self.lm_head)


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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, type=Path, help="JSON results file (written by rank 0).")
    ap.add_argument("--tiny", action="store_true", help="A tiny config (smoke test; gloo on the CPU by default).")
    ap.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    ap.add_argument("--batches", default=None, help="Decode batches, e.g. 1,4,16,64.")
    ap.add_argument("--contexts", default=None, help="Decode contexts, e.g. 1024,4096.")
    ap.add_argument("--modes", default="graph,eager", help="graph and/or eager (graph: GPU only).")
    ap.add_argument("--iters", type=int, default=None, help="Timed runs per point (default 30 GPU, 5 CPU).")
    ap.add_argument("--hardware", default="h200-sxm", help="Catalog id to predict on.")
    ap.add_argument("--calibration", default=None, help="Calibration file (with links from probe --all-gpus).")
    args = ap.parse_args(argv)

    if "RANK" not in os.environ:
        ap.error("start it with torchrun, e.g. torchrun --standalone --nproc-per-node 2 " + sys.argv[0])
    rank, tp = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local = int(os.environ.get("LOCAL_RANK", rank))
    use_cuda = args.device == "cuda" or (args.device == "auto" and torch.cuda.is_available() and not args.tiny)
    if use_cuda:
        torch.cuda.set_device(local)
        device = torch.device("cuda", local)
        dist.init_process_group("nccl", device_id=device)
    else:
        device = torch.device("cpu")
        torch.set_num_threads(max(1, (os.cpu_count() or 2) // tp))
        dist.init_process_group("gloo")
    cfg = TINY if args.tiny else LLAMA3_8B
    batches = [int(x) for x in (args.batches or ("1,4" if args.tiny else "1,4,16,64")).split(",")]
    contexts = [int(x) for x in (args.contexts or ("64" if args.tiny else "1024,4096")).split(",")]
    modes = [m for m in args.modes.split(",") if m and (m != "graph" or device.type == "cuda")] or ["eager"]
    iters = args.iters or (30 if device.type == "cuda" else 5)
    warmup = 5 if device.type == "cuda" else 1

    model = TPDecoder(cfg, device, tp, rank)
    predict, info = predictions(cfg, tp, args.hardware, args.calibration) if rank == 0 else ((lambda *a: {}), {})
    result = {"command": " ".join([sys.executable, *sys.argv]), "tp": tp,
              "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "environment": {**environment(device), "backend": dist.get_backend(),
                              **{k: os.environ.get(k, "") for k in SAFE_ENV}},
              "config": cfg, "param_bytes_per_rank": model.param_bytes(), "prediction": info, "results": []}

    def slowest(ms: float) -> float:
        t = torch.tensor([ms], dtype=torch.float64, device=device)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return float(t.item())

    for b in batches:
        model.allocate_cache(b, max(contexts) + 1)
        tokens = torch.randint(0, cfg["vocab_size"], (b, 1), device=device)
        for c in contexts:
            positions = torch.full((b, 1), c, device=device, dtype=torch.long)

            def step(tokens=tokens, positions=positions, c=c):
                return model.forward(tokens, positions, c)

            with torch.inference_mode():
                for mode in modes:
                    try:
                        fn = graphed(step, device) if mode == "graph" else step
                    except RuntimeError as exc:  # NCCL inside a CUDA graph needs a recent NCCL
                        if rank == 0:
                            print(f"graph capture failed, skipping graph mode: {str(exc).splitlines()[0]}")
                        continue
                    ts = time_runs(fn, device, warmup, iters)
                    med = slowest(statistics.median(ts) * 1e3)
                    if rank == 0:
                        row = {"phase": "decode", "mode": mode, "batch": b, "context": c, "median_ms": med,
                               "min_ms": min(ts) * 1e3, "iters": len(ts), **predict(b, c, mode)}
                        for key in ("catalog_links", "measured_links"):
                            if f"predicted_ms_{key}" in row:
                                row[f"error_pct_{key}"] = (row[f"predicted_ms_{key}"] - med) / med * 100
                        result["results"].append(row)
                        args.out.parent.mkdir(parents=True, exist_ok=True)
                        args.out.write_text(json.dumps(result, indent=2))
                        pred = "".join(f"  predicted {row[f'predicted_ms_{k}']:8.3f} ms ({k}, "
                                       f"{row[f'error_pct_{k}']:+.1f}%)" for k in ("catalog_links", "measured_links")
                                       if f"predicted_ms_{k}" in row)
                        print(f"tp {tp} decode {mode:6s} batch {b:3d} context {c:5d}: {med:9.3f} ms{pred}",
                              flush=True)
                    del fn
        model.caches = []
        if device.type == "cuda":
            torch.cuda.empty_cache()
    if rank == 0:
        args.out.write_text(json.dumps(result, indent=2))
        print(f"wrote {args.out}")
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
