"""--mode compiled and --dtype amp through the CLI (analyze, recommend; validate's argument checks)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from tops_advisor.cli import cli

MODEL = "examples/small_cnn.py"


def _run(*args):
    return CliRunner().invoke(cli, list(args))


def _analyze(*extra):
    r = _run("analyze", MODEL, "-H", "h200-sxm", "--batch", "8", "--json", *extra)
    assert r.exit_code == 0, r.output
    return json.loads(r.output)


def test_analyze_compiled_predicts_fewer_kernels_and_less_time_than_graph():
    graph, compiled = _analyze("--mode", "graph"), _analyze("--mode", "compiled")
    assert compiled["mode"] == "compiled"
    assert compiled["kernels"] < graph["kernels"] and compiled["bytes"] < graph["bytes"]
    assert compiled["latency_ms"] < graph["latency_ms"]
    assert not any("torch.compile" in line for line in compiled["advice"])   # already compiled


def test_analyze_amp_computes_convolutions_in_fp16_and_casts_weights():
    amp = _analyze("--dtype", "amp")
    assert amp["dtype"] == "amp" and amp["precision"] == "fp16"
    names = [op["name"] for op in amp["ops"]]
    assert "aten._to_copy" in names
    fp16 = _analyze("--dtype", "fp16")
    assert amp["kernels"] > fp16["kernels"]   # the casts


def test_compiled_fp32_runs_plain_fp32_on_cards_without_tf32():
    """Inductor's convolutions of an fp32 model run in TF32 where the card has it; on a V100 or T4 (no TF32)
    PyTorch runs them in plain FP32, so the prediction works and reports fp32, never an error about tf32."""
    for device, precision in (("t4", "fp32"), ("a100-sxm4-80gb", "tf32")):
        r = _run("analyze", MODEL, "-H", device, "--batch", "8", "--dtype", "fp32", "--mode", "compiled", "--json")
        assert r.exit_code == 0, r.output
        out = json.loads(r.output)
        assert out["precision"] == precision and out["latency_ms"] > 0


def test_recommend_compiled():
    r = _run("recommend", MODEL, "--latency", "1ms", "--mode", "compiled", "-H", "h200-sxm", "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["recommendations"][0]["mode"] == "compiled"


def test_validate_refuses_compiled_on_the_cpu_in_one_line():
    r = _run("validate", MODEL, "--device", "cpu", "-H", "h200-sxm", "--mode", "compiled", "--dtype", "amp")
    assert r.exit_code == 2 and "compiled mode replays CUDA graphs" in r.output
    assert "Traceback" not in r.output
