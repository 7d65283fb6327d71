"""The published-measurement dataset (benchmarks/published/*.json) and its scorer (benchmarks/reports/published_score.py).

Every record must name a catalog card, a workload that exists (a model file, an LLM preset or a GEMM shape), a
positive value and a pointer to the published row; every source must say where it comes from.
"""

from __future__ import annotations

import json

import pytest

from tests.paths import REPO, load_script
from tops_advisor.api import load_catalog

ps = load_script("benchmarks/reports/published_score.py", "published_score")
SOURCES = ps.load_sources()
RECORDS = [(doc["file"], i, rec) for doc in SOURCES for i, rec in enumerate(doc["records"])]
# The round-2 records set aside for the final blind check: validated here (fields only), never scored here.
ASIDE = ps.load_sources(ps.ASIDE_DIR)
ASIDE_RECORDS = [(doc["file"], i, rec) for doc in ASIDE for i, rec in enumerate(doc["records"])]
# The round-3 records set aside (benchmarks/published/aside-round3/README.md): fields only, never scored here.
ASIDE3 = ps.load_sources(ps.DATA_DIR / "aside-round3")
ASIDE3_RECORDS = [(doc["file"], i, rec) for doc in ASIDE3 for i, rec in enumerate(doc["records"])]
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


@pytest.mark.parametrize("doc", ASIDE, ids=[f"aside/{d['file']}" for d in ASIDE])
def test_every_aside_source_says_where_it_comes_from(doc):
    assert ps.source_problems(doc) == []
    assert doc["source"]["url"].startswith("https://")


@pytest.mark.parametrize("file,index,rec", ASIDE_RECORDS, ids=[f"aside/{f}#{i}" for f, i, _ in ASIDE_RECORDS])
def test_every_aside_record_validates(file, index, rec):
    assert ps.record_problems(rec, CARD_IDS) == []


@pytest.mark.parametrize("file,index,rec", ASIDE3_RECORDS, ids=[f"aside-round3/{f}#{i}" for f, i, _ in ASIDE3_RECORDS])
def test_every_round3_aside_record_validates(file, index, rec):
    assert ps.record_problems(rec, CARD_IDS) == []


def test_round3_aside_records_are_apart_from_the_default_set():
    assert ASIDE3 and {doc["file"] for doc in ASIDE3} <= {doc["file"] for doc in SOURCES}
    pointers = {rec["pointer"] for _, _, rec in RECORDS}
    assert not any(rec["pointer"] in pointers for _, _, rec in ASIDE3_RECORDS)
    for doc in ASIDE3:   # the same source block on both sides of the split
        assert doc["source"] == next(d["source"] for d in SOURCES if d["file"] == doc["file"])


def test_aside_records_are_apart_from_the_default_set():
    visible = {doc["file"] for doc in SOURCES}
    assert ASIDE and {doc["file"] for doc in ASIDE} <= visible   # each aside file has its visible half
    pointers = {rec["pointer"] for _, _, rec in RECORDS}
    assert not any(rec["pointer"] in pointers for _, _, rec in ASIDE_RECORDS)   # no record in both halves
    assert ps.DATA_DIR / "aside" == ps.ASIDE_DIR
    with pytest.raises(SystemExit):
        ps.main(["--aside", "--write-bands"])   # aside records never reach the CLI's bands


def test_power_modes_are_validated_and_change_the_card():
    rec = {"card": "jetson-agx-orin-64gb", "workload": "gemm:4096x4096x4096", "batch": 1, "precision": "fp16",
           "run": "kernel", "metric": "tflops", "value": 10.0, "pointer": "x"}
    assert ps.record_problems({**rec, "power_mode": "MAXN"}, CARD_IDS) == []
    assert "power_mode must be" in " ".join(ps.record_problems({**rec, "power_mode": ""}, CARD_IDS))
    predictor = ps.Predictor()
    maxn = predictor.latency_s({**rec, "power_mode": "MAXN"})
    low = predictor.latency_s({**rec, "power_mode": "15W"})
    # 15W: 6 of 16 SMs at 408 of 1300 MHz (hardware_db/jetson-agx-orin-64gb.toml): a compute-bound GEMM is slower
    assert low > 2 * maxn
    assert predictor.latency_s(rec) == maxn   # no power_mode: the datasheet mode (MAXN)


def test_regimes_follow_the_ordered_table():
    base = {"workload": "examples/resnet50.py", "run": "engine", "engine": "tensorrt"}
    assert ps.regime_of(base) == "tensorrt engine"
    assert ps.regime_of({**base, "workload": "llm:llama2-7b", "engine": "llama.cpp Q4_0"}) == "llama.cpp"
    assert ps.regime_of({**base, "run": "compiled"}) == "pytorch compiled (model)"
    assert ps.regime_of({**base, "run": "amp"}) == "pytorch eager (model)"
    assert ps.regime_of({**base, "workload": "llm:llama2-7b", "run": "compiled"}) == "llm (other runs)"
    assert ps.regime_of({**base, "workload": "gemm:8x8x8", "run": "kernel"}) == "gemm"


def test_problems_are_reported():
    bad = {"card": "h100-sxn", "workload": "examples/nope.py", "batch": 0, "precision": "fp16", "run": "jit",
           "metric": "fps", "value": -1, "pointer": "x"}
    problems = " | ".join(ps.record_problems(bad, CARD_IDS))
    for part in ("unknown card 'h100-sxn'", "no model file", "unknown metric", "unknown run", "value must be",
                 "batch must be"):
        assert part in problems
    assert ps.record_problems({"card": "t4"}, CARD_IDS)[0].startswith("missing ")
    assert "clock must be 'sustained' or 'burst'" in " ".join(ps.record_problems({**bad, "clock": "max"}, CARD_IDS))
    assert ps.record_problems({**bad, "workload": "llm:llama9"}, CARD_IDS)[1] == "unknown LLM preset 'llama9'"
    assert "bad GEMM shape" in " ".join(ps.record_problems({**bad, "workload": "gemm:1x2"}, CARD_IDS))


def test_library_models_are_workloads():
    rec = {"card": "t4", "workload": "timm:resnext101_32x4d", "batch": 1, "precision": "fp32", "run": "eager",
           "metric": "throughput_per_s", "value": 55, "pointer": "x"}
    assert ps.record_problems(rec, CARD_IDS) == []
    assert ps.record_problems({**rec, "workload": "torchvision:resnet18"}, CARD_IDS) == []
    assert ps.record_problems({**rec, "workload": "timm:"}, CARD_IDS)[0].startswith("bad library model 'timm:'")
    assert ps.record_problems({**rec, "workload": "keras:resnet50"}, CARD_IDS) == ["no model file 'keras:resnet50'"]
    assert ps.model_spec("timm:resnext101_32x4d") == "timm:resnext101_32x4d"   # counted by name, not as a path
    assert ps.model_spec("examples/resnet50.py") == REPO / "examples" / "resnet50.py"
    assert ps.record_kind("timm:resnext101_32x4d") == "model"


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
    assert ps.mode_and_flag("amp") == ("eager", "")   # --dtype amp predicts autocast
    assert ps.mode_and_flag("engine")[1] == "mode not modelled (engine)"
    assert ps.mode_and_flag("tensorrt") == ("tensorrt", "")   # the TensorRT profile (docs/tensorrt.md)


def test_tensorrt_records_are_scored_apart_from_the_pytorch_tables(tmp_path, capsys):
    engine = {"card": "a100-sxm4-80gb", "workload": "examples/small_cnn.py", "batch": 8, "precision": "int8",
              "run": "tensorrt", "metric": "throughput_per_s", "value": 1000.0, "pointer": "made up"}
    doc = {**FIXTURE, "records": [FIXTURE["records"][0], engine]}
    (tmp_path / "mlperf_fixture.json").write_text(json.dumps(doc))
    assert ps.main(["--data", str(tmp_path), "--json"]) == 0
    assert [r["run"] for r in json.loads(capsys.readouterr().out)["records"]] == ["kernel"]
    assert ps.main(["--data", str(tmp_path), "--tensorrt", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [r["run"] for r in out["records"]] == ["tensorrt"] and out["records"][0]["predicted_s"] > 0
    assert out["per_source"]["mlperf_fixture.json"]["n"] == 1
    assert out["per_card"]["a100-sxm4-80gb"]["n"] == 1 and out["all"]["n"] == 1
    assert ps.main(["--data", str(tmp_path), "--tensorrt"]) == 0
    table = capsys.readouterr().out
    assert "\ncard " in table and "\nall " in table   # the per-card table the done-when reads


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


def _row(card, workload, error):
    return ps.Scored(source="s.json", card=card, workload=workload, batch=1, precision="fp16", run="eager",
                     detail="", measured_s=1.0, predicted_s=1.0 + error, flag="")


def test_bands_document_groups_by_card_class_and_kind():
    rows = [_row("t4", "examples/resnet50.py", e) for e in (0.1, -0.2, 0.3, 0.4)]
    rows.append(_row("rtx-4090", "llm:llama2-7b", 0.5))
    doc = ps.bands_document(rows, load_catalog())
    assert doc["command"] == ps.BANDS_COMMAND
    t4 = doc["cards"]["t4"]
    assert t4["model"] == t4["all"] and t4["all"]["n"] == 4
    assert t4["all"]["median_abs_error"] == pytest.approx(0.25) and t4["all"]["worst_abs_error"] == 0.4
    assert doc["classes"]["Turing datacenter"]["all"]["n"] == 4
    assert doc["classes"]["Ada Lovelace workstation"]["llm"]["n"] == 1
    assert doc["all_cards"]["all"]["n"] == 5


def test_engine_rows_have_their_own_band_and_stay_out_of_the_pytorch_ones():
    rows = [_row("t4", "examples/resnet50.py", e) for e in (0.1, -0.2, 0.3, 0.4)]
    engine = [ps.Scored(source="m.json", card="t4", workload="examples/resnet50.py", batch=1, precision="int8",
                        run="tensorrt", detail="", measured_s=1.0, predicted_s=1.0 + e, flag="")
              for e in (-0.4, -0.3, 0.05)]
    doc = ps.bands_document(rows + engine, load_catalog())
    t4 = doc["cards"]["t4"]
    assert t4["all"] == t4["model"] and t4["all"]["n"] == 4          # the PyTorch bands as without engines
    assert t4["tensorrt"]["n"] == 3 and t4["tensorrt"]["median_abs_error"] == pytest.approx(0.3)
    assert t4["tensorrt"]["worst_abs_error"] == pytest.approx(0.4)
    only_engines = ps.bands_document(engine, load_catalog())["cards"]["t4"]
    assert set(only_engines) == {"tensorrt"}                        # no empty PyTorch band


def test_card_band_uses_the_card_then_its_class_then_every_card():
    from tops_advisor.accuracy import card_band, expected_error, llm_expected_error

    cat = {hw.id: hw for hw in load_catalog()}
    band = {"n": 5, "median_abs_error": 0.2, "worst_abs_error": 0.5, "median_error": 0.1}
    few = {**band, "n": 2, "median_abs_error": 0.9}
    cards = {"cards": {"t4": {"all": band, "model": band}, "rtx-4090": {"all": few}},
             "classes": {"Ampere workstation": {"all": {**band, "median_abs_error": 0.3}}},
             "all_cards": {"all": {**band, "n": 40, "median_abs_error": 0.4}}}
    assert card_band(cat["t4"], cards=cards).basis == "t4"
    assert card_band(cat["rtx-3090-ti"], cards=cards).median_abs_error == 0.3   # its class
    assert card_band(cat["rtx-4090"], cards=cards).median_abs_error == 0.4      # 2 points: every card
    assert "t4" in llm_expected_error(cat["t4"], False, cards).text
    h200 = {"hardware": "h200-sxm", "card_class": "H200",
            "bands": [{"family": "cnn", "mode": "graph", "calibrated": c, "median_abs_error": 0.1,
                       "worst_abs_error": 0.3, "n": 9} for c in (False, True)]}
    # datasheet-only on another card: that card's band; calibrated, or on the summary's own card: the H200's
    assert expected_error("cnn", "graph", False, h200, hardware=cat["t4"], cards=cards).basis == "t4"
    assert expected_error("cnn", "graph", True, h200, hardware=cat["t4"], cards=cards).card == "H200"
    assert expected_error("cnn", "graph", False, h200, hardware=cat["h200-sxm"], cards=cards).card == "H200"


def test_shipped_bands_name_their_command():
    from tops_advisor.accuracy import CARDS_PATH

    doc = json.loads(CARDS_PATH.read_text())
    assert doc["command"] == ps.BANDS_COMMAND and doc["cards"] and doc["all_cards"]["all"]["n"] >= 100


def test_card_band_prefers_the_same_kind_of_workload_over_the_same_card():
    from tops_advisor.accuracy import card_band

    rtx = {hw.id: hw for hw in load_catalog()}["rtx-3090"]
    llm = {"n": 8, "median_abs_error": 0.05, "worst_abs_error": 0.2, "median_error": 0.0}
    cnn = {"n": 70, "median_abs_error": 0.3, "worst_abs_error": 0.7, "median_error": 0.1}
    cards = {"cards": {"rtx-3090": {"all": llm, "llm": llm}}, "classes": {}, "all_cards": {"all": cnn, "model": cnn}}
    # a CNN on a card scored only on LLM runs: every card's CNN band, not the card's LLM band
    assert card_band(rtx, "model", cards).basis == "all published cards"
    assert card_band(rtx, "llm", cards).basis == "rtx-3090"


def test_amp_rows_count_autocast_and_channels_last_runs_convolutions_as_gemms():
    rec = {"card": "v100-sxm2-32gb", "workload": "examples/small_cnn.py", "batch": 8192, "precision": "fp16",
           "run": "amp", "metric": "throughput_per_s", "value": 1.0}
    predictor = ps.Predictor()
    amp = predictor.latency_s(rec)
    half = predictor.latency_s({**rec, "run": "eager"})
    nhwc = predictor.latency_s({**rec, "layout": "channels_last"})
    assert amp != half                  # autocast's casts and cuDNN batch norm, not model.half()
    assert nhwc < amp                   # NHWC implicit GEMMs: no layout conversions, no convolution factor


def test_compiled_and_amp_predictions_quote_their_blind_round_band():
    from tops_advisor.accuracy import BLIND_PATH, blind_band, expected_error

    doc = {"hardware": "h200-sxm", "bands": [
        {"mode": "compiled", "dtype": "fp16", "calibrated": False, "round": "round X", "median_abs_error": 0.08,
         "worst_abs_error": 0.66, "n": 20},
        {"mode": "graph", "dtype": "amp", "calibrated": False, "round": "round X", "median_abs_error": 0.1,
         "worst_abs_error": 0.5, "n": 20}]}
    band = blind_band("compiled", "fp16", False, doc)
    assert band.n == 20 and "round X" in band.text and "compiled mode" in band.text
    assert blind_band("compiled", "fp16", True, doc) is None      # no calibrated band in this document
    assert blind_band("eager", "amp", False, doc) is None
    h200 = {hw.id: hw for hw in load_catalog()}["h200-sxm"]
    summary = {"hardware": "h200-sxm", "card_class": "H200", "bands": [
        {"family": "cnn", "mode": "graph", "calibrated": False, "median_abs_error": 0.1, "worst_abs_error": 0.3,
         "n": 9}]}
    assert expected_error("cnn", "graph", False, summary, hardware=h200).n == 9
    # the shipped blind bands: compiled fp16 and AMP graph, from a round of at least 8 models at two batches
    shipped = json.loads(BLIND_PATH.read_text())
    assert expected_error("cnn", "compiled", False, summary, hardware=h200).n >= 16
    assert expected_error("cnn", "graph", False, summary, hardware=h200, dtype="amp").mode == "graph"
    assert {(b["mode"], b["dtype"]) for b in shipped["bands"]} >= {("compiled", "fp16"), ("graph", "amp")}


def test_burst_records_are_scored_at_the_cards_burst_clock():
    rec = {"card": "rtx-5090", "workload": "gemm:8192x8192x8192", "batch": 1, "precision": "fp16",
           "run": "kernel", "metric": "tflops", "value": 200.0, "pointer": "x"}
    predictor = ps.Predictor()
    sustained, burst = predictor.latency_s(rec), predictor.latency_s({**rec, "clock": "burst"})
    hw = predictor.catalog.get("rtx-5090")
    assert sustained / burst == pytest.approx(hw.burst_clock_mhz / hw.boost_clock_mhz, rel=0.02)


def test_sequence_and_packed_length_fields_are_validated():
    rec = {"card": "a100-sxm4-80gb", "workload": "examples/bert_large_squad.py", "batch": 8, "precision": "int8",
           "run": "tensorrt", "metric": "throughput_per_s", "value": 100.0, "pointer": "x"}
    assert ps.record_problems({**rec, "sequence": 128}, CARD_IDS) == []
    assert ps.record_problems({**rec, "tokens_per_sample": 176.6, "tokens_source": "a paper"}, CARD_IDS) == []
    for bad, says in (({"sequence": 0}, "sequence must be a positive integer"),
                      ({"sequence": 12.5}, "sequence must be a positive integer"),
                      ({"tokens_per_sample": 0.5, "tokens_source": "s"}, "tokens_per_sample must be a number >= 1"),
                      ({"tokens_per_sample": 170}, "without tokens_source"),
                      ({"tokens_per_sample": 170, "tokens_source": "s", "sequence": 384}, "exclude each other"),
                      ({"tokens_per_sample": 170, "tokens_source": "s", "run": "eager"}, "applies to run 'tensorrt'")):
        assert says in " | ".join(ps.record_problems({**rec, **bad}, CARD_IDS)), bad


def test_counted_sequence_is_the_fixed_length_or_the_rounded_mean_of_a_packed_engine():
    assert ps.counted_sequence({"sequence": 128}) == 128
    assert ps.counted_sequence({"tokens_per_sample": 176.6}) == 177
    assert ps.counted_sequence({"tokens_per_sample": 176.6}, packed=False) is None   # --padded: the file's length
    assert ps.counted_sequence({}) is None
    assert "packed, mean 176.6 tokens" in ps.detail({"tokens_per_sample": 176.6})


TEXT_MODEL = ("import torch\nfrom torch import nn\nimport torch.nn.functional as F\n\n"
              "class M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
              "        self.emb = nn.Embedding(100, 16)\n        self.proj = nn.Linear(16, 16)\n\n"
              "    def forward(self, ids):\n        q = self.proj(self.emb(ids)).unsqueeze(1)\n"
              "        return F.scaled_dot_product_attention(q, q, q)\n\n"
              "def build_model():\n    return M()\n\n"
              "def example_inputs(batch_size, sequence=32):\n    return torch.randint(0, 100, (batch_size, sequence))\n")


def test_a_packed_engine_is_counted_at_its_mean_tokens(tmp_path):
    """A packed engine (tokens_per_sample 20 of a 32-token file) computes batch x 20 tokens in its GEMMs and
    each sequence's attention at 20 tokens: GEMM work x 20/32, attention x (20/32)^2 against the padded count."""
    path = tmp_path / "tiny_text.py"
    path.write_text(TEXT_MODEL)
    rec = {"card": "a100-sxm4-80gb", "workload": str(path), "batch": 4, "precision": "fp16", "run": "tensorrt",
           "metric": "throughput_per_s", "value": 100.0, "pointer": "x", "tokens_per_sample": 20.0,
           "tokens_source": "made up"}

    def flops(predictor, kind):
        w = predictor.model_case(rec)[0]
        return sum(op.flops for op in w.ops if op.kind == kind)

    packed, padded = ps.Predictor(), ps.Predictor(packed=False)
    assert flops(packed, "matmul") == pytest.approx(flops(padded, "matmul") * 20 / 32)
    assert flops(packed, "attention") == pytest.approx(flops(padded, "attention") * (20 / 32) ** 2)
    assert flops(padded, "matmul") > 0 and flops(padded, "attention") > 0
    assert packed.latency_s(rec) < padded.latency_s(rec)
