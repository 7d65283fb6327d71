"""Measure a LLaMA-3-8B-shaped decoder in plain PyTorch and compare with ``tops-advisor llm``'s predictions.

Random bf16 weights, a static KV cache, the operators exactly as Hugging Face's eager LLaMA runs them (the
``torch`` kernel layout of ``tops_advisor.llm.builder``): RMSNorm as 8 kernels, separate q/k/v linears,
rotate-half rotary embedding, slice-assign cache writes, ``F.scaled_dot_product_attention`` (decode: the
query heads of each KV head packed as its query rows; prefill: causal with ``enable_gqa``), gated SiLU MLP,
the LM head on the last token only.

Measured: decode steps at batch x context (default 1,4,16,64 x 1024,4096), each replayed as a CUDA graph
(and eagerly), and a prefill (default 2048 tokens, batch 1). CUDA events, warm-up, the median of the runs.
Results go to --out as JSON with the command, versions and device; each row carries the prediction for the
same shape when ``tops_advisor`` is importable.

    python benchmarks/harness/llm_measure.py --out results/llm_h200.json              # on the GPU (~3-5 minutes)
    python benchmarks/harness/llm_measure.py --tiny --out /tmp/llm_tiny.json          # CPU smoke test, seconds
    python benchmarks/harness/llm_measure.py --tiny --device cuda --out /tmp/t.json   # GPU smoke test (graphs too)
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import socket
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn.functional as F

LLAMA3_8B = {"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32,
             "num_hidden_layers": 32, "num_key_value_heads": 8, "max_position_embeddings": 8192,
             "vocab_size": 128256, "rope_theta": 500000.0, "rms_norm_eps": 1e-5}
TINY = {"model_type": "llama", "hidden_size": 256, "intermediate_size": 512, "num_attention_heads": 8,
        "num_hidden_layers": 2, "num_key_value_heads": 2, "max_position_embeddings": 1024, "vocab_size": 1000,
        "rope_theta": 10000.0, "rms_norm_eps": 1e-5}


# --- the model, as plain tensors --------------------------------------------------------------------------
class Decoder:
    """The decoder as plain tensors. ``tp`` > 1: one rank's shard, split the Megatron way as
    ``tops_advisor.llm.parallel`` costs it (1/tp of the query and KV heads, of the MLP intermediate size
    and of the output head's vocabulary; the embedding replicated, the logits not gathered), with one
    all-reduce after the attention output projection and one after the MLP down projection
    (``llm_tp_measure.py``)."""

    def __init__(self, cfg: dict, device: torch.device, dtype=torch.bfloat16, seed: int = 0, tp: int = 1,
                 rank: int = 0):
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

        self.embed = w(v, h)
        self.layers = []
        for _ in range(cfg["num_hidden_layers"]):
            self.layers.append({
                "ln1": torch.ones(h, device=device, dtype=dtype), "ln2": torch.ones(h, device=device, dtype=dtype),
                "q": w(self.heads * self.d, h), "k": w(self.kv_heads * self.d, h), "v": w(self.kv_heads * self.d, h),
                "o": w(h, self.heads * self.d), "gate": w(i // tp, h), "up": w(i // tp, h), "down": w(h, i // tp)})
        self.norm = torch.ones(h, device=device, dtype=dtype)
        self.lm_head = w(-(-v // tp), h)  # column-parallel output head
        self.inv_freq = 1.0 / (cfg["rope_theta"] ** (torch.arange(0, self.d, 2, device=device).float() / self.d))
        self.caches: list[tuple[torch.Tensor, torch.Tensor]] = []
        self.gqa_path = ""

    def param_bytes(self) -> int:
        n = self.embed.numel() + self.lm_head.numel() + self.norm.numel()
        n += sum(t.numel() for layer in self.layers for t in layer.values())
        return n * self.embed.element_size()

    def allocate_cache(self, batch: int, tokens: int) -> None:
        self.caches = []
        for _ in self.layers:
            shape = (batch, self.kv_heads, tokens, self.d)
            self.caches.append((torch.zeros(shape, device=self.device, dtype=self.dtype),
                                torch.zeros(shape, device=self.device, dtype=self.dtype)))

    def rms_norm(self, x, weight):
        dtype = x.dtype
        x = x.to(torch.float32)
        var = x.pow(2).mean(-1, keepdim=True)
        x = x * torch.rsqrt(var + self.eps)
        return weight * x.to(dtype)

    def cos_sin(self, positions):  # positions: (B, S) int64
        freqs = (self.inv_freq[None, :, None].expand(positions.shape[0], -1, 1) @ positions[:, None, :].float())
        emb = torch.cat((freqs.transpose(1, 2), freqs.transpose(1, 2)), dim=-1)
        return emb.cos().to(self.dtype), emb.sin().to(self.dtype)

    @staticmethod
    def rotate_half(x):
        x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
        return torch.cat((-x2, x1), dim=-1)

    def rope(self, x, cos, sin):
        return x * cos + self.rotate_half(x) * sin

    def forward(self, tokens, positions, start: int):
        """tokens (B, S) at positions start..start+S-1; returns the last token's logits."""
        b, s = tokens.shape
        x = F.embedding(tokens, self.embed)
        cos, sin = self.cos_sin(positions)
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
        reduce = self.tp > 1  # the row-parallel products' partial sums
        for layer, (k_cache, v_cache) in zip(self.layers, self.caches, strict=True):
            r = x
            x = self.rms_norm(x, layer["ln1"])
            q = F.linear(x, layer["q"]).view(b, s, self.heads, self.d).transpose(1, 2)
            k = F.linear(x, layer["k"]).view(b, s, self.kv_heads, self.d).transpose(1, 2)
            v = F.linear(x, layer["v"]).view(b, s, self.kv_heads, self.d).transpose(1, 2)
            q, k = self.rope(q, cos, sin), self.rope(k, cos, sin)
            k_cache[:, :, start:start + s] = k
            v_cache[:, :, start:start + s] = v
            if s == 1:  # decode: the query heads of one KV head become that head's query rows
                qg = q.reshape(b, self.kv_heads, self.heads // self.kv_heads, self.d)
                o = F.scaled_dot_product_attention(qg, k_cache[:, :, :start + 1], v_cache[:, :, :start + 1])
                o = o.reshape(b, 1, self.heads * self.d)
            else:
                o = self._causal(q, k, v).transpose(1, 2).reshape(b, s, self.heads * self.d)
            o = F.linear(o, layer["o"])
            if reduce:
                dist.all_reduce(o)
            x = r + o
            r = x
            x = self.rms_norm(x, layer["ln2"])
            x = F.linear(F.silu(F.linear(x, layer["gate"])) * F.linear(x, layer["up"]), layer["down"])
            if reduce:
                dist.all_reduce(x)
            x = r + x
        x = self.rms_norm(x, self.norm)
        return F.linear(x[:, -1:, :], self.lm_head)

    def _causal(self, q, k, v):
        if self.gqa_path != "repeat_kv":
            try:
                out = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
                self.gqa_path = "enable_gqa"
                return out
            except (TypeError, RuntimeError):
                self.gqa_path = "repeat_kv"
        rep = self.heads // self.kv_heads
        return F.scaled_dot_product_attention(q, k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1),
                                              is_causal=True)


# --- timing -----------------------------------------------------------------------------------------------
def time_runs(fn, device: torch.device, warmup: int, iters: int) -> list[float]:
    """Seconds per call: CUDA events around each call on a GPU, perf_counter on the CPU."""
    for _ in range(warmup):
        fn()
    out = []
    if device.type == "cuda":
        torch.cuda.synchronize()
        for _ in range(iters):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            out.append(start.elapsed_time(end) / 1e3)
    else:
        for _ in range(iters):
            t0 = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t0)
    return out


def graphed(fn, device: torch.device):
    """Capture fn in a CUDA graph (after warm-up on a side stream); returns the replay function."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    return g.replay


# --- predictions ------------------------------------------------------------------------------------------
class Predictor:
    """Predictions from tops_advisor for the same shapes (None when it is not importable)."""

    def __init__(self, cfg: dict, hardware: str | None, calibration: str | None):
        self.ok, self.note = False, ""
        try:
            from tops_advisor.api import calibration_for
            from tops_advisor.catalog import load_catalog
            from tops_advisor.llm import build_workload, config_from_dict
            from tops_advisor.roofline import device_perf, predict
        except Exception as exc:  # noqa: BLE001 - the benchmark runs without tops_advisor too
            self.note = f"tops_advisor not importable: {exc}"
            return
        try:
            self.hw = load_catalog().get(hardware)
            cal, src = calibration_for(self.hw, calibration)
            self.perf = device_perf(self.hw, cal, src)
            self.calibration = src or "datasheet defaults"
        except Exception as exc:  # noqa: BLE001
            self.note = f"no prediction: {exc}"
            return
        self.cfg = config_from_dict(cfg, name="llama3-8b-shaped" if cfg["hidden_size"] == 4096 else "tiny")
        self.build, self.predict, self.ok = build_workload, predict, True

    def __call__(self, phase: str, batch: int, context: int, mode: str) -> dict:
        if not self.ok:
            return {}
        w = self.build(self.cfg, phase=phase, batch=batch, context=context)
        p = self.predict(w, self.hw, mode=mode, perf=self.perf)
        return {"predicted_ms": p.latency_s * 1e3, "predicted_bound": p.bound, "kernels": w.kernels,
                "flops": w.flops, "bytes": w.bytes}


# --- the measured points -------------------------------------------------------------------------------
def decode_points(model: Decoder, batches: list[int], contexts: list[int], modes: list[str],
                  device: torch.device, on_capture_error=None):
    """Yield (batch, context, mode, fn) under inference mode: fn runs one decode step of ``model`` at that
    point, replayed as a CUDA graph (mode ``graph``) or called eagerly. The cache is allocated per batch, for
    the longest context. ``on_capture_error(exc)``: where given, a graph capture that raises a RuntimeError is
    reported to it and the point skipped."""
    for b in batches:
        model.allocate_cache(b, max(contexts) + 1)
        tokens = torch.randint(0, model.cfg["vocab_size"], (b, 1), device=device)
        for c in contexts:
            positions = torch.full((b, 1), c, device=device, dtype=torch.long)

            def step(tokens=tokens, positions=positions, c=c):
                return model.forward(tokens, positions, c)

            with torch.inference_mode():
                for mode in modes:
                    try:
                        fn = graphed(step, device) if mode == "graph" else step
                    except RuntimeError as exc:
                        if on_capture_error is None:
                            raise
                        on_capture_error(exc)
                        continue
                    yield b, c, mode, fn
                    del fn
        model.caches = []
        if device.type == "cuda":
            torch.cuda.empty_cache()


def point_lists(args: argparse.Namespace,
                tiny_contexts: str = "64,128") -> tuple[list[int], list[int], list[str]]:
    """Decode batches, contexts and modes from --batches, --contexts and --modes, or their defaults (--tiny's
    smaller ones)."""
    batches = [int(x) for x in (args.batches or ("1,4" if args.tiny else "1,4,16,64")).split(",")]
    contexts = [int(x) for x in (args.contexts or (tiny_contexts if args.tiny else "1024,4096")).split(",")]
    return batches, contexts, [m for m in args.modes.split(",") if m]


def add_point_arguments(ap: argparse.ArgumentParser) -> None:
    """The options both measuring scripts take: the points, the runs and the prediction's device."""
    ap.add_argument("--batches", default=None, help="Decode batches, e.g. 1,4,16,64.")
    ap.add_argument("--contexts", default=None, help="Decode contexts, e.g. 1024,4096.")
    ap.add_argument("--modes", default="graph,eager", help="graph and/or eager (graph: GPU only).")
    ap.add_argument("--iters", type=int, default=None, help="Timed runs per point (default 30 GPU, 5 CPU).")
    ap.add_argument("--hardware", default="h200-sxm", help="Catalog id to predict on (default h200-sxm).")


def stats(ts: list[float]) -> dict:
    """Median, best and 90th percentile of per-call seconds, in ms."""
    ts = sorted(ts)
    return {"median_ms": statistics.median(ts) * 1e3, "min_ms": ts[0] * 1e3,
            "p90_ms": ts[min(len(ts) - 1, math.ceil(0.9 * len(ts)) - 1)] * 1e3, "iters": len(ts)}


def environment(device: torch.device) -> dict:
    env = {"python": platform.python_version(), "torch": torch.__version__, "host": socket.gethostname(),
           "platform": platform.platform(), "device": str(device)}
    if device.type == "cuda":
        env.update(gpu=torch.cuda.get_device_name(device), cuda=torch.version.cuda or "",
                   cudnn=str(torch.backends.cudnn.version()), sm_count=str(
                       torch.cuda.get_device_properties(device).multi_processor_count))
    else:
        env.update(cpu=platform.processor() or platform.machine(), threads=str(torch.get_num_threads()))
    return env


class Results:
    """The results document: each measured row gets its prediction, and the file is rewritten after each."""

    def __init__(self, out: Path, doc: dict, predictor: Predictor):
        self.out, self.doc, self.predictor = out, doc, predictor
        out.parent.mkdir(parents=True, exist_ok=True)

    def write(self) -> None:
        self.out.write_text(json.dumps(self.doc, indent=2))

    def record(self, row: dict) -> None:
        pred = self.predictor(row["phase"], row["batch"], row["context"], row["mode"])
        row.update(pred)
        if pred:
            row["error_pct"] = (pred["predicted_ms"] - row["median_ms"]) / row["median_ms"] * 100
        self.doc["results"].append(row)
        self.write()
        p = f"  predicted {row['predicted_ms']:9.3f} ms ({row['error_pct']:+6.1f}%, {row['predicted_bound']})" \
            if pred else ""
        print(f"{row['phase']:8s} {row['mode']:6s} batch {row['batch']:3d} context {row['context']:5d}: "
              f"{row['median_ms']:9.3f} ms{p}", flush=True)

    def summarise(self) -> None:
        errors = [abs(r["error_pct"]) for r in self.doc["results"] if "error_pct" in r]
        if errors:
            self.doc["median_abs_error_pct"] = statistics.median(errors)
            self.write()
            print(f"median |error| {statistics.median(errors):.1f}% over {len(errors)} points")


# --- main -------------------------------------------------------------------------------------------------
def parse_args(argv: list[str] | None) -> tuple[argparse.Namespace, torch.device]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, type=Path, help="JSON results file.")
    ap.add_argument("--tiny", action="store_true", help="A tiny config (smoke test; on the CPU by default).")
    ap.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                    help="auto: cuda when available, except with --tiny (cpu).")
    add_point_arguments(ap)
    ap.add_argument("--prefill", type=int, default=None, help="Prefill length at batch 1 (default 2048).")
    ap.add_argument("--calibration", default=None, help="Calibration file for the prediction.")
    args = ap.parse_args(argv)
    if args.device == "auto":
        return args, torch.device("cuda" if torch.cuda.is_available() and not args.tiny else "cpu")
    if args.device == "cuda" and not torch.cuda.is_available():
        ap.error("--device cuda: no CUDA device is available")
    return args, torch.device(args.device)


def measure_prefill(model: Decoder, length: int, modes: list[str], device: torch.device, warmup: int,
                    iters: int, results: Results) -> None:
    """One prefill of ``length`` tokens at batch 1, in each mode."""
    model.allocate_cache(1, length)
    tokens = torch.randint(0, model.cfg["vocab_size"], (1, length), device=device)
    positions = torch.arange(length, device=device)[None, :]

    def prefill_fn():
        return model.forward(tokens, positions, 0)

    with torch.inference_mode():
        for mode in modes:
            fn = graphed(prefill_fn, device) if mode == "graph" else prefill_fn
            results.record({"phase": "prefill", "mode": mode, "batch": 1, "context": length,
                            **stats(time_runs(fn, device, warmup, iters))})


def main(argv: list[str] | None = None) -> int:
    args, device = parse_args(argv)
    cfg = TINY if args.tiny else LLAMA3_8B
    batches, contexts, modes = point_lists(args)
    prefill = args.prefill or (128 if args.tiny else 2048)
    if device.type != "cuda" and "graph" in modes:
        modes = [m for m in modes if m != "graph"] or ["eager"]
    iters = args.iters or (30 if device.type == "cuda" else 5)
    warmup = 5 if device.type == "cuda" else 1

    torch.manual_seed(0)
    model = Decoder(cfg, device)
    predictor = Predictor(cfg, args.hardware, args.calibration)
    results = Results(args.out, {
        "command": " ".join([sys.executable, *sys.argv]),
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "environment": environment(device), "config": cfg, "param_bytes": model.param_bytes(),
        "prediction_hardware": args.hardware if predictor.ok else None,
        "prediction_calibration": getattr(predictor, "calibration", None), "prediction_note": predictor.note,
        "results": []}, predictor)
    env = results.doc["environment"]
    print(f"{env.get('gpu', env['device'])}: {model.param_bytes() / 1e9:.2f} GB of weights; predictions on "
          f"{args.hardware if predictor.ok else '(none: ' + predictor.note + ')'}", flush=True)
    try:
        for b, c, mode, fn in decode_points(model, batches, contexts, modes, device):
            results.record({"phase": "decode", "mode": mode, "batch": b, "context": c,
                            **stats(time_runs(fn, device, warmup, iters))})
            del fn  # before the next point's capture
        measure_prefill(model, prefill, modes, device, warmup, max(5, iters // 3), results)
        results.doc["prefill_gqa_path"] = model.gqa_path
    except KeyboardInterrupt:
        print("interrupted: the results so far are in", args.out, file=sys.stderr)
    finally:
        results.write()
    results.summarise()
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    sys.exit(main())
