"""The published-measurement dataset (benchmarks/published/*.json) and its scorer (benchmarks/published_score.py).

Every record must name a catalog card, a workload that exists (a model file, an LLM preset or a GEMM shape), a
positive value and a pointer to the published row; every source must say where it comes from.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from tops_advisor.api import load_catalog

ROOT = Path(__file__).resolve().parent.parent


def _scorer():
    spec = importlib.util.spec_from_file_location("published_score", ROOT / "benchmarks" / "published_score.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


ps = _scorer()
SOURCES = ps.load_sources()
RECORDS = [(doc["file"], i, rec) for doc in SOURCES for i, rec in enumerate(doc["records"])]
CARD_IDS = {hw.id for hw in load_catalog()}


def test_there_is_data_beyond_one_card():
    assert len(SOURCES) >= 4
    assert len({rec["card"] for _, _, rec in RECORDS}) >= 8
    assert "h200-sxm" not in {rec["card"] for _, _, rec in RECORDS}  # the card the tool was fitted on


@pytest.mark.parametrize("doc", SOURCES, ids=[d["file"] for d in SOURCES])
def test_every_source_says_where_it_comes_from(doc):
    assert ps.source_problems(doc) == []
    assert doc["source"]["url"].startswith("https://")
    assert isinstance(doc.get("notes", []), list)


@pytest.mark.parametrize("file,index,rec", RECORDS, ids=[f"{f}#{i}" for f, i, _ in RECORDS])
def test_every_record_validates(file, index, rec):
    assert ps.record_problems(rec, CARD_IDS) == []


def test_problems_are_reported():
    bad = {"card": "h100-sxn", "workload": "examples/nope.py", "batch": 0, "precision": "fp16", "run": "jit",
           "metric": "fps", "value": -1, "pointer": "x"}
    problems = " | ".join(ps.record_problems(bad, CARD_IDS))
    for part in ("unknown card 'h100-sxn'", "no model file", "unknown metric", "unknown run", "value must be",
                 "batch must be"):
        assert part in problems
    assert ps.record_problems({"card": "t4"}, CARD_IDS)[0].startswith("missing ")
    assert ps.record_problems({**bad, "workload": "llm:llama9"}, CARD_IDS)[1] == "unknown LLM preset 'llama9'"
    assert "bad GEMM shape" in " ".join(ps.record_problems({**bad, "workload": "gemm:1x2"}, CARD_IDS))


def test_measured_latency_conversions():
    # 1024 x 1024 x 1024 at 2.147... TFLOPS: 2 * 1024^3 = 2.147e9 operations -> 1 ms
    gemm = {"workload": "gemm:1024x1024x1024", "metric": "tflops", "value": 2 * 1024**3 / 1e9, "batch": 1}
    assert ps.measured_latency_s(gemm) == pytest.approx(1e-3)
    # 256 images at 1280 img/s -> 0.2 s per batch
    assert ps.measured_latency_s({"metric": "throughput_per_s", "value": 1280, "batch": 256}) == pytest.approx(0.2)
    # a 512-token prefill at 5120 tokens/s -> 0.1 s; a decode step at 100 tokens/s -> 10 ms
    prefill = {"metric": "tokens_per_s", "value": 5120, "batch": 1, "phase": "prefill", "prompt": 512}
    assert ps.measured_latency_s(prefill) == pytest.approx(0.1)
    assert ps.measured_latency_s({"metric": "tokens_per_s", "value": 100, "batch": 1, "phase": "decode"}) == 0.01


def test_runs_map_to_modes_and_flags():
    assert ps.mode_and_flag("eager") == ("eager", "")
    assert ps.mode_and_flag("cuda-graph") == ("graph", "")
    assert ps.mode_and_flag("kernel") == ("graph", "")
    assert ps.mode_and_flag("amp")[1].startswith("mode not modelled")
    assert ps.mode_and_flag("engine")[1] == "mode not modelled (engine)"


FIXTURE = {
    "source": {"title": "fixture", "url": "https://example.org", "version": "1", "table": "t"},
    "records": [
        {"card": "h100-sxm", "workload": "gemm:4096x4096x4096", "batch": 1, "precision": "bf16", "run": "kernel",
         "metric": "tflops", "value": 700.0, "pointer": "made up"},
        {"card": "a100-sxm4-80gb", "workload": "llm:llama2-7b", "batch": 1, "precision": "bf16",
         "run": "compiled", "metric": "tokens_per_s", "value": 100.0, "phase": "decode", "context": 128,
         "tp": 1, "pointer": "made up"},
    ],
    "notes": [],
}


def test_scorer_runs_on_a_two_record_fixture(tmp_path, capsys):
    (tmp_path / "fixture.json").write_text(json.dumps(FIXTURE))
    rows = ps.score(ps.load_sources(tmp_path))
    assert [r.card for r in rows] == ["h100-sxm", "a100-sxm4-80gb"]
    assert all(r.predicted_s > 0 and r.measured_s > 0 for r in rows)
    assert rows[0].flag == "" and rows[1].flag == "mode not modelled (compiled)"
    summ = ps.summary(rows)
    assert summ["overall"]["all"]["n"] == 2 and summ["overall"]["modelled runs"]["n"] == 1

    assert ps.main(["--data", str(tmp_path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out["records"]) == 2 and set(out["summary"]["per_card"]) == {"h100-sxm", "a100-sxm4-80gb"}
    assert ps.main(["--data", str(tmp_path), "--markdown"]) == 0
    md = capsys.readouterr().out
    assert md.startswith("| card | n |") and "| h100-sxm | 1 |" in md
