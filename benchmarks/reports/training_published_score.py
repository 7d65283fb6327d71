"""Score tops-advisor's training-step prediction against PUBLISHED training throughputs on other cards.

    python benchmarks/reports/training_published_score.py              # per record, per card, per source (text)
    python benchmarks/reports/training_published_score.py --markdown   # the tables of docs/published.md
    python benchmarks/reports/training_published_score.py --json       # every record with its prediction, and the summary
    python benchmarks/reports/training_published_score.py --write docs/reports/training-published.md   # the Markdown report

Reads every ``benchmarks/published/training/*.json`` (one file per source: ``source``, ``records``, ``notes``;
docs/published.md, "Training throughputs", describes the fields). ``--aside`` reads
``benchmarks/published/training/aside/*.json`` instead: the records held back for the final blind check, which
whoever changes the predictor must not score.

Each record is predicted with the tool as it is, in eager mode, at the record's batch per GPU:
- a model file or a library model (``examples/*.py``, ``timm:NAME``, ``torchvision:NAME``): ``TrainingCosts``,
  counted once per (workload, precision, optimizer) and once per batch;
- an LLM (``llm:<preset>``, or a config.json with ``config_override``): the analytic training workload at the
  record's ``seq``, decoder layers as FSDP units;
- ``gpus`` > 1: ``plan_data_parallel`` with the record's ``strategy`` (DDP for DeepLearningExamples, FSDP for
  torchtitan and llm-foundry); the planned step (compute + exposed communication) is the prediction;
- ``grad_accum`` > 1 (llm-foundry): the step per micro-batch is the planned step less (1 - 1/grad_accum) of the
  predicted optimizer part (the optimizer runs once per optimizer step, the rest every micro-batch).

The measured time of one GPU step: samples per GPU step over per-GPU throughput (``samples_per_s_total`` /
gpus, ``tokens_per_s_per_gpu`` over batch x seq tokens). error = (predicted - measured) / measured.
Calibration: the shipped one where a card has one (only the H200 does), else the datasheet.

Flags (kept in every table; the "unflagged" columns leave flagged records out): ``multi-node`` (more than one
8-GPU host: the plan prices all GPUs on one node's NVLink), ``selective-checkpointing`` (torchtitan's selective
AC, predicted without recompute), ``optimizer-unmapped`` (an optimizer the tool does not have, scored with the
nearest), ``does-not-fit`` (the tool predicts the step does not fit in memory; scored anyway).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import published_score  # noqa: E402
from published_score import _abs_pct, _pct  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
DATA_DIR = ROOT / "benchmarks" / "published" / "training"
ASIDE_DIR = DATA_DIR / "aside"   # held back from whoever changes the predictor; scored only with --aside

PRECISIONS = ("fp32", "tf32", "amp", "amp-bf16", "bf16")
OPTIMIZERS = ("adamw", "adam", "sgd", "adamw-fused")
STRATEGIES = ("ddp", "fsdp")
CHECKPOINTING = ("none", "full", "selective-op", "selective-layer")
METRICS = ("samples_per_s_total", "samples_per_s_per_gpu", "tokens_per_s_per_gpu", "tokens_per_s_total")
FLAGS = ("multi-node", "selective-checkpointing")
SOURCE_FIELDS = ("title", "url", "version", "table", "how_run")
RECORD_FIELDS = ("card", "card_as_published", "workload", "batch", "gpus", "precision", "optimizer",
                 "optimizer_as_run", "metric", "value", "pointer")
LLM_PREFIX = "llm:"


@dataclass
class Scored:
    """One record with its prediction."""

    source: str
    card: str
    workload: str
    batch: int
    gpus: int
    seq: int | None
    precision: str
    measured_s: float
    predicted_s: float
    flags: tuple[str, ...]

    @property
    def error(self) -> float:
        return (self.predicted_s - self.measured_s) / self.measured_s


# --- loading and validating ----------------------------------------------------------------------------------

def load_sources(data_dir: Path = DATA_DIR) -> list[dict]:
    """Every source file of ``data_dir`` (not its subfolders), each with its file name as ``file``."""
    return published_score.load_sources(data_dir)


def is_llm(workload: str) -> bool:
    return workload.startswith(LLM_PREFIX) or workload.endswith(".json")


def record_problems(rec: dict, card_ids: set[str]) -> list[str]:
    """What is wrong with one record's fields (not whether its workload loads: ``resolve_workload``)."""
    bad = [f"missing {f}" for f in RECORD_FIELDS if f not in rec]
    if bad:
        return bad
    checks = (
        (rec["card"] in card_ids, f"card {rec['card']!r} is not a catalog id"),
        (rec["precision"] in PRECISIONS, f"precision {rec['precision']!r}"),
        (rec["optimizer"] in OPTIMIZERS, f"optimizer {rec['optimizer']!r}"),
        (rec["metric"] in METRICS, f"metric {rec['metric']!r}"),
        (isinstance(rec["batch"], int) and rec["batch"] >= 1, "batch must be a positive integer"),
        (isinstance(rec["gpus"], int) and rec["gpus"] >= 1, "gpus must be a positive integer"),
        (rec["gpus"] == 1 or rec.get("strategy") in STRATEGIES, "gpus > 1 needs strategy ddp or fsdp"),
        (isinstance(rec["value"], (int, float)) and rec["value"] > 0, "value must be positive"),
        (rec.get("checkpointing", "none") in CHECKPOINTING, f"checkpointing {rec.get('checkpointing')!r}"),
        (not is_llm(rec["workload"]) or isinstance(rec.get("seq"), int), "an LLM record needs seq"),
        (not rec["metric"].startswith("tokens") or isinstance(rec.get("seq"), int), "a tokens metric needs seq"),
        (isinstance(rec.get("grad_accum", 1), int) and rec.get("grad_accum", 1) >= 1, "grad_accum >= 1"),
        (set(rec.get("flags", ())) <= set(FLAGS), f"flags {rec.get('flags')!r}"),
    )
    return [why for ok, why in checks if not ok]


def llm_config(rec: dict):
    """The LLMConfig of an LLM record: a preset, or a config.json with ``config_override`` applied."""
    from tops_advisor.llm import load_config
    from tops_advisor.llm.config import config_from_dict

    spec = rec["workload"]
    if spec.startswith(LLM_PREFIX):
        return load_config(spec[len(LLM_PREFIX):])
    raw = json.loads((ROOT / spec).read_text())
    raw.update(rec.get("config_override", {}))
    return config_from_dict(raw, Path(spec).stem, source=spec)


def resolve_workload(rec: dict) -> None:
    """Raise if the record's workload cannot be loaded (an LLM config is parsed; a model file must exist; a
    library model's name is left to the counting, which needs the [models] extra)."""
    spec = rec["workload"]
    if is_llm(spec):
        llm_config(rec)
    elif spec.endswith(".py"):
        if not (ROOT / spec).is_file():
            raise FileNotFoundError(spec)
    elif not spec.startswith(("timm:", "torchvision:", "hf:")):
        raise ValueError(f"unknown workload {spec!r}")


def measured_step_s(rec: dict) -> float:
    """One GPU's time per (micro-)batch from the published throughput."""
    gpus, value = rec["gpus"], float(rec["value"])
    per_gpu = {"samples_per_s_total": value / gpus, "samples_per_s_per_gpu": value,
               "tokens_per_s_total": value / gpus, "tokens_per_s_per_gpu": value}[rec["metric"]]
    units = rec["batch"] * (rec["seq"] if rec["metric"].startswith("tokens") else 1)
    return units / per_gpu


# --- predicting --------------------------------------------------------------------------------------------

class Predictor:
    """Counts each (workload, setup) once and each batch once; predicts records on their cards."""

    def __init__(self):
        from tops_advisor.api import load_catalog

        self.catalog = load_catalog()
        self._costs: dict[tuple, object] = {}

    def _setup(self, rec: dict):
        from tops_advisor.api import TrainSetup

        return TrainSetup(rec["precision"], rec["optimizer"], checkpointing=rec.get("checkpointing") == "full",
                          channels_last=rec.get("layout") == "channels_last")

    def step(self, rec: dict):
        """(TrainingWorkload, FSDP units) of one record at its batch."""
        from tops_advisor.api import TrainingCosts, training_step
        from tops_advisor.llm import training_workload
        from tops_advisor.train.parallel import FSDP_UNITS_DEFAULT

        setup = self._setup(rec)
        if is_llm(rec["workload"]):
            cfg = llm_config(rec)
            return training_workload(cfg, rec["batch"], rec["seq"], setup), cfg.num_layers
        key = (rec["workload"], setup)
        if key not in self._costs:
            self._costs[key] = TrainingCosts(rec["workload"], setup)
        tw, _ = training_step(self._costs[key], rec["batch"])
        return tw, FSDP_UNITS_DEFAULT

    def predict(self, rec: dict) -> tuple[float, tuple[str, ...]]:
        """The predicted per-GPU time of one (micro-)batch, and the flags that go with it."""
        from tops_advisor.api import calibration_for, device_perf, predict_training
        from tops_advisor.train.parallel import plan_data_parallel

        tw, units = self.step(rec)
        hw = self.catalog.get(rec["card"])
        cal = calibration_for(hw)
        pred = predict_training(tw, hw, mode="eager", perf=device_perf(hw, *cal))
        step_s, fits = pred.step_s, pred.fits_memory
        if rec["gpus"] > 1:
            plan = plan_data_parallel(pred, hw, rec["strategy"], rec["gpus"], calibration=cal[0], units=units,
                                      reserve_bytes=pred.memory_required_bytes - pred.memory.peak_bytes)
            step_s, fits = plan.step_s, plan.fits_memory
        step_s -= pred.optimizer_s * (1 - 1 / rec.get("grad_accum", 1))
        flags = list(rec.get("flags", ()))
        if rec.get("optimizer_mapped", True) is False:
            flags.append("optimizer-unmapped")
        if not fits:
            flags.append("does-not-fit")
        return step_s, tuple(flags)


def score(sources: list[dict], predictor: Predictor | None = None) -> list[Scored]:
    predictor = predictor or Predictor()
    rows = []
    for doc in sources:
        for rec in doc["records"]:
            predicted, flags = predictor.predict(rec)
            rows.append(Scored(doc["file"], rec["card"], rec["workload"], rec["batch"], rec["gpus"], rec.get("seq"),
                               rec["precision"], measured_step_s(rec), predicted, flags))
    return rows


# --- summarising and rendering -----------------------------------------------------------------------------

SCORING_FLAGS = ("multi-node", "selective-checkpointing", "optimizer-unmapped")   # the "unflagged" columns drop these


def summary(rows: list[Scored], key) -> list[dict]:
    """Per group: count, median |error|, median signed error, and the same over unflagged records."""
    groups: dict[str, list[Scored]] = {}
    for r in rows:
        groups.setdefault(key(r), []).append(r)
    out = []
    for name in sorted(groups):
        g = groups[name]
        clean = [r for r in g if not set(r.flags) & set(SCORING_FLAGS)]
        out.append({"group": name, "n": len(g), "median_abs_error": _median([abs(r.error) for r in g]),
                    "median_error": _median([r.error for r in g]), "n_unflagged": len(clean),
                    "median_abs_error_unflagged": _median([abs(r.error) for r in clean])})
    return out


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _table(title: str, stats: list[dict], markdown: bool) -> list[str]:
    head = (title, "records", "median abs error", "median error", "unflagged", "median abs error (unflagged)")
    body = [(s["group"], str(s["n"]), _abs_pct(s["median_abs_error"]), _pct(s["median_error"]), str(s["n_unflagged"]),
             _abs_pct(s["median_abs_error_unflagged"])) for s in stats]
    return _render(head, body, markdown)


def _render(head: tuple, body: list[tuple], markdown: bool) -> list[str]:
    if markdown:
        return (["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
                + ["| " + " | ".join(row) + " |" for row in body])
    widths = [max(len(str(x)) for x in col) for col in zip(head, *body, strict=True)]
    return ["  ".join(str(x).ljust(w) for x, w in zip(row, widths, strict=True)) for row in (head, *body)]


def record_lines(rows: list[Scored], markdown: bool) -> list[str]:
    head = ("source", "card", "workload", "batch", "gpus", "seq", "precision", "measured ms", "predicted ms",
            "error", "flags")
    body = [(r.source, r.card, r.workload.replace("benchmarks/published/training/configs/", ""), str(r.batch),
             str(r.gpus), str(r.seq or "-"), r.precision, f"{1e3 * r.measured_s:.1f}", f"{1e3 * r.predicted_s:.1f}",
             _pct(r.error), ",".join(r.flags) or "-") for r in rows]
    return _render(head, body, markdown)


def tables(rows: list[Scored], markdown: bool) -> list[str]:
    lines = []
    for title, key in (("card", lambda r: r.card), ("source", lambda r: r.source),
                       ("card x source", lambda r: f"{r.card} / {r.source}"),
                       ("source x precision", lambda r: f"{r.source} / {r.precision}"), ("all", lambda r: "all")):
        lines += _table(title, summary(rows, key), markdown) + [""]
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    out = ap.add_mutually_exclusive_group()
    out.add_argument("--markdown", action="store_true", help="Markdown tables")
    out.add_argument("--json", action="store_true", help="every record with its prediction, and the summary")
    ap.add_argument("--aside", action="store_true", help="ONLY the set-aside records (the final blind check)")
    ap.add_argument("--data", type=Path, default=None, help=f"folder of source files (default: {DATA_DIR})")
    ap.add_argument("--no-records", action="store_true", help="the summary tables only")
    ap.add_argument("--write", type=Path, default=None, help="also write the Markdown report (tables, then records) here")
    args = ap.parse_args(argv)
    data = ASIDE_DIR if args.aside else (args.data or DATA_DIR)
    sources = load_sources(data)
    if not sources:
        print(f"no source files in {data}", file=sys.stderr)
        return 2
    rows = score(sources)
    if args.json:
        doc = {"records": [{**asdict(r), "error": r.error} for r in rows],
               "by_card": summary(rows, lambda r: r.card), "by_source": summary(rows, lambda r: r.source),
               "all": summary(rows, lambda r: "all")}
        print(json.dumps(doc, indent=1))
        return 0
    lines = [] if args.no_records else record_lines(rows, args.markdown) + [""]
    print("\n".join(lines + tables(rows, args.markdown)).rstrip())
    if args.write is not None:
        args.write.write_text(report(rows, data))
    return 0


def report(rows: list[Scored], data: Path) -> str:
    """The Markdown report: what was scored and how, the tables, then every record."""
    where = data.relative_to(ROOT) if data.is_relative_to(ROOT) else data
    head = ["# Published training throughputs: the tool's predicted step against the published one", "",
            f"Generated by `python benchmarks/reports/training_published_score.py --write ...` from `{where}`; "
            "docs/published.md (\"Training throughputs\") says how each source ran and how it is scored. "
            "error = (predicted - measured) / measured on one GPU's step time: + is a slower predicted step.", ""]
    return "\n".join(head + tables(rows, True) + ["## Records", ""] + record_lines(rows, True)) + "\n"


if __name__ == "__main__":
    sys.exit(main())
