"""Check the source article's results and selection guide with tops-advisor; write docs/reports/article-check.md.

Every number in the document comes from the tool (the shipped catalog, the shipped calibrations, the model
files in examples/, the LLM presets) or from a measurement recorded in benchmarks/results/ on an H200. It
needs no GPU, so CI can check that the committed document is current:

    python3 benchmarks/reports/article_check.py                               # print the document
    python3 benchmarks/reports/article_check.py --write docs/reports/article-check.md  # regenerate it
    python3 benchmarks/reports/article_check.py --check docs/reports/article-check.md  # exit 1 if it is stale

Predictions use the shipped catalog and the shipped calibrations only (a calibration the user saved with
``tops-advisor probe`` must not leak into a committed document). Counting the five models takes a few
seconds.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

from tops_advisor.api import ModelCosts, predict
from tops_advisor.calibration import (
    Calibration,
    calibration_filename,
    load_calibration,
    shipped_calibration_dir,
)
from tops_advisor.catalog import Catalog, Hardware, shipped_catalog_dir
from tops_advisor.errors import TopsAdvisorError
from tops_advisor.llm import analyze_llm, make_precision
from tops_advisor.llm.presets import preset_config
from tops_advisor.recommend import Constraints, NothingFeasibleError, plan_llm, recommend
from tops_advisor.roofline import Prediction
from tops_advisor.workload import Workload

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))

import article_table  # noqa: E402  (the key-parameter and TOPS/W tables, reused)

# The cards the article names, as catalog ids ("A100 80GB": the SXM4 card), plus the H200 we measure on.
ARTICLE_CARDS = ("rtx-3090", "rtx-3090-ti", "rtx-4090", "a100-sxm4-80gb", "jetson-agx-orin-64gb", "h100-sxm")
MEASURED_CARD = "h200-sxm"
CARDS = ARTICLE_CARDS + (MEASURED_CARD,)
RESULTS = REPO / "benchmarks" / "results"
MODELS_RESULTS = RESULTS / "h200_models.json"
ARTICLE_RESULTS = RESULTS / "h200_article.json"
SD_STEPS = 50

# the model files: (file, environment the file reads when loaded)
MODELS: dict[str, tuple[str, dict[str, str]]] = {
    "resnet50": ("examples/resnet50.py", {}),
    "bert_large": ("examples/bert_large.py", {}),
    "yolov7_1080p": ("examples/yolov7.py", {"YOLOV7_INPUT": "1080p"}),
    "yolov7_640lb": ("examples/yolov7.py", {"YOLOV7_INPUT": "640-letterbox"}),
    "yolov7_640": ("examples/yolov7.py", {"YOLOV7_INPUT": "640"}),
    "sd_unet": ("examples/sd_unet.py", {}),
}


@contextlib.contextmanager
def _environ(env: dict[str, str]) -> Iterator[None]:
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


class Costs:
    """``ModelCosts`` of a model file loaded with ``env`` set (YOLOv7 reads its input size from it)."""

    def __init__(self, path: str, env: dict[str, str] | None = None, strict: bool = False):
        self.path, self.env = path, dict(env or {})
        with _environ(self.env):
            self._costs = ModelCosts(REPO / path, strict=strict)

    @property
    def unsupported_ops(self) -> dict[str, int]:
        return self._costs.unsupported_ops

    def at(self, batch: int, dtype: str) -> Workload:
        with _environ(self.env):
            return self._costs.at(batch, dtype)


def count_models(names: tuple[str, ...] = tuple(MODELS), known: dict[str, Costs] | None = None) -> dict[str, Costs]:
    """Count each model once (``known``: already counted, e.g. by a test fixture)."""
    out = dict(known or {})
    for name in names:
        if name not in out:
            path, env = MODELS[name]
            out[name] = Costs(path, env)
    return out


def shipped_calibration(hw: Hardware) -> tuple[Calibration | None, str]:
    path = shipped_calibration_dir() / calibration_filename(hw.id)
    if path.is_file():
        return load_calibration(path), f"shipped {path.name}"
    return None, ""


class Checker:
    def __init__(self, catalog: Catalog, costs: dict[str, Costs]):
        self.catalog, self.costs = catalog, costs
        self._cal = {i: shipped_calibration(catalog.get(i)) for i in CARDS}

    def hw(self, hw_id: str) -> Hardware:
        return self.catalog.get(hw_id)

    def predict(self, model: str, hw_id: str, batch: int, dtype: str, mode: str = "graph") -> Prediction:
        cal, source = self._cal.get(hw_id) or shipped_calibration(self.hw(hw_id))
        return predict(self.costs[model].at(batch, dtype), self.hw(hw_id), cal, mode=mode,
                       calibration_source=source)


# ---------------------------------------------------------------------------------------------- rendering

def table(header: list[str], rows: list[list[str]]) -> str:
    return article_table.table(header, rows)


def ms(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    v = seconds * 1e3
    return f"{v:.3g}" if v < 100 else f"{v:,.0f}"


def rate(x: float | None) -> str:
    if x is None:
        return "–"
    return f"{x:,.0f}" if x >= 100 else f"{x:.3g}"


def card_name(c: Checker, hw_id: str) -> str:
    return c.hw(hw_id).name + (" (measured: below)" if hw_id == MEASURED_CARD else "")


def h200_error(c: Checker, runs: list[dict], model: str, file: str, batch: int, input_size: str = "",
               mode: str = "graph") -> float | None:
    """Measured / predicted latency on the H200 at fp16 (how optimistic the tool was there), if measured."""
    r = measured(runs, file, batch, "fp16", input_size)
    if not r or r.get(f"{mode}_s") is None:
        return None
    return r[f"{mode}_s"] / c.predict(model, MEASURED_CARD, batch, "fp16", mode).latency_s


def load_measurements() -> list[dict]:
    """Runs from the H200 result files, each tagged with its model file, input size and the file it came from."""
    runs = []
    for path in (MODELS_RESULTS, ARTICLE_RESULTS):
        if not path.is_file():
            continue
        data = json.loads(path.read_text(encoding="utf-8"))
        for r in data["runs"]:
            if r.get("graph_s") is None and r.get("eager_s") is None:
                continue
            runs.append({**r, "input": r.get("input", ""), "file": path.relative_to(REPO).as_posix()})
    return runs


def measured(runs: list[dict], model: str, batch: int, dtype: str, input_size: str = "") -> dict | None:
    for r in runs:
        if r["model"] == model and r["batch"] == batch and r["dtype"] == dtype and r["input"] == input_size:
            return r
    return None


def commands_of(path: Path) -> list[str]:
    if not path.is_file():
        return []
    env = json.loads(path.read_text(encoding="utf-8"))["environment"]
    cmds = env.get("commands") or [env.get("command", "")]
    return [c.replace("/root/out/", "$OUT/") for c in cmds if c]


# ------------------------------------------------------------------------------------------------ claims

def claim_resnet(c: Checker, runs: list[dict]) -> tuple[str, str]:
    rows, ratios = [], {}
    for dtype in ("fp32", "fp16", "int8"):
        p3, p4 = c.predict("resnet50", "rtx-3090", 32, dtype), c.predict("resnet50", "rtx-4090", 32, dtype)
        ratios[dtype] = p3.latency_s / p4.latency_s
        rows.append([dtype, ms(p3.latency_s), rate(p3.throughput_per_s), p3.bound, ms(p4.latency_s),
                     rate(p4.throughput_per_s), p4.bound, f"{ratios[dtype]:.2f}x"])
    h3, h4 = c.hw("rtx-3090"), c.hw("rtx-4090")
    peak = h4.dense_tops["fp16"] / h3.dense_tops["fp16"]
    bw = h4.memory_bandwidth_gb_s / h3.memory_bandwidth_gb_s
    body = [
        "Command: `tops-advisor analyze examples/resnet50.py -H rtx-3090 -b 32 --dtype fp16` (and `-H rtx-4090`, "
        "other dtypes); graph mode, datasheet defaults (no calibration for these cards).",
        "",
        table(["dtype", "RTX 3090 latency (ms)", "img/s", "bound", "RTX 4090 latency (ms)", "img/s", "bound",
               "4090 / 3090"], rows),
        "",
        f"Datasheet ratios, 4090 / 3090: FP16 tensor dense (FP32 accumulate) {h4.dense_tops['fp16']:g} / "
        f"{h3.dense_tops['fp16']:g} = {peak:.2f}x; memory bandwidth {h4.memory_bandwidth_gb_s:g} / "
        f"{h3.memory_bandwidth_gb_s:g} = {bw:.2f}x. A speed-up is bounded by these two: all-compute gives "
        f"{peak:.2f}x, all-memory {bw:.2f}x.",
    ]
    lo, hi = min(ratios.values()), max(ratios.values())
    holds = lo <= 2.1 * 1.1 and hi >= 2.1 * 0.9
    verdict = (f"holds (predicted {lo:.2f}x to {hi:.2f}x)" if holds else
               f"not reproduced: predicted {lo:.2f}x to {hi:.2f}x; 2.1x lies between the bandwidth ratio "
               f"({bw:.2f}x) and the tensor-peak ratio ({peak:.2f}x), so it needs the run to be almost all "
               "tensor compute (a fused engine such as TensorRT, BN folded); depends on precision and engine, "
               "which the article does not state")
    r = measured(runs, "examples/resnet50.py", 32, "fp16")
    if r:
        p = c.predict("resnet50", MEASURED_CARD, 32, "fp16")
        body += ["", f"Sanity on the H200 (`{r['file']}`): batch 32 fp16 graph measured {ms(r['graph_s'])} ms, "
                 f"predicted {ms(p.latency_s)} ms."]
    return "\n".join(body), verdict


def _bert_throughput(c: Checker, runs: list[dict]) -> tuple[list[str], str]:
    """Predicted samples/s per card at fp32/fp16 and batch 1/32, the H200's measured ones, and the verdict on
    "580 samples/s"."""
    rows = []
    tput = {}
    for hw_id in CARDS:
        row = [card_name(c, hw_id)]
        for dtype in ("fp32", "fp16"):
            for batch in (1, 32):
                p = c.predict("bert_large", hw_id, batch, dtype)
                tput[(hw_id, dtype, batch)] = p.throughput_per_s
                row.append(rate(p.throughput_per_s))
        rows.append(row)
    body = [
        "BERT-Large, sequence 128 (the article gives no sequence length; `examples/bert_large.py`), graph mode. "
        "Command: `tops-advisor analyze examples/bert_large.py -H rtx-4090 -b 32 --dtype fp16`.",
        "",
        table(["Device", "fp32 b1 (samples/s)", "fp32 b32", "fp16 b1", "fp16 b32"], rows),
    ]
    meas = [(d, b, measured(runs, "examples/bert_large.py", b, d)) for d in ("fp32", "fp16") for b in (1, 32)]
    meas = [(d, b, r) for d, b, r in meas if r]
    if meas:
        body += ["", "Measured on the H200 (`benchmarks/results/h200_models.json`, graph replay): "
                 + "; ".join(f"{d} batch {b}: {rate(b / r['graph_s'])} samples/s" for d, b, r in meas) + "."]
    near = [f"{c.hw(h).name} {d} batch {b} ({rate(v)})" for (h, d, b), v in tput.items()
            if h in ARTICLE_CARDS and 0.8 * 580 <= v <= 1.25 * 580]
    m32 = measured(runs, "examples/bert_large.py", 32, "fp32")
    verdict = ("depends on precision, batch and sequence length, none stated. Within -20%/+25% of 580 "
               "samples/s (sequence 128) the tool predicts: " + ("; ".join(near) or "no card") + "."
               + (f" Measured on the H200 at fp32 batch 32: {rate(32 / m32['graph_s'])} samples/s."
                  if m32 else "")
               + f" At fp16 batch 32 an RTX 4090 is predicted at {rate(tput[('rtx-4090', 'fp16', 32)])}")
    return body, verdict


def _bert_tensorrt(c: Checker, runs: list[dict]) -> tuple[list[str], str]:
    """TensorRT's "15 ms to 7 ms": what a 15 ms eager fp32 run and the same batch at fp16 in a graph give."""
    hw_id, rows = "rtx-4090", []
    for batch in (1, 2, 4, 8, 16):
        e32 = c.predict("bert_large", hw_id, batch, "fp32", "eager")
        g16 = c.predict("bert_large", hw_id, batch, "fp16", "graph")
        e16 = c.predict("bert_large", hw_id, batch, "fp16", "eager")
        rows.append([str(batch), ms(e32.latency_s), ms(e16.latency_s), ms(g16.latency_s),
                     f"{e32.latency_s / g16.latency_s:.1f}x"])
    header = ["batch", "fp32 eager (ms)", "fp16 eager (ms)", "fp16 graph (ms)", "fp32 eager / fp16 graph"]
    body = [
        "",
        "**TensorRT, \"15 ms to 7 ms\".** The tool does not model TensorRT; what it does model are two of the "
        "things TensorRT does: lower precision and no per-operator launch cost (a CUDA graph). BERT-Large on an "
        "RTX 4090, `--mode eager` vs `--mode graph`:",
        "",
        table(header, rows),
    ]
    meas = []
    for batch in (1, 8, 32):
        r32, r16 = (measured(runs, "examples/bert_large.py", batch, d) for d in ("fp32", "fp16"))
        if r32 and r16:
            meas.append([str(batch), ms(r32["eager_s"]), ms(r16["eager_s"]), ms(r16["graph_s"]),
                         f"{r32['eager_s'] / r16['graph_s']:.1f}x"])
    if meas:
        body += ["", "Measured on the H200 (`benchmarks/results/h200_models.json`):", "", table(header, meas)]
    verdict = ("depends on things the article does not say (batch, sequence length, the precision before "
               "and after): a 2.1x cut is well within what fp32 to fp16 plus removing launch overhead gives "
               "in the tool and on the H200; TensorRT's own kernel fusion is not modelled")
    return body, verdict


def claim_bert(c: Checker, runs: list[dict]) -> tuple[str, str, str]:
    body, verdict_580 = _bert_throughput(c, runs)
    trt, verdict_trt = _bert_tensorrt(c, runs)
    return "\n".join(body + trt), verdict_580, verdict_trt


def _yolo_measured(c: Checker, runs: list[dict]) -> list[str]:
    """The H200's measured FPS beside the predicted ones, per input size (nothing where none was measured)."""
    meas = []
    for size, model in (("1080p", "yolov7_1080p"), ("640-letterbox", "yolov7_640lb"), ("640", "yolov7_640")):
        r = measured(runs, "examples/yolov7.py", 1, "fp16", size)
        if r:
            pe = c.predict(model, MEASURED_CARD, 1, "fp16", "eager")
            pg = c.predict(model, MEASURED_CARD, 1, "fp16", "graph")
            meas.append([size, rate(1 / r["eager_s"]), rate(pe.throughput_per_s), rate(1 / r["graph_s"]),
                         rate(pg.throughput_per_s)])
    if not meas:
        return []
    return ["", "H200, batch 1 fp16, measured (`benchmarks/results/h200_article.json`) vs predicted:", "",
            table(["input", "eager measured (FPS)", "eager predicted", "graph measured", "graph predicted"], meas)]


def _yolo_cards_at_65(c: Checker, runs: list[dict], fps: dict, model: str, size: str) -> str:
    """The article's cards predicted at 65 FPS or more (fp16 graph), the borderline ones apart: those above 65
    only if the H200's optimism for this input is ignored."""
    err = max(h200_error(c, runs, model, "examples/yolov7.py", 1, size) or 1.0, 1.0)
    ok, edge = [], []
    for h in ARTICLE_CARDS:
        f = fps[(h, model, "fp16", "graph")]
        if f / err >= 65:
            ok.append(f"{c.hw(h).name} ({rate(f)})")
        elif f >= 65:
            edge.append(f"{c.hw(h).name} ({rate(f)})")
    text = ", ".join(ok) or "none of the cards"
    if edge:
        text += (f"; borderline on {', '.join(edge)} (the tool was {err:.2f}x optimistic for this input on "
                 "the H200)")
    return text


def claim_yolo(c: Checker, runs: list[dict]) -> tuple[str, str]:
    rows, fps = [], {}
    for hw_id in CARDS:
        row = [card_name(c, hw_id)]
        for model in ("yolov7_1080p", "yolov7_640lb"):
            for dtype, mode in (("fp16", "eager"), ("fp16", "graph"), ("int8", "graph")):
                p = c.predict(model, hw_id, 1, dtype, mode)
                fps[(hw_id, model, dtype, mode)] = p.throughput_per_s
                row.append(rate(p.throughput_per_s))
        rows.append(row)
    w = c.costs["yolov7_1080p"].at(1, "fp16")
    w640 = c.costs["yolov7_640"].at(1, "fp16")
    body = [
        "YOLOv7 (`examples/yolov7.py`), batch 1 (one video stream), frames per second = 1 / latency. Two ways to "
        "run \"1080p\": the frame at native resolution letterboxed to 1088x1920 (`YOLOV7_INPUT=1080p`, "
        f"{w.flops / 1e9:,.0f} GFLOPs per frame), or resized to 640 on the long side as `detect.py --img-size "
        f"640` does, 384x640 (`YOLOV7_INPUT=640-letterbox`; 640x640 costs {w640.flops / 1e9:.1f} GFLOPs). "
        "int8 is the fp16 count with 1-byte tensors (the tool's int8 derivation; it needs a calibrated engine "
        "such as TensorRT in practice). Pre- and post-processing (resize, NMS) are not modelled.",
        "",
        "Command: `YOLOV7_INPUT=1080p tops-advisor analyze examples/yolov7.py -H rtx-4090 -b 1 --dtype fp16 "
        "--mode eager`.",
        "",
        table(["Device", "1088x1920 fp16 eager (FPS)", "fp16 graph", "int8 graph", "384x640 fp16 eager",
               "fp16 graph", "int8 graph"], rows),
    ] + _yolo_measured(c, runs)
    m1080 = measured(runs, "examples/yolov7.py", 1, "fp16", "1080p")
    verdict = ("depends on the input size and the card, neither stated. fp16, batch 1, graph: 65 FPS at native "
               f"1088x1920 is predicted on {_yolo_cards_at_65(c, runs, fps, 'yolov7_1080p', '1080p')}; at "
               f"384x640 (resized) on {_yolo_cards_at_65(c, runs, fps, 'yolov7_640lb', '640-letterbox')}"
               + f". On the RTX 4090 at 1088x1920: {rate(fps[('rtx-4090', 'yolov7_1080p', 'fp16', 'graph')])} FPS "
               f"fp16, {rate(fps[('rtx-4090', 'yolov7_1080p', 'int8', 'graph')])} int8 (so precision decides)"
               + (f". Measured at 1088x1920 on the H200: {rate(1 / m1080['graph_s'])} FPS (graph), "
                  f"{rate(1 / m1080['eager_s'])} (eager)" if m1080 else ""))
    return "\n".join(body), verdict


def claim_sd(c: Checker, runs: list[dict]) -> tuple[str, str]:
    rows, per_image = [], {}
    for hw_id in CARDS:
        pg = c.predict("sd_unet", hw_id, 2, "fp16", "graph")
        pe = c.predict("sd_unet", hw_id, 2, "fp16", "eager")
        per_image[hw_id] = SD_STEPS * pg.latency_s
        rows.append([card_name(c, hw_id), ms(pe.latency_s), ms(pg.latency_s), f"{SD_STEPS * pe.latency_s:.2f}",
                     f"{SD_STEPS * pg.latency_s:.2f}", pg.bound])
    body = [
        f"One 512x512 image = {SD_STEPS} UNet steps at batch 2 (classifier-free guidance: the conditional and "
        "unconditional latents together), fp16; the text encoder and the VAE decoder are not modelled, so "
        "these are lower bounds (`examples/sd_unet.py` says why). Command: `tops-advisor analyze "
        "examples/sd_unet.py -H rtx-4090 -b 2 --dtype fp16`.",
        "",
        table(["Device", "UNet step, eager (ms)", "UNet step, graph (ms)", f"{SD_STEPS} steps eager (s)",
               f"{SD_STEPS} steps graph (s)", "bound"], rows),
    ]
    r = measured(runs, "examples/sd_unet.py", 2, "fp16")
    if r:
        pg = c.predict("sd_unet", MEASURED_CARD, 2, "fp16", "graph")
        pe = c.predict("sd_unet", MEASURED_CARD, 2, "fp16", "eager")
        body += ["", f"H200, batch 2 fp16 (`benchmarks/results/h200_article.json`): eager measured "
                 f"{ms(r['eager_s'])} ms (predicted {ms(pe.latency_s)}), graph measured {ms(r['graph_s'])} ms "
                 f"(predicted {ms(pg.latency_s)}): {SD_STEPS} steps = {SD_STEPS * r['graph_s']:.2f} s measured."]
    err = h200_error(c, runs, "sd_unet", "examples/sd_unet.py", 2) or 1.0
    fast = [f"{c.hw(h).name} ({per_image[h]:.1f} s)" for h in ARTICLE_CARDS if per_image[h] * max(err, 1) <= 3.2]
    edge = [f"{c.hw(h).name} ({per_image[h]:.1f} s)" for h in ARTICLE_CARDS
            if per_image[h] <= 3.2 < per_image[h] * max(err, 1)]
    slow = [f"{c.hw(h).name} ({per_image[h]:.1f} s)" for h in ARTICLE_CARDS if per_image[h] > 3.2]
    verdict = (f"holds on {', '.join(fast) or 'none'} (50 UNet steps at batch 2, fp16, graph"
               + (f"; still under 3.2 s when scaled by the H200's measured / predicted {err:.2f}"
                  if err > 1.05 else "") + ")"
               + (f"; borderline on {', '.join(edge)}" if edge else "")
               + f"; not at 50 steps on {', '.join(slow) or 'none'} (compute-bound: "
               f"{c.costs['sd_unet'].at(2, 'fp16').flops / 1e12:.2f} TFLOP per step; fewer steps would). "
               "Depends on steps, sampler, guidance and the card, none stated")
    return "\n".join(body), verdict


def claim_gpt3(c: Checker) -> tuple[str, str]:
    cfg = preset_config("gpt3-175b")
    prec = make_precision("int8")
    hw = c.hw("rtx-4090")
    a = analyze_llm(cfg, hw, batch=1, context=512, precision=prec)
    m = a.memory
    weights_gb = m.weights_bytes / 1e9
    bound_tps = hw.memory_bandwidth_gb_s / weights_gb
    body = [
        "Command: `tops-advisor llm gpt3-175b -H rtx-4090 --weight-dtype int8 --context 512` "
        "(docs/llm.md works through it in full).",
        "",
        f"- One RTX 4090: needs {m.total_bytes / 1e9:.1f} GB ({weights_gb:.1f} GB of weights: int8 linear "
        f"layers, bf16 embeddings) and has {m.capacity_bytes / 1e9:g} GB: fits_memory = {a.fits_memory}; "
        f"devices_needed = {a.devices_needed}.",
        f"- Even with unlimited memory, batch-1 decoding reads every weight once per token: "
        f"{weights_gb:.1f} GB / {hw.memory_bandwidth_gb_s:g} GB/s = at most {bound_tps:.1f} tokens/s on one "
        f"card. 18 tokens/s would need {18 * weights_gb / 1e3:.2f} TB/s.",
    ]
    rows = []
    for hw_id in ("rtx-4090", "a100-sxm4-80gb", "h100-sxm"):
        cal, _ = shipped_calibration(c.hw(hw_id))
        plan = plan_llm(cfg, c.hw(hw_id), tokens_per_s=18, prompt=512, generate=128, precision=prec,
                        max_devices=16, calibration=cal)
        tps = f"{1 / plan.analysis.tpot_s:.1f}" if plan.analysis else "–"
        rows.append([c.hw(hw_id).name, str(plan.devices or "–"), tps, "yes" if plan.meets_targets else "no",
                     plan.why])
    body += [
        "",
        "What it takes (`plan_llm`: the fewest tensor-parallel cards that hold the model and decode 18 tokens/s "
        "per request; prompt 512, 128 new tokens, int8 weights, up to 16 cards; one configuration: "
        "`tops-advisor llm gpt3-175b -H rtx-4090 --weight-dtype int8 --tp 8 --prompt 512 --generate 128`):",
        "",
        table(["Device", "cards", "decode tokens/s", "meets 18/s", "why"], rows),
    ]
    verdict = (f"cannot hold on one card (memory: {weights_gb:.0f} GB of int8 weights vs 24 GB; bandwidth: "
               f"at most {bound_tps:.1f} tokens/s even if it fitted)")
    return "\n".join(body), verdict


# ------------------------------------------------------------------------------------------ selection guide

GUIDE = (
    ("Edge (article: 100-200 TOPS, Jetson AGX Orin)",
     "YOLOv7 at 640x640, 30 FPS on one stream (batch 1, latency <= 33.3 ms), at most 60 W, fp16 or int8",
     "yolov7_640",
     Constraints(latency_s=1 / 30, batch=1, max_power_w=60, dtypes=("fp16", "int8"), top=10),
     "YOLOV7_INPUT=640 tops-advisor recommend examples/yolov7.py --latency 33.3ms --batch 1 --max-power 60W "
     "--dtype fp16,int8"),
    ("Lab / workstation (article: 300-500 TOPS, RTX 4090 / Titan RTX)",
     "ResNet-50 at batch 32 in at most 10 ms, workstation cards, fp16 or int8",
     "resnet50",
     Constraints(latency_s=0.010, batch=32, segment="workstation", dtypes=("fp16", "int8"), top=10),
     "tops-advisor recommend examples/resnet50.py --latency 10ms --batch 32 --segment workstation "
     "--dtype fp16,int8"),
    ("Data centre (article: A100 / H100 with NVLink)",
     "BERT-Large (sequence 128) at 1000 samples/s or more, data-centre cards, fp16",
     "bert_large",
     Constraints(throughput_per_s=1000, segment="datacenter", dtypes=("fp16",), top=10),
     "tops-advisor recommend examples/bert_large.py --throughput 1000 --segment datacenter --dtype fp16"),
)


def selection_guide(c: Checker) -> str:
    parts = []
    for title, target, model, cons, cmd in GUIDE:
        parts += [f"### {title}", "", f"Target: {target}. Ranked by throughput per watt of TDP, graph mode.", "",
                  f"`{cmd}`", ""]
        try:
            res = recommend(c.costs[model].at, c.catalog, cons, calibration_of=shipped_calibration)
        except NothingFeasibleError as exc:
            parts += [f"No device meets it: {exc}", ""]
            continue
        rows = [[r.name, r.dtype, str(r.batch), ms(r.latency_s), rate(r.throughput_per_s), r.bound,
                 f"{r.tdp_w:g}", f"{r.throughput_per_watt:.3g}", f"{r.tops_per_watt:.3f}"]
                for r in res.recommendations]
        parts += [table(["Device", "dtype", "batch", "latency (ms)", "samples/s", "bound", "TDP (W)",
                         "samples/s per W", "attained TOPS/W"], rows), ""]
        filtered = [r for r in res.rejected if r.reason.startswith(("segment ", "TDP "))]
        missed = sorted((r for r in res.rejected if r not in filtered), key=lambda r: -r.closeness)
        if missed:
            parts += ["Missed the target: " + "; ".join(f"{r.hardware} ({r.reason})" for r in missed) + ".", ""]
        if filtered:
            parts += [f"Filtered out by segment or power: {len(filtered)} other catalog devices.", ""]
    return "\n".join(parts)


TRUST_POINTS = (  # (label, model key, file, batch, input size)
    ("ResNet-50, batch 32", "resnet50", "examples/resnet50.py", 32, ""),
    ("BERT-Large, batch 32", "bert_large", "examples/bert_large.py", 32, ""),
    ("YOLOv7 640x640, batch 1", "yolov7_640", "examples/yolov7.py", 1, "640"),
    ("YOLOv7 384x640, batch 1", "yolov7_640lb", "examples/yolov7.py", 1, "640-letterbox"),
    ("YOLOv7 1088x1920, batch 1", "yolov7_1080p", "examples/yolov7.py", 1, "1080p"),
    ("YOLOv7 1088x1920, batch 2", "yolov7_1080p", "examples/yolov7.py", 2, "1080p"),
    ("SD UNet step, batch 1", "sd_unet", "examples/sd_unet.py", 1, ""),
    ("SD UNet step, batch 2", "sd_unet", "examples/sd_unet.py", 2, ""),
)


def trust_table(c: Checker, runs: list[dict]) -> str:
    """H200, fp16: measured vs predicted latency for every workload this page uses."""
    rows = []
    for label, model, file, batch, size in TRUST_POINTS:
        r = measured(runs, file, batch, "fp16", size)
        if not r:
            continue
        row = [label]
        for mode in ("eager", "graph"):
            p = c.predict(model, MEASURED_CARD, batch, "fp16", mode)
            row += [ms(r[f"{mode}_s"]), ms(p.latency_s), f"{r[f'{mode}_s'] / p.latency_s:.2f}"]
        rows.append(row)
    return table(["Workload (fp16)", "eager measured (ms)", "predicted", "measured / predicted",
                  "graph measured (ms)", "predicted", "measured / predicted"], rows)


def peaks_by_segment(c: Checker) -> str:
    rows = []
    for hw_id in ("jetson-agx-orin-64gb", "rtx-4090", "titan-rtx", "a100-sxm4-80gb", "h100-sxm"):
        if hw_id not in c.catalog:
            continue
        h = c.hw(hw_id)
        rows.append([h.name, h.segment, article_table.num(h.dense_tops.get("fp16")),
                     article_table.num(h.dense_tops.get("int8")), article_table.num(h.sparse_tops.get("int8")),
                     f"{h.tdp_w:g}"])
    return table(["Device", "segment", "FP16 dense (TFLOPS)", "INT8 dense (TOPS)", "INT8 2:4 sparse (TOPS)",
                  "TDP (W)"], rows)


# ----------------------------------------------------------------------------------------------- document

HEADER = """# The article, checked

<!-- GENERATED by benchmarks/reports/article_check.py: do not edit by hand; regenerate with
     python3 benchmarks/reports/article_check.py --write docs/reports/article-check.md -->

The article this project grew out of (`shared/seed/tops-article.zh.txt`, summary in `shared/seed/BRIEF.md`)
quotes six results and a selection guide. This page answers each with tops-advisor: what the tool predicts on
the cards the article names (RTX 3090, RTX 3090 Ti, RTX 4090, A100 80GB (SXM4), Jetson AGX Orin 64GB,
H100 SXM), and where we could measure on an H200, what we measured. The article does not say on which card
its application results ran (the section follows its RTX 4090 discussion), so every card is shown.

How the numbers were made: the shipped catalog; the shipped calibrations (only the H200 has one, so every
other card is predicted from datasheet defaults); workloads counted from `examples/` (fp16 unless stated;
int8 is derived from the fp16 count); graph mode (CUDA graphs, no host launch cost) unless a table says eager.
H200 measurements: `benchmarks/results/h200_models.json` and `benchmarks/results/h200_article.json`, each
with the command that recorded it (below). The tool's predictions for the GeForce, Jetson, A100 and H100
cards are uncalibrated; docs/accuracy.md says how far predictions were from measurements where we could
measure.
"""


def _claims(c: Checker, runs: list[dict]) -> list[str]:
    """The verdict table, then one section per claim of the article."""
    resnet, v_resnet = claim_resnet(c, runs)
    bert, v_580, v_trt = claim_bert(c, runs)
    yolo, v_yolo = claim_yolo(c, runs)
    sd, v_sd = claim_sd(c, runs)
    gpt, v_gpt = claim_gpt3(c)
    summary = table(["Claim (article)", "Verdict"], [
        ["ResNet-50, batch 32: RTX 4090 2.1x faster than RTX 3090", v_resnet],
        ["BERT-Large: 580 samples/s batch inference", v_580],
        ["BERT-Large with TensorRT: 15 ms to 7 ms", v_trt],
        ["YOLOv7: 1080p video, 65 FPS", v_yolo],
        ["Stable Diffusion: 512x512 in 3.2 s", v_sd],
        ["GPT-3 175B, 8-bit: 18 tokens/s (on one RTX 4090)", v_gpt],
    ])
    parts = ["## Verdicts", "", summary, ""]
    for heading, body in (
            ("## 1. ResNet-50 at batch 32: \"the 4090 is 2.1x faster than the 3090\"", resnet),
            ("## 2. BERT-Large: \"580 samples/s\" and \"TensorRT: 15 ms to 7 ms\"", bert),
            ("## 3. YOLOv7: \"real-time detection on 1080p video at 65 FPS\"", yolo),
            ("## 4. Stable Diffusion: \"a 512x512 image in 3.2 s\"", sd),
            ("## 5. GPT-3 175B at 8 bits: \"18 tokens/s\"", gpt)):
        parts += [heading, "", body, ""]
    return parts


def _guide_and_trust(c: Checker, runs: list[dict]) -> list[str]:
    """The selection guide as ``recommend`` runs it, and the H200's measured-vs-predicted table."""
    return [
        "## 6. The selection guide, as `recommend` runs",
        "",
        "The article sorts by peak TOPS per segment and then says to choose by model complexity and the "
        "real-time requirement, not by peak TOPS. `recommend` does the second: state the model and the target, "
        "and it ranks the catalog by what each card is predicted to deliver. The peaks the article's segments "
        "refer to, from the catalog:",
        "",
        peaks_by_segment(c),
        "",
        selection_guide(c),
        "## 7. How far to trust these predictions: the H200, measured vs predicted",
        "",
        "The only card we could measure. A ratio above 1 means the tool was optimistic (the card was slower "
        "than predicted). The H200 has a shipped calibration; the other cards are predicted from datasheet "
        "defaults, so expect errors at least this large there.",
        "",
        trust_table(c, runs),
        "",
    ]


def _article_tables(catalog: Catalog) -> list[str]:
    parts = ["## 8. The article's tables, corrected", "",
             "From `benchmarks/reports/article_table.py` (docs/reports/article-table.md has the full discussion).",
             ""]
    for heading, make in (("### Key parameters: RTX 3090 vs RTX 4090", article_table.key_parameter_table),
                          ("### RTX 4090 FP8", article_table.rtx4090_fp8_table),
                          ("### Performance comparison", article_table.performance_table),
                          ("### TOPS per watt, dense, at TDP", article_table.tops_per_watt_table),
                          ("### Can any catalog figure reproduce the article's TOPS/W column?",
                           article_table.tops_w_candidates)):
        parts += [heading, "", make(catalog), ""]
    return parts


def render(catalog: Catalog, costs: dict[str, Costs]) -> str:
    c = Checker(catalog, costs)
    runs = load_measurements()
    parts = [HEADER, *_claims(c, runs), *_guide_and_trust(c, runs), *_article_tables(catalog)]
    parts += [
        "## How the H200 measurements were recorded",
        "",
        "On one NVIDIA H200 (torch 2.11, CUDA 13.0), median of timed iterations after warm-up, CUDA events, "
        "random weights and inputs:",
        "",
    ]
    parts += [f"    {cmd}" for cmd in commands_of(MODELS_RESULTS) + commands_of(ARTICLE_RESULTS)]
    parts += ["", "Regenerate this page: `python3 benchmarks/reports/article_check.py --write docs/reports/article-check.md`.", ""]
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    args = article_table.doc_arguments(argv, __doc__.splitlines()[0], "write the document to DOC",
                                       "exit 1 if DOC differs from what this writes")
    try:
        catalog = Catalog.from_dirs([shipped_catalog_dir()])
        doc = render(catalog, count_models())
    except TopsAdvisorError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return article_table.write_or_check(args, lambda _old: doc, doc, "benchmarks/reports/article_check.py")


if __name__ == "__main__":
    sys.exit(main())
