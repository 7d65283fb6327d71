"""--engine tensorrt through the CLI (analyze, recommend) and the combinations it refuses in one line."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from tops_advisor.catalog import load_catalog
from tops_advisor.cli import cli
from tops_advisor.tensorrt import TENSORRT

MODEL = "examples/small_cnn.py"


def _run(*args):
    return CliRunner().invoke(cli, list(args))


def _analyze(*extra, hw="a100-sxm4-80gb"):
    r = _run("analyze", MODEL, "-H", hw, "--batch", "8", "--json", *extra)
    assert r.exit_code == 0, r.output
    return json.loads(r.output)


def test_analyze_tensorrt_runs_fewer_kernels_than_pytorch_and_says_how():
    graph, trt = _analyze(), _analyze("--engine", "tensorrt")
    assert trt["mode"] == "tensorrt"
    assert trt["kernels"] < graph["kernels"] and trt["bytes"] < graph["bytes"]
    assert any("TensorRT engine" in a for a in trt["assumptions"])
    assert not any("calibration" in a for a in trt["assumptions"])   # fp16: no int8 caveat
    assert not any("torch.compile" in line for line in trt["advice"])   # an engine is fused already


def test_analyze_tensorrt_int8_carries_the_calibration_caveat():
    trt = _analyze("--engine", "tensorrt", "--dtype", "int8")
    assert trt["precision"] == "int8"
    assert TENSORRT.int8.does in trt["assumptions"]


def _no_int8_card() -> str:
    return next(hw.id for hw in load_catalog() if "int8" not in hw.dense_tops and "fp16" in hw.dense_tops)


@pytest.mark.parametrize("args, message", [
    (("analyze", "llama3-8b", "-H", "h100-sxm", "--engine", "tensorrt"), "is an LLM config"),
    (("analyze", MODEL, "-H", "h100-sxm", "--engine", "tensorrt", "--mode", "eager"), "--mode eager is a PyTorch"),
    (("analyze", MODEL, "-H", "h100-sxm", "--engine", "tensorrt", "--dtype", "amp"), "--dtype amp is torch.autocast"),
    (("recommend", "--llm", "llama3-8b", "--engine", "tensorrt", "--tokens-per-s", "20"), "--engine"),
    (("recommend", MODEL, "--engine", "tensorrt", "--train"), "--engine tensorrt predicts inference"),
    (("analyze", MODEL, "-H", "h100-sxm", "--opt-batch", "32"), "--opt-batch is a TensorRT engine's build batch"),
    (("analyze", MODEL, "-H", "l40s", "--engine", "tensorrt", "--dtype", "int4"), "INT4 is weight-only"),
    (("analyze", MODEL, "-H", "h100-sxm", "--engine", "tensorrt", "--dtype", "fp64"), "no 64-bit float type"),
    (("recommend", MODEL, "--engine", "tensorrt", "--dtype", "int4"), "--dtype int8, fp16 or fp32"),
])
def test_bad_combinations_give_one_line_and_exit_2(args, message):
    r = _run(*args)
    assert r.exit_code == 2, r.output
    assert message in r.output and "Traceback" not in r.output
    assert r.output.count("error:") == 1


def test_int8_on_a_card_without_int8_is_refused_in_one_line():
    card = _no_int8_card()
    r = _run("analyze", MODEL, "-H", card, "--engine", "tensorrt", "--dtype", "int8")
    assert r.exit_code == 2 and f"{card} has no int8 peak" in r.output
    assert "Traceback" not in r.output


def test_recommend_tensorrt_auto_tries_int8_where_the_card_has_it():
    cards = ("a100-sxm4-80gb", _no_int8_card())
    r = _run("recommend", MODEL, "--engine", "tensorrt", "--dtype", "auto", "--rank-by", "throughput",
             *[a for c in cards for a in ("-H", c)], "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    by_card = {rec["hardware"]: rec for rec in out["recommendations"]}
    assert by_card["a100-sxm4-80gb"]["dtype"] == "int8" and by_card["a100-sxm4-80gb"]["mode"] == "tensorrt"
    assert by_card[cards[1]]["dtype"] != "int8"
    assert any("calibration" in n for n in out["notes"])


def test_recommend_auto_in_plain_pytorch_never_picks_int8():
    r = _run("recommend", MODEL, "--dtype", "auto", "--rank-by", "throughput", "-H", "a100-sxm4-80gb", "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["recommendations"][0]["dtype"] != "int8"


def test_an_engine_built_for_a_larger_batch_runs_batch_1_no_faster_and_says_so():
    own = _analyze("--engine", "tensorrt", "--batch", "1")
    built_for_64 = _analyze("--engine", "tensorrt", "--batch", "1", "--opt-batch", "64")
    assert built_for_64["latency_ms"] > own["latency_ms"]
    assert any("opt shape" in a and "batch 64" in a for a in built_for_64["assumptions"])
    assert not any("opt shape" in a for a in own["assumptions"])


@pytest.mark.parametrize("dtype", TENSORRT.unscored_dtypes)
def test_an_engine_precision_no_published_engine_scored_says_so(dtype):
    r = _run("analyze", MODEL, "-H", "h100-sxm", "--engine", "tensorrt", "--dtype", dtype, "--json")
    assert r.exit_code == 0, r.output
    assumptions = json.loads(r.stdout)["assumptions"]
    assert any(a.startswith(f"{dtype} engine priced") for a in assumptions)
