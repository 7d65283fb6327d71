"""Score tops-advisor against PUBLISHED measurements on cards other than the H200.

    python benchmarks/reports/published_score.py                 # per-card table, plain text
    python benchmarks/reports/published_score.py --markdown      # the same table in Markdown (docs/published.md)
    python benchmarks/reports/published_score.py --json          # every record with its prediction, and the summary

Reads every ``benchmarks/published/*.json`` (one file per source: a ``source`` block, ``records`` and
``notes``; docs/published.md describes the fields; ``--aside`` reads ``benchmarks/published/aside/*.json``
instead, the records held back for the final blind check), predicts each record and reports
error = (predicted - measured) / measured on latency. Throughput becomes latency as batch / throughput
(tokens: tokens in the pass / tokens per second; TFLOPS: 2*M*N*K / TFLOPS).

How each record is predicted:
- a model file (``examples/*.py``) or a library model by name (``timm:NAME``, ``torchvision:NAME``,
  ``hf:PATH_OR_ID``; needs the ``[models]`` extra): ``ModelCosts`` + ``predict``; ``run`` eager -> mode "eager", cuda-graph
  -> "graph"; compiled -> "compiled" (inductor's kernels, its own layout); amp -> an eager run of ``--dtype amp``
  (autocast's operator lists, counting/amp.py), with
  ``layout: channels_last`` through ``counting.lowering.channels_last_convs`` (cuDNN's NHWC rates);
- an LLM preset (``llm:<preset>``): ``analyze_llm`` in graph mode at the record's phase, context and tensor
  parallel degree; compiled (gpt-fast) and engine runs (llama.cpp) are flagged "mode not modelled";
- ``gemm:MxNxK`` (mamf-finder): one matmul operator predicted in graph mode (device time only);
- ``run: tensorrt`` (MLPerf ``mlperf_*.json``; TensorRT's BERT demo ``tensorrt_bert_demo.json``): the model
  counted as a TensorRT engine and predicted in mode "tensorrt" (docs/tensorrt.md); scored only with
  ``--tensorrt``, never in the PyTorch tables or bands. ``sequence`` counts the model file at that many tokens
  per sequence; ``tokens_per_sample`` (a packed variable-length engine: NVIDIA's MLPerf BERT) at that mean
  length, ``--padded`` at the file's own length instead (counted_sequence). ``opt_workload``: the model file at
  the shape a dynamic-shape engine was built for (its profile's ``opt`` shape), whose tactics the run keeps.
Calibration: the shipped one for the card where there is one (only the H200 has one), else the datasheet.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATA_DIR = ROOT / "benchmarks" / "published"
ASIDE_DIR = DATA_DIR / "aside"   # held back from whoever changes the predictor; scored only with --aside

METRICS = ("latency_ms", "throughput_per_s", "tokens_per_s", "tflops")
RUNS = ("eager", "cuda-graph", "kernel", "amp", "compiled", "engine", "tensorrt")
MODELLED_RUNS = ("eager", "cuda-graph", "kernel")
# TensorRT engines (MLPerf, benchmarks/published/mlperf_*.json) are scored apart (--tensorrt), never in the
# PyTorch tables and bands above: they are predicted in mode "tensorrt" (docs/tensorrt.md).
ENGINE_RUNS = ("tensorrt",)
HOST_RUNS = ("eager", "amp")   # the runs an eager host profile applies to
MIN_FIT_MODELS = 2             # a host scale is fitted to the rows of at least this many other models
SOURCE_FIELDS = ("title", "url", "version", "table")
RECORD_FIELDS = ("card", "workload", "batch", "precision", "run", "metric", "value", "pointer")
# What a record's ``input_copy`` may say: the timed region copies the model input to the device from host
# memory the timing process has not touched, a DataLoader worker's shared memory (torch's default_collate
# allocates a worker's batch in shared memory; the main process maps it and faults each page in during the
# copy). Its rate is fitted with the environment's host scale (hosts.fit_host).
INPUT_COPIES = ("dataloader-shared-memory",)


@dataclass
class Scored:
    """One record with its prediction."""

    source: str
    card: str
    workload: str
    batch: int
    precision: str
    run: str
    detail: str               # engine, tp, context or phase: what else tells the rows apart
    measured_s: float
    predicted_s: float
    flag: str                 # "" when the run is modelled; else why not
    regime: str = ""          # regime_of(): the kind of run, for the per-regime table

    @property
    def error(self) -> float:
        return (self.predicted_s - self.measured_s) / self.measured_s


# --- loading and checking ---------------------------------------------------------------------------------
def load_sources(data_dir: Path = DATA_DIR) -> list[dict]:
    """Every source file, each with its path under ``"file"``."""
    out = []
    for path in sorted(Path(data_dir).glob("*.json")):
        doc = json.loads(path.read_text())
        doc["file"] = path.name
        out.append(doc)
    return out


def record_problems(rec: dict, card_ids: set[str], root: Path = ROOT) -> list[str]:
    """What is wrong with one record ([] when it is valid)."""
    problems = [f"missing {f}" for f in RECORD_FIELDS if f not in rec]
    if problems:
        return problems
    if rec["card"] not in card_ids:
        problems.append(f"unknown card {rec['card']!r}")
    problems += _workload_problems(rec["workload"], root)
    if rec["metric"] not in METRICS:
        problems.append(f"unknown metric {rec['metric']!r}")
    if rec["run"] not in RUNS:
        problems.append(f"unknown run {rec['run']!r}")
    if rec["run"] == "engine" and not rec.get("engine"):
        problems.append("run 'engine' without an engine name")
    if "opt_workload" in rec:
        problems += [f"opt_workload: {p}" for p in _workload_problems(rec["opt_workload"], root)]
        if rec["run"] != "tensorrt":
            problems.append("opt_workload (an engine's opt shape) needs run 'tensorrt'")
    if rec.get("clock", "sustained") not in ("sustained", "burst"):
        problems.append(f"clock must be 'sustained' or 'burst', got {rec['clock']!r}")
    if "power_mode" in rec and not (isinstance(rec["power_mode"], str) and rec["power_mode"].strip()):
        problems.append(f"power_mode must be a mode name (nvpmodel's, e.g. MAXN), got {rec['power_mode']!r}")
    if "input_copy" in rec and rec["input_copy"] not in INPUT_COPIES:
        problems.append(f"input_copy must be one of {', '.join(INPUT_COPIES)}, got {rec['input_copy']!r}")
    if "environment" in rec and not (isinstance(rec["environment"], str) and rec["environment"].strip()):
        problems.append(f"environment must be a non-empty name, got {rec['environment']!r}")
    if not (isinstance(rec["value"], (int, float)) and rec["value"] > 0):
        problems.append(f"value must be a positive number, got {rec['value']!r}")
    if not (isinstance(rec["batch"], int) and rec["batch"] >= 1):
        problems.append(f"batch must be a positive integer, got {rec['batch']!r}")
    return problems + _sequence_problems(rec)


def _sequence_problems(rec: dict) -> list[str]:
    """``sequence``: the tokens per sequence of a fixed-length run (the model file's example_inputs takes
    ``sequence=``); ``tokens_per_sample``: the mean real tokens per sample of a variable-length (packed) engine,
    with ``tokens_source`` saying where that mean comes from."""
    problems = []
    if "sequence" in rec and not (isinstance(rec["sequence"], int) and not isinstance(rec["sequence"], bool)
                                  and rec["sequence"] >= 1):
        problems.append(f"sequence must be a positive integer, got {rec['sequence']!r}")
    if "tokens_per_sample" in rec:
        tps = rec["tokens_per_sample"]
        if not (isinstance(tps, (int, float)) and not isinstance(tps, bool) and tps >= 1):
            problems.append(f"tokens_per_sample must be a number >= 1, got {tps!r}")
        if "sequence" in rec:
            problems.append("tokens_per_sample (a packed engine's mean length) and sequence (a fixed length) "
                            "exclude each other")
        if rec.get("run") != "tensorrt":
            problems.append("tokens_per_sample applies to run 'tensorrt' (packed variable-length engines)")
        if not (isinstance(rec.get("tokens_source"), str) and rec["tokens_source"].strip()):
            problems.append("tokens_per_sample without tokens_source (where the mean length comes from)")
    return problems


def counted_sequence(rec: dict, packed: bool = True) -> int | None:
    """Tokens per sequence the record's model is counted at: its fixed ``sequence``; for a packed engine
    (``tokens_per_sample``, unless ``packed`` is off) the mean length rounded, so its GEMMs and norms see the
    batch's real tokens (batch x mean) and its attention each sequence at the mean length; else None (the
    model file's own length)."""
    if "sequence" in rec:
        return rec["sequence"]
    if packed and "tokens_per_sample" in rec:
        return max(1, round(rec["tokens_per_sample"]))
    return None


def _workload_problems(workload: str, root: Path) -> list[str]:
    if workload.startswith("llm:"):
        from tops_advisor.llm.presets import PRESETS
        return [] if workload[4:] in PRESETS else [f"unknown LLM preset {workload[4:]!r}"]
    if workload.startswith("gemm:"):
        dims = workload[5:].split("x")
        ok = len(dims) == 3 and all(d.isdigit() and int(d) > 0 for d in dims)
        return [] if ok else [f"bad GEMM shape {workload!r} (want gemm:MxNxK)"]
    if is_library_spec(workload):
        name = workload.split(":", 1)[1]
        ok = bool(name) and not any(c.isspace() for c in name)
        return [] if ok else [f"bad library model {workload!r} (want timm:NAME, torchvision:NAME or hf:PATH_OR_ID)"]
    return [] if (root / workload).is_file() else [f"no model file {workload!r}"]


def is_library_spec(workload: str) -> bool:
    """A library model named in the tool's own syntax (``tops_advisor.counting.library_models.PREFIXES``)."""
    from tops_advisor.counting.library_models import is_library_spec as library_spec
    return library_spec(workload)


def model_spec(workload: str) -> str | Path:
    """What ``ModelCosts`` counts: a library spec as it is, a model file under the repository root."""
    return workload if is_library_spec(workload) else ROOT / workload


def source_problems(doc: dict) -> list[str]:
    src = doc.get("source", {})
    problems = [f"source lacks {f}" for f in SOURCE_FIELDS if not src.get(f)]
    if not doc.get("records"):
        problems.append("no records")
    return problems


# --- measured and predicted latency -----------------------------------------------------------------------
def gemm_dims(workload: str) -> tuple[int, int, int]:
    m, n, k = (int(d) for d in workload[5:].split("x"))
    return m, n, k


def tokens_in_pass(rec: dict) -> int:
    """Tokens one pass produces (decode) or consumes (prefill), over the whole batch."""
    per_sequence = rec.get("prompt", 1) if rec.get("phase") == "prefill" else 1
    return rec["batch"] * per_sequence


def measured_latency_s(rec: dict) -> float:
    metric, value = rec["metric"], float(rec["value"])
    if metric == "latency_ms":
        return value / 1e3
    if metric == "throughput_per_s":
        return rec["batch"] / value
    if metric == "tokens_per_s":
        return tokens_in_pass(rec) / value
    m, n, k = gemm_dims(rec["workload"])
    return 2.0 * m * n * k / (value * 1e12)


def timed_copy_bytes(rec: dict, workload) -> float:
    """Bytes the record's timed region copies to the device before the forward: the model's input where the
    record says ``input_copy`` (``INPUT_COPIES``), else none."""
    return float(workload.input_bytes) if rec.get("input_copy") else 0.0


def mode_and_flag(run: str, kind: str = "model") -> tuple[str, str]:
    """The predictor mode a run is scored in, and a flag when the tool does not model that run. ``kind``
    (``record_kind``): a compiled model file is predicted in mode compiled (inductor's kernels replayed as a CUDA
    graph: docs/compiled.md); compiled LLM runs go through their engine profile and keep the flag."""
    if run == "compiled" and kind == "model":
        return "compiled", ""
    if run == "eager":
        return "eager", ""
    if run in ("cuda-graph", "kernel"):
        return "graph", ""
    if run == "amp":
        return "eager", ""   # predicted as --dtype amp (counting/amp.py), eager
    if run == "tensorrt":
        return "tensorrt", ""   # the TensorRT engine profile (tops_advisor/tensorrt.py)
    return "graph", f"mode not modelled ({run})"


class Predictor:
    """Predicts records; caches the catalog, each card's device model and each counted model file."""

    def __init__(self, engines: bool = True, hosts: bool = True, packed: bool = True):
        from tops_advisor.api import load_catalog
        self.catalog = load_catalog()
        self.engines = engines  # engine and compiled LLM runs through their profile (tops_advisor/llm/engines.py)
        self.hosts = hosts      # eager runs of a named environment at a host scale fitted leave-one-model-out
        self.packed = packed    # packed engines (tokens_per_sample) at their mean length; off: padded
        self._cards: dict[str, tuple] = {}
        self._costs: dict[tuple[str, str], object] = {}
        self._environments: dict[str, list[dict]] = {}
        self._fits: dict[tuple[str, str, bool], object] = {}   # (env, left-out model, autocast) -> HostFit | None

    def set_environments(self, sources: list[dict]) -> None:
        """The records of every named environment: the rows a host scale may be fitted to."""
        self._environments = {}
        for doc in sources:
            for rec in doc["records"]:
                if rec.get("environment") and rec["run"] in HOST_RUNS:
                    self._environments.setdefault(rec["environment"], []).append(rec)

    def card(self, card_id: str, burst: bool = False, power_mode: str | None = None):
        """(hardware, calibration, device perf) of a card; ``burst``: at its burst clock (a record whose
        benchmark runs a second or two, too short to reach the power limit: ``"clock": "burst"``);
        ``power_mode``: in that mode of the module (a Jetson's nvpmodel mode, ``Hardware.at_power_mode``)."""
        key = (card_id, burst, power_mode)
        if key not in self._cards:
            from tops_advisor.api import calibration_for, device_perf
            hw = self.catalog.get(card_id)
            hw = hw.at_burst_clock() if burst else hw
            hw = hw.at_power_mode(power_mode) if power_mode else hw
            cal, where = calibration_for(hw)
            self._cards[key] = (hw, cal, device_perf(hw, cal, where))
        return self._cards[key]

    def record_card(self, rec: dict):
        """``card`` for a record: its clock and power mode as the record states them."""
        return self.card(rec["card"], burst=rec.get("clock") == "burst", power_mode=rec.get("power_mode"))

    def latency_s(self, rec: dict) -> float:
        workload = rec["workload"]
        if workload.startswith("llm:"):
            return self._llm(rec)
        if workload.startswith("gemm:"):
            return self._gemm(rec)
        return self._model(rec)

    def _model(self, rec: dict) -> float:
        from tops_advisor.api import predict
        w, hw, cal, perf = self.model_case(rec)
        fit = self.host_fit(rec) if self.hosts else None
        copy_s = 0.0
        if fit is not None:
            from tops_advisor.roofline.hosts import with_host_scale
            perf = with_host_scale(perf, fit.scale)
            copy_s = fit.copy_s(timed_copy_bytes(rec, w))
        mode, _ = mode_and_flag(rec["run"])
        opt = self.model_case({**rec, "workload": rec["opt_workload"]})[0] if rec.get("opt_workload") else None
        return predict(w, hw, cal, mode, tf32_matmul=rec["precision"] == "tf32", perf=perf,
                       opt_workload=opt).latency_s + copy_s

    def model_case(self, rec: dict) -> tuple:
        """(workload, hardware, calibration, device perf) of a model record, as the scorer predicts it."""
        from tops_advisor.api import ModelCosts
        hw, cal, perf = self.record_card(rec)
        dtype = "fp32" if rec["precision"] == "tf32" else rec["precision"]
        if rec["run"] == "amp":
            dtype = "amp"   # an fp32 model under autocast (counting/amp.py)
        seq = counted_sequence(rec, self.packed)
        key = (rec["workload"], dtype, seq)
        if rec["run"] == "tensorrt":   # an engine's kernels; int8 engines counted in fp16 and retyped
            key = (rec["workload"], "fp16" if dtype == "int8" else dtype, seq, "tensorrt")
        if rec["run"] == "compiled":   # inductor's kernels; it picks its own layout
            key = (rec["workload"], dtype, seq, "compiled")
        if key not in self._costs:
            self._costs[key] = ModelCosts(model_spec(rec["workload"]), base_dtype=key[1], seq=seq,
                                          mode=rec["run"] if rec["run"] in ("tensorrt", "compiled") else "graph")
        w = self._costs[key].at(rec["batch"], dtype)
        if rec.get("layout") == "channels_last" and rec["run"] != "compiled":
            from tops_advisor.counting.lowering import channels_last_convs
            w = channels_last_convs(w)
        return w, hw, cal, perf

    def host_fit(self, rec: dict, exclude: str | None = None):
        """The host (``hosts.HostFit``: scale, and the rate of a timed input copy where rows copy) for an eager
        record of a named environment, fitted to the host-bound rows of the OTHER models of that environment
        (leave-one-model-out; ``exclude`` defaults to the record's model, "" keeps every model), autocast
        rows apart from the rest. None when fewer than ``MIN_FIT_MODELS`` other models have host-bound rows,
        or the record names no environment."""
        env = rec.get("environment")
        if not env or rec["run"] not in HOST_RUNS:
            return None
        exclude = rec["workload"] if exclude is None else exclude
        key = (env, exclude, rec["run"] == "amp")
        if key not in self._fits:
            self._fits[key] = self._fit(env, exclude, rec["run"] == "amp")
        return self._fits[key]

    def host_cases(self, env: str, exclude: str, autocast: bool) -> list[tuple[str, object]]:
        """The host-bound rows of ``env`` other than model ``exclude`` (hosts.host_bound), as (workload,
        EagerCase)."""
        from tops_advisor.roofline.hosts import EagerCase, host_bound
        cases = []
        for rec in self._environments.get(env, []):
            if rec["workload"] == exclude or (rec["run"] == "amp") != autocast:
                continue
            w, _, _, perf = self.model_case(rec)
            case = EagerCase(w, perf, measured_latency_s(rec), tf32_matmul=rec["precision"] == "tf32",
                             copy_bytes=timed_copy_bytes(rec, w))
            if host_bound(case.device_s, case.measured_s):
                cases.append((rec["workload"], case))
        return cases

    def _fit(self, env: str, exclude: str, autocast: bool):
        from tops_advisor.roofline.hosts import fit_host
        cases = self.host_cases(env, exclude, autocast)
        if len({model for model, _ in cases}) < MIN_FIT_MODELS:
            return None
        return fit_host([case for _, case in cases])

    def _llm(self, rec: dict) -> float:
        from tops_advisor.llm.analysis import analyze_llm, precision_for
        from tops_advisor.llm.presets import preset_config
        hw, cal, _ = self.record_card(rec)
        phase = rec.get("phase", "decode")
        context = rec["prompt"] if phase == "prefill" else rec["context"]
        precision, predictor, layout = precision_for(hw, weight=rec["precision"]), None, "torch"
        if self.engines and rec["run"] in ("engine", "compiled"):
            from tops_advisor.llm.engines import engine_precision, engine_predictor, get_engine
            name, fmt = engine_of(rec)
            profile = get_engine(name)
            precision, layout = engine_precision(profile, precision, fmt), profile.layout
            predictor = engine_predictor(profile, hw, cal, weight_dtype=rec["precision"])
        a = analyze_llm(preset_config(rec["workload"][4:]), hw, batch=rec["batch"], phase=phase, context=context,
                        precision=precision, tp=rec.get("tp", 1), mode="graph", layout=layout, calibration=cal,
                        predictor=predictor, find_crossover=False, suggest=False)
        return a.requested.latency_s

    def _gemm(self, rec: dict) -> float:
        from tops_advisor.api import predict
        hw, cal, perf = self.record_card(rec)
        w = gemm_workload(rec["workload"], rec["precision"])
        return predict(w, hw, cal, "graph", perf=perf).latency_s


def engine_of(rec: dict) -> tuple[str, str | None]:
    """The engine profile and weight format of an engine or compiled run: 'llama.cpp Q4_0' -> ('llama.cpp',
    'Q4_0'); gpt-fast's compiled runs -> ('gpt-fast', None: the weight dtype names the format)."""
    if rec["run"] == "compiled":
        return "gpt-fast", None
    name, _, fmt = rec.get("engine", "").partition(" ")
    return name, fmt or None


def gemm_workload(workload: str, dtype: str):
    """One (M x K) @ (K x N) matmul as a workload: each operand read once, the output written once."""
    from tops_advisor.units import BYTES_PER_ELEMENT
    from tops_advisor.workload import GemmShape, OpRecord, Workload
    m, n, k = gemm_dims(workload)
    size = BYTES_PER_ELEMENT[dtype]
    op = OpRecord(name="aten.mm", kind="matmul", module="", flops=2.0 * m * n * k,
                  bytes_read=(m * k + k * n) * size, bytes_written=m * n * size, param_bytes=k * n * size,
                  dtype=dtype, kernels=1, gemm=GemmShape(m, n, k))
    return Workload(name=workload, batch=1, dtype=dtype, ops=(op,), functional=True)


# --- scoring and summary ----------------------------------------------------------------------------------
def detail(rec: dict) -> str:
    parts = [rec.get("engine", "")]
    if rec.get("tp", 1) > 1:
        parts.append(f"tp{rec['tp']}")
    if rec.get("phase") == "prefill":
        parts.append(f"prefill {rec['prompt']}")
    elif "context" in rec:
        parts.append(f"ctx {rec['context']}")
    if "sequence" in rec:
        parts.append(f"seq {rec['sequence']}")
    if "tokens_per_sample" in rec:
        parts.append(f"packed, mean {rec['tokens_per_sample']:g} tokens")
    return " ".join(p for p in parts if p)


# The regime of a record, first matching row wins: (condition, regime).
REGIMES = (
    (lambda rec: rec["run"] == "engine" and rec.get("engine", "").lower().startswith("tensorrt"), "tensorrt engine"),
    (lambda rec: rec["run"] == "engine" and rec.get("engine", "").startswith("llama.cpp"), "llama.cpp"),
    (lambda rec: rec["run"] == "compiled" and record_kind(rec["workload"]) == "model", "pytorch compiled (model)"),
    (lambda rec: rec["run"] in ("eager", "amp") and record_kind(rec["workload"]) == "model", "pytorch eager (model)"),
    (lambda rec: record_kind(rec["workload"]) == "llm", "llm (other runs)"),
    (lambda rec: True, "gemm"),
)


def regime_of(rec: dict) -> str:
    return next(name for test, name in REGIMES if test(rec))


def score(sources: list[dict], predictor: Predictor | None = None) -> list[Scored]:
    predictor = predictor or Predictor()
    predictor.set_environments(sources)
    rows = []
    for doc in sources:
        for rec in doc["records"]:
            _, flag = mode_and_flag(rec["run"], record_kind(rec["workload"]))
            rows.append(Scored(source=doc["file"], card=rec["card"], workload=rec["workload"],
                               batch=rec["batch"], precision=rec["precision"], run=rec["run"],
                               detail=detail(rec), measured_s=measured_latency_s(rec),
                               predicted_s=predictor.latency_s(rec), flag=flag, regime=regime_of(rec)))
    return rows


def stats(rows: list[Scored]) -> dict:
    """n, median |error|, the worst row's signed error, and the median signed error (bias)."""
    if not rows:
        return {"n": 0, "median_abs_error": None, "worst_error": None, "median_error": None}
    errors = [r.error for r in rows]
    worst = max(errors, key=abs)
    return {"n": len(rows), "median_abs_error": statistics.median(abs(e) for e in errors),
            "worst_error": worst, "median_error": statistics.median(errors)}


def summary(rows: list[Scored]) -> dict:
    cards = sorted({r.card for r in rows})
    per_card = {c: {"all": stats([r for r in rows if r.card == c]),
                    "modelled": stats([r for r in rows if r.card == c and not r.flag])} for c in cards}
    groups = {"all": rows, "modelled runs": [r for r in rows if not r.flag],
              "runs not modelled": [r for r in rows if r.flag]}
    by_source = {s: stats([r for r in rows if r.source == s]) for s in sorted({r.source for r in rows})}
    by_regime = {g: stats([r for r in rows if r.regime == g]) for g in sorted({r.regime for r in rows})}
    return {"per_card": per_card, "overall": {k: stats(v) for k, v in groups.items()}, "per_source": by_source,
            "per_regime": by_regime}


# --- the per-card bands shipped with the tool ---------------------------------------------------------------
BANDS_PATH = ROOT / "tops_advisor" / "data" / "accuracy_cards.json"
BANDS_COMMAND = "python benchmarks/reports/published_score.py --write-bands"


def record_kind(workload: str) -> str:
    """'llm' (an LLM preset), 'gemm' (one matmul) or 'model' (a model file or a library model)."""
    return "llm" if workload.startswith("llm:") else "gemm" if workload.startswith("gemm:") else "model"


def _band(rows: list[Scored]) -> dict | None:
    if not rows:
        return None
    errors = [abs(r.error) for r in rows]
    return {"n": len(rows), "median_abs_error": round(statistics.median(errors), 4),
            "worst_abs_error": round(max(errors), 4),
            "median_error": round(statistics.median(r.error for r in rows), 4)}


def band_kind(row: Scored) -> str:
    """The band a scored row counts in: 'tensorrt' for an engine run (mode tensorrt), else its workload's kind."""
    return "tensorrt" if row.run in ENGINE_RUNS else record_kind(row.workload)


def _bands_by_kind(rows: list[Scored]) -> dict:
    """A level's bands: one per kind (model, llm, gemm, tensorrt) that has rows, and 'all' over the PyTorch
    kinds (an engine's rows never stand in for a PyTorch prediction)."""
    out = {"all": _band([r for r in rows if r.run not in ENGINE_RUNS])}
    for kind in ("model", "llm", "gemm", "tensorrt"):
        out[kind] = _band([r for r in rows if band_kind(r) == kind])
    return {kind: band for kind, band in out.items() if band}


def bands_document(rows: list[Scored], catalog) -> dict:
    """tops_advisor/data/accuracy_cards.json: |error| bands of datasheet predictions against the published
    measurements, per card, per card class (architecture and segment) and over every card, each split by kind
    of workload (model file, LLM, single GEMM, TensorRT engine). Read by tops_advisor/accuracy.py."""
    cls = {hw.id: f"{hw.architecture} {hw.segment}" for hw in catalog}
    cards = {c: _bands_by_kind([r for r in rows if r.card == c]) for c in sorted({r.card for r in rows})}
    classes = {k: _bands_by_kind([r for r in rows if cls.get(r.card) == k])
               for k in sorted({cls[r.card] for r in rows if r.card in cls})}
    return {"source": "docs/published.md (benchmarks/reports/published_score.py)", "command": BANDS_COMMAND,
            "what": "datasheet predictions (no calibration) against published measurements; every run kind, "
                    "modelled or not; TensorRT engines (mode tensorrt) in their own 'tensorrt' bands only",
            "cards": cards, "classes": classes, "all_cards": _bands_by_kind(rows)}


# --- rendering --------------------------------------------------------------------------------------------
def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:+.0f}%"


def _abs_pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.0f}%"


def _stat_cells(s: dict) -> list[str]:
    return [str(s["n"]), _abs_pct(s["median_abs_error"]), _pct(s["median_error"]), _pct(s["worst_error"])]


def table_lines(summ: dict) -> list[list[str]]:
    """Header + one row per card + overall rows, as cells."""
    rows = [["card", "n", "median abs err", "median err", "worst", "n (modelled)", "median abs err (modelled)"]]
    for card, s in summ["per_card"].items():
        m = s["modelled"]
        rows.append([card, *_stat_cells(s["all"]), str(m["n"]), _abs_pct(m["median_abs_error"])])
    for name, s in summ["overall"].items():
        rows.append([f"**{name}**", *_stat_cells(s), "", ""])
    return rows


def source_lines(summ: dict) -> list[list[str]]:
    rows = [["source file", "n", "median abs err", "median err", "worst"]]
    rows += [[f"`{name}`", *_stat_cells(s)] for name, s in summ["per_source"].items()]
    return rows


def regime_lines(summ: dict) -> list[list[str]]:
    rows = [["regime", "n", "median abs err", "median err", "worst"]]
    rows += [[name, *_stat_cells(s)] for name, s in summ["per_regime"].items()]
    return rows


def markdown(cells: list[list[str]]) -> str:
    head, *body = cells
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in body])


def plain(cells: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in cells) for i in range(len(cells[0]))]
    return "\n".join("  ".join(c.replace("**", "").ljust(w) for c, w in zip(r, widths, strict=True)) for r in cells)


def host_fits(sources: list[dict], predictor: Predictor) -> list[dict]:
    """Every named environment's host scales, plain and under autocast: fitted to all its models' host-bound
    rows (``left_out`` "") and with each model left out in turn, with the rows each fit used."""
    predictor.set_environments(sources)
    out = []
    for env, recs in sorted(predictor._environments.items()):
        for autocast in (False, True):
            models = sorted({r["workload"] for r in recs if (r["run"] == "amp") == autocast})
            for left_out in ["", *models]:
                cases = predictor.host_cases(env, left_out, autocast)
                fit = predictor._fit(env, left_out, autocast)
                out.append({"environment": env, "autocast": autocast, "left_out": left_out,
                            "rows": len(cases), "models": len({m for m, _ in cases}),
                            "host_scale": fit and fit.scale,
                            "copy_rate_gb_s": fit and fit.copy_rate_b_s and fit.copy_rate_b_s / 1e9})
    return out


def print_engine_rows(rows: list[Scored], as_json: bool, as_markdown: bool) -> int:
    """The TensorRT records: one row each, then the error per card (and over all of them), then per source file
    (its split: seen or aside)."""
    cards = sorted({r.card for r in rows})
    if as_json:
        print(json.dumps({"records": [row_dump(r) for r in rows],
                          "per_card": {c: stats([r for r in rows if r.card == c]) for c in cards},
                          "all": stats(rows),
                          "per_source": {s: stats([r for r in rows if r.source == s])
                                         for s in sorted({r.source for r in rows})}}, indent=1))
        return 0
    cells = [["source", "card", "workload", "batch", "precision", "detail", "measured ms", "predicted ms", "error"]]
    cells += [[r.source, r.card, r.workload, str(r.batch), r.precision, r.detail, f"{r.measured_s * 1e3:.3f}",
               f"{r.predicted_s * 1e3:.3f}", _pct(r.error)] for r in rows]
    render = markdown if as_markdown else plain
    print(render(cells))
    print()
    print(render([["card", "n", "median |error|", "median error", "worst"]]
                 + [[c, *_stat_cells(stats([r for r in rows if r.card == c]))] for c in cards]
                 + [["all", *_stat_cells(stats(rows))]]))
    print()
    print(render([["source", "n", "median |error|", "median error", "worst"]]
                 + [[s, *_stat_cells(stats([r for r in rows if r.source == s]))]
                    for s in sorted({r.source for r in rows})]))
    return 0


def row_dump(r: Scored) -> dict:
    return {**asdict(r), "error": r.error}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    fmt = ap.add_mutually_exclusive_group()
    fmt.add_argument("--markdown", action="store_true", help="print Markdown tables")
    fmt.add_argument("--json", action="store_true", help="print every scored record and the summary as JSON")
    ap.add_argument("--data", type=Path, default=None, help=f"folder of source files (default: {DATA_DIR})")
    ap.add_argument("--aside", action="store_true",
                    help=f"score only the records set aside for the final blind check ({ASIDE_DIR}); not for anyone "
                         "changing the predictor (benchmarks/published/aside/README.md)")
    ap.add_argument("--regimes", action="store_true", help="also print the per-regime table")
    ap.add_argument("--files", nargs="+", metavar="NAME", help="score only these source files of the folder")
    ap.add_argument("--min-model-batch", type=int, default=1, metavar="N",
                    help="score model-file records only at batch >= N (the device-dominated runs; LLM and GEMM "
                         "records are kept)")
    ap.add_argument("--no-engines", action="store_true",
                    help="predict engine and compiled LLM runs as plain PyTorch graph runs (no engine profile)")
    ap.add_argument("--no-hosts", action="store_true",
                    help="predict eager runs of named environments with the reference host (no fitted profile)")
    ap.add_argument("--host-fits", action="store_true",
                    help="print each environment's host scales (all models, and each model left out) and exit")
    ap.add_argument("--tensorrt", action="store_true",
                    help="score only the TensorRT engine records (mlperf_*.json), per source file and record")
    ap.add_argument("--padded", action="store_true",
                    help="predict packed variable-length engines (records with tokens_per_sample) padded to the "
                         "model file's sequence length, as before that field existed")
    ap.add_argument("--write-bands", nargs="?", const=BANDS_PATH, type=Path, metavar="PATH",
                    help="also write the per-card error bands the CLI quotes (default: %(const)s)")
    args = ap.parse_args(argv)
    if args.aside and (args.data is not None or args.write_bands):
        ap.error("--aside scores the set-aside records alone: not with --data or --write-bands")
    args.data = ASIDE_DIR if args.aside else (args.data or DATA_DIR)
    from tops_advisor.errors import TopsAdvisorError
    if args.host_fits:
        print(json.dumps(host_fits(load_sources(args.data), Predictor()), indent=1))
        return 0
    sources = load_sources(args.data)
    if args.files:
        unknown = sorted(set(args.files) - {doc["file"] for doc in sources})
        if unknown:
            ap.error(f"no source file {', '.join(unknown)} in {args.data}")
        sources = [doc for doc in sources if doc["file"] in args.files]
    try:
        predictor = Predictor(engines=not args.no_engines, hosts=not args.no_hosts, packed=not args.padded)
        rows = score(sources, predictor)
    except TopsAdvisorError as exc:   # e.g. a timm: record without timm installed
        print(f"error: {exc}" + (f" ({exc.hint})" if exc.hint else ""), file=sys.stderr)
        return 2
    rows = [r for r in rows if record_kind(r.workload) != "model" or r.batch >= args.min_model_batch]
    engine_rows = [r for r in rows if r.run in ENGINE_RUNS]
    rows = [r for r in rows if r.run not in ENGINE_RUNS]
    if args.tensorrt:
        return print_engine_rows(engine_rows, args.json, args.markdown)
    summ = summary(rows)
    if args.write_bands:
        from tops_advisor.api import load_catalog
        document = bands_document(rows + engine_rows, load_catalog())
        args.write_bands.write_text(json.dumps(document, indent=1) + "\n")
        print(f"wrote {args.write_bands}", file=sys.stderr)
    if args.json:
        print(json.dumps({"records": [row_dump(r) for r in rows], "summary": summ}, indent=1))
        return 0
    render = markdown if args.markdown else plain
    print(render(table_lines(summ)))
    print()
    print(render(source_lines(summ)))
    if args.regimes:
        print()
        print(render(regime_lines(summ)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
