"""The accuracy bands (tops_advisor/accuracy.py): the model family, the bands summarised from measured rows, the
shipped summary, and the band analyze reports (with and without blind rounds)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from tops_advisor.accuracy import describe, expected_error, model_family, summarise_rows
from tops_advisor.cli import cli


def run(args):
    return CliRunner().invoke(cli, args)


def test_model_family_from_op_kinds():
    assert model_family(["conv", "norm", "matmul"]) == "cnn"
    assert model_family(["matmul", "attention", "softmax"]) == "transformer"
    assert model_family(SimpleNamespace(ops=[SimpleNamespace(kind="attention")])) == "transformer"


def test_bands_summarise_and_look_up():
    rows = [{"family": "cnn", "mode": "graph", "err_default": e, "err_calibrated": e / 2}
            for e in (0.1, -0.2, 0.4)]
    summary = summarise_rows(rows, "H200", "docs/accuracy.md")
    band = expected_error("cnn", "graph", True, summary)
    # calibrated errors 0.05, 0.1, 0.2: median 0.1, worst 0.2
    assert band.median_abs_error == pytest.approx(0.1) and band.worst_abs_error == pytest.approx(0.2)
    assert band.text == ("expected error on H200-class measurements: median 10%, worst 20% "
                            "(CNNs, graph mode, calibrated; n=3)")
    assert expected_error("transformer", "graph", True, summary) is None
    assert "datasheet defaults" in describe(expected_error("cnn", "graph", False, summary))


def test_shipped_summary_has_every_band():
    from tops_advisor.accuracy import SUMMARY_PATH, load_summary

    assert SUMMARY_PATH.is_file()
    summary = load_summary()
    for family in ("cnn", "transformer"):
        for mode in ("graph", "eager"):
            for calibrated in (False, True):
                band = expected_error(family, mode, calibrated, summary)
                assert band is not None and 0 <= band.median_abs_error <= band.worst_abs_error


def test_analyze_carries_the_expected_error_band():
    res = run(["analyze", "examples/small_cnn.py", "-H", "h200-sxm", "--mode", "eager", "--json"])
    assert res.exit_code == 0, res.output
    band = json.loads(res.stdout)["expected_error"]
    # small_cnn has no attention operator: a CNN; eager mode; the shipped H200 calibration is used
    assert (band["family"], band["mode"], band["calibrated"]) == ("cnn", "eager", True)
    assert band["text"].startswith("expected error on H200-class measurements: median ")
    res = run(["analyze", "examples/vit_b16.py", "-H", "h200-sxm", "--no-calibration"])
    # the band is a bullet wrapped to the console's width: compare with the line breaks taken out
    assert "(transformers, graph mode, datasheet defaults; n=" in " ".join(res.stdout.split())


def test_a_band_without_blind_rounds_has_no_such_key_in_json():
    from tops_advisor.render.json_units import band_json

    summary = {"card_class": "H200", "bands": [{"family": "cnn", "mode": "graph", "calibrated": True,
                                                "median_abs_error": 0.1, "worst_abs_error": 0.2, "n": 3}]}
    band = expected_error("cnn", "graph", True, summary)
    assert band.source == "report" and band.blind_rounds == ()
    assert list(band_json(band)) == ["family", "mode", "calibrated", "median_abs_error", "worst_abs_error", "n",
                                     "card", "text"]
    rounds = {**summary, "blind_rounds": [{"median_abs_error": 0.2, "worst_abs_error": 0.7}]}
    assert band_json(expected_error("cnn", "graph", True, rounds))["blind_rounds"] == [
        {"median_abs_error": 0.2, "worst_abs_error": 0.7}]


# --- borrowed bands: a band from other cards says so ---------------------------------------------------------

CARDS = {"cards": {"t4": {"all": {"n": 5, "median_abs_error": 0.2, "worst_abs_error": 0.5},
                          "model": {"n": 5, "median_abs_error": 0.2, "worst_abs_error": 0.5}},
                   "mi300x": {"gemm": {"n": 1, "median_abs_error": 0.01, "worst_abs_error": 0.01},
                              "all": {"n": 1, "median_abs_error": 0.01, "worst_abs_error": 0.01}}},
         "classes": {}, "all_cards": {"all": {"n": 40, "median_abs_error": 0.09, "worst_abs_error": 0.4},
                                      "model": {"n": 30, "median_abs_error": 0.09, "worst_abs_error": 0.3}}}


def test_a_card_band_from_other_cards_is_marked_borrowed():
    from tops_advisor.accuracy import card_band
    from tops_advisor.catalog import load_catalog

    cat = load_catalog()
    own = card_band(cat.get("t4"), "model", CARDS)
    assert not own.borrowed and own.unmeasured is None and "borrowed" not in own.text
    few = card_band(cat.get("mi300x"), "model", CARDS)
    assert few.borrowed_from == "all published cards" and few.unmeasured is None
    assert few.text.endswith("borrowed: mi300x has 0 published points of model files, fewer than 4")
    jetson = card_band(cat.get("jetson-orin-nx-16gb"), "model", CARDS)
    assert jetson.borrowed and jetson.unmeasured is True
    assert jetson.text.endswith("borrowed: jetson-orin-nx-16gb is an unmeasured card (no published point of its own)")


def test_an_h200_band_quoted_for_another_card_is_marked_borrowed():
    from tops_advisor.catalog import load_catalog

    cat = load_catalog()
    rows = [{"family": "cnn", "mode": "graph", "err_default": 0.1, "err_calibrated": 0.05}]
    summary = {**summarise_rows(rows, "H200", "docs/accuracy.md"), "hardware": "h200-sxm"}
    calibrated_a100 = expected_error("cnn", "graph", True, summary, hardware=cat.get("a100-sxm4-80gb"), cards=CARDS)
    assert calibrated_a100.borrowed_from == "H200 measurements"
    assert calibrated_a100.text.endswith("borrowed: measured on the H200, not on a100-sxm4-80gb")
    assert not expected_error("cnn", "graph", True, summary, hardware=cat.get("h200-sxm"), cards=CARDS).borrowed


def test_the_error_column_marks_borrowed_bands_and_says_whose_they_are():
    from tops_advisor.accuracy import card_band
    from tops_advisor.catalog import load_catalog
    from tops_advisor.render.recommend import band_cell, borrowed_line

    cat = load_catalog()
    bands = {i: card_band(cat.get(i), "model", CARDS) for i in ("t4", "mi300x", "jetson-orin-nx-16gb")}
    assert [band_cell(b) for b in bands.values()] == ["20%", "9%~", "9%~"]
    res = SimpleNamespace(recommendations=[SimpleNamespace(hardware=i, expected_error=b) for i, b in bands.items()])
    assert borrowed_line(res) == ("~ borrowed band, not the card's own published measurements: from all published "
                                  "cards: mi300x, jetson-orin-nx-16gb (unmeasured card)")
    assert borrowed_line(res, shown=False) is None


def test_analyze_json_says_whose_band_it_is():
    r = run(["analyze", "examples/small_cnn.py", "-H", "jetson-orin-nano-8gb", "--json"])
    assert r.exit_code == 0, r.output
    band = json.loads(r.stdout)["expected_error"]
    assert band["borrowed_from"] and band["unmeasured"] is True and "unmeasured card" in band["text"]


def test_a_tensorrt_prediction_quotes_published_engines_never_a_pytorch_band():
    from tops_advisor.catalog import load_catalog

    cat = load_catalog()
    engines = {"n": 7, "median_abs_error": 0.34, "worst_abs_error": 0.43, "median_error": -0.34}
    cards = {"cards": {"t4": {"all": {"n": 70, "median_abs_error": 0.11, "worst_abs_error": 0.39},
                              "model": {"n": 70, "median_abs_error": 0.11, "worst_abs_error": 0.39},
                              "tensorrt": engines}},
             "classes": {}, "all_cards": {"all": {"n": 300, "median_abs_error": 0.09, "worst_abs_error": 0.5},
                                          "tensorrt": {**engines, "n": 216, "median_abs_error": 0.11}}}
    t4 = expected_error("cnn", "tensorrt", False, hardware=cat.get("t4"), cards=cards)
    assert t4.median_abs_error == 0.34 and t4.mode == "tensorrt" and t4.basis == "t4" and not t4.borrowed
    assert "TensorRT engines; n=7" in t4.text
    other = expected_error("cnn", "tensorrt", False, hardware=cat.get("a100-sxm4-80gb"), cards=cards)
    assert other.median_abs_error == 0.11 and other.borrowed_from == "all published cards"
    calibrated = expected_error("cnn", "tensorrt", True, hardware=cat.get("t4"), cards=cards)
    assert calibrated.calibrated is False and "this band is of datasheet predictions" in calibrated.text
    # no engine band at any level: no band, not the card's PyTorch one
    pytorch_only = {**cards, "cards": {"t4": {k: v for k, v in cards["cards"]["t4"].items() if k != "tensorrt"}},
                    "all_cards": {"all": cards["all_cards"]["all"]}}
    assert expected_error("cnn", "tensorrt", False, hardware=cat.get("t4"), cards=pytorch_only) is None
    assert expected_error("cnn", "tensorrt", False, cards=cards) is None


def test_recommend_with_tensorrt_shows_each_cards_engine_band():
    r = run(["recommend", "examples/small_cnn.py", "--engine", "tensorrt", "--dtype", "fp16", "--batch", "8"])
    assert r.exit_code == 0, r.output
    header = next(line for line in r.output.splitlines() if line.startswith("device"))
    assert header.rstrip().endswith("error")
    t4 = next(line for line in r.output.splitlines() if line.startswith("t4 "))
    assert t4.rstrip().endswith("%")


def test_a_band_that_leans_one_way_says_so():
    from tops_advisor.accuracy import card_band
    from tops_advisor.catalog import load_catalog

    t4 = load_catalog().get("t4")
    lean = {"n": 7, "median_abs_error": 0.34, "worst_abs_error": 0.43, "median_error": -0.34}
    mixed = {**lean, "median_error": -0.05}
    band = card_band(t4, "tensorrt", {"cards": {"t4": {"tensorrt": lean}}, "classes": {}, "all_cards": {}})
    assert band.median_error == -0.34
    assert band.text.endswith("; predictions lean fast (shorter than measured): median -34%")
    band = card_band(t4, "tensorrt", {"cards": {"t4": {"tensorrt": mixed}}, "classes": {}, "all_cards": {}})
    assert "lean" not in band.text
    slow = {**lean, "median_error": 0.3}
    band = card_band(t4, "tensorrt", {"cards": {"t4": {"tensorrt": slow}}, "classes": {}, "all_cards": {}})
    assert "lean slow (longer than measured): median +30%" in band.text
