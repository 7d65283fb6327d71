"""The published training throughputs (benchmarks/published/training/*.json) and their scorer
(benchmarks/reports/training_published_score.py).

Every record, visible or set aside, must name a catalog card, a workload that loads, a training precision and
optimizer of the tool, a positive value and a pointer to the published row; the scorer runs on a 2-record
fixture. The set-aside records are validated here (fields only), never scored here.
"""

from __future__ import annotations

import importlib.util
import json
import math
import sys

import pytest

from tests.paths import REPO
from tops_advisor.api import load_catalog


def _scorer():
    path = REPO / "benchmarks" / "reports" / "training_published_score.py"
    spec = importlib.util.spec_from_file_location("training_published_score", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


tps = _scorer()
SOURCES = tps.load_sources()
ASIDE = tps.load_sources(tps.ASIDE_DIR)
ALL = [(where, doc["file"], i, rec) for where, docs in (("visible", SOURCES), ("aside", ASIDE))
       for doc in docs for i, rec in enumerate(doc["records"])]
CARD_IDS = {hw.id for hw in load_catalog()}


def test_sources_and_aside_are_split_one_third():
    assert {d["file"] for d in SOURCES} == {d["file"] for d in ASIDE}
    for vis in SOURCES:
        aside = next(d for d in ASIDE if d["file"] == vis["file"])
        total = len(vis["records"]) + len(aside["records"])
        assert len(aside["records"]) == total // 3          # positions 3, 6, 9, ... of the collection
        assert aside["source"] == vis["source"]
        pointers = {r["pointer"] for r in vis["records"]}
        assert not pointers & {r["pointer"] for r in aside["records"]}


def test_the_scorer_does_not_read_the_aside_folder_by_default(tmp_path):
    assert tps.ASIDE_DIR.parent == tps.DATA_DIR
    (tmp_path / "aside").mkdir()
    for path in (tmp_path / "top.json", tmp_path / "aside" / "held.json"):
        path.write_text(json.dumps({"source": {}, "records": [], "notes": []}))
    assert [d["file"] for d in tps.load_sources(tmp_path)] == ["top.json"]


def test_library_models_exist_in_timm():
    timm = pytest.importorskip("timm")
    names = {rec["workload"].split(":", 1)[1] for _, _, _, rec in ALL if rec["workload"].startswith("timm:")}
    assert names and names <= set(timm.list_models())


@pytest.mark.parametrize("doc", SOURCES + ASIDE, ids=lambda d: d["file"])
def test_source_block(doc):
    missing = [f for f in tps.SOURCE_FIELDS if not doc["source"].get(f)]
    assert not missing, missing
    assert doc["notes"], "say what could not be mapped"


@pytest.mark.parametrize("where,file,i,rec", ALL, ids=[f"{w}:{f}:{i}" for w, f, i, _ in ALL])
def test_record_validates(where, file, i, rec):
    assert tps.record_problems(rec, CARD_IDS) == []
    tps.resolve_workload(rec)


def test_a_record_with_problems_is_told_so():
    rec = {**SOURCES[0]["records"][0], "card": "h300-imaginary", "precision": "fp8", "gpus": 2}
    rec.pop("strategy", None)
    problems = tps.record_problems(rec, CARD_IDS)
    assert any("h300-imaginary" in p for p in problems)
    assert any("fp8" in p for p in problems)
    assert any("strategy" in p for p in problems)


def test_mpt_configs_reproduce_the_published_parameter_counts():
    """llm-foundry prints NumParams per row; the gpt2-style config with n_positions = the row's sequence length
    must give exactly that count (the mapping of MPT, not the tool, is under test)."""
    rows = [r for _, f, _, r in ALL if f == "llm_foundry.json"]
    assert rows
    for rec in rows:
        assert tps.llm_config(rec).params == rec["also_published"]["num_params"], rec["pointer"]


def test_measured_step_time_from_the_published_throughput():
    # 8 GPUs at 800 img/s together, 256 per GPU: each GPU does 100 img/s, a step takes 256 / 100 = 2.56 s
    rec = {"metric": "samples_per_s_total", "value": 800, "gpus": 8, "batch": 256}
    assert tps.measured_step_s(rec) == pytest.approx(2.56)
    # 1000 tokens/s per GPU, 2 sequences of 4096 tokens per micro-batch: 8192 / 1000 = 8.192 s
    rec = {"metric": "tokens_per_s_per_gpu", "value": 1000, "gpus": 64, "batch": 2, "seq": 4096}
    assert tps.measured_step_s(rec) == pytest.approx(8.192)


FIXTURE_RECORDS = [
    {"card": "v100-sxm2-32gb", "card_as_published": "fixture", "workload": "examples/small_cnn.py", "batch": 64,
     "gpus": 1, "precision": "amp", "optimizer": "sgd", "optimizer_as_run": "fixture", "metric": "samples_per_s_total",
     "value": 20000, "pointer": "fixture row 1"},
    {"card": "a100-sxm4-80gb", "card_as_published": "fixture", "workload": "llm:llama2-7b", "batch": 1, "seq": 2048,
     "gpus": 8, "strategy": "fsdp", "grad_accum": 4, "precision": "amp-bf16", "optimizer": "adamw",
     "optimizer_as_run": "fixture", "checkpointing": "full", "metric": "tokens_per_s_per_gpu", "value": 3000,
     "pointer": "fixture row 2"},
]


def _fixture_dir(tmp_path, records):
    source = {"title": "fixture", "url": "-", "version": "-", "table": "-", "how_run": "-"}
    (tmp_path / "fixture.json").write_text(json.dumps({"source": source, "records": records, "notes": ["-"]}))
    return tmp_path


def test_scorer_runs_on_a_two_record_fixture(tmp_path, capsys):
    assert tps.main(["--json", "--data", str(_fixture_dir(tmp_path, FIXTURE_RECORDS))]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert len(doc["records"]) == 2
    for row, rec in zip(doc["records"], FIXTURE_RECORDS, strict=True):
        assert row["measured_s"] == pytest.approx(tps.measured_step_s(rec))
        assert math.isfinite(row["predicted_s"]) and row["predicted_s"] > 0
        assert row["error"] == pytest.approx((row["predicted_s"] - row["measured_s"]) / row["measured_s"])
    assert doc["all"][0]["n"] == 2
    out = tmp_path / "out" / "report.md"
    out.parent.mkdir()
    assert tps.main(["--markdown", "--data", str(tmp_path), "--write", str(out)]) == 0
    assert "| card |" in capsys.readouterr().out
    assert "fixture.json" in out.read_text() and "## Records" in out.read_text()


def test_gradient_accumulation_amortises_only_the_optimizer():
    """With grad_accum 4 the micro-batch is the planned step less 3/4 of the predicted optimizer part."""
    from tops_advisor.api import TrainSetup, calibration_for, device_perf, predict_training
    from tops_advisor.llm import training_workload

    rec = FIXTURE_RECORDS[1]
    one = tps.Predictor().predict({**rec, "grad_accum": 1})[0]
    four = tps.Predictor().predict(rec)[0]
    hw = load_catalog().get(rec["card"])
    tw = training_workload("llama2-7b", 1, 2048, TrainSetup("amp-bf16", "adamw", checkpointing=True))
    opt_s = predict_training(tw, hw, perf=device_perf(hw, *calibration_for(hw))).optimizer_s
    assert opt_s > 0
    assert one - four == pytest.approx(0.75 * opt_s)


def test_no_source_files_is_one_line_and_exit_2(tmp_path, capsys):
    assert tps.main(["--data", str(tmp_path)]) == 2
    assert capsys.readouterr().err.count("\n") == 1
