"""analyze and recommend through the CLI: output shape and every bad input (one line, exit 2)."""

from __future__ import annotations

import io
import json
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from tops_advisor.cli import cli

MODEL = "examples/small_cnn.py"


def run(*args):
    return CliRunner().invoke(cli, list(args))


def test_analyze_json_has_the_promised_keys():
    r = run("analyze", MODEL, "-H", "h200-sxm", "--batch", "8", "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    for key in ("latency_ms", "throughput_per_s", "attainable_tops", "bound", "fits_memory", "memory_required_gb",
                "ops", "advice", "calibrated"):
        assert key in d
    assert d["calibrated"] is True  # the shipped H200 calibration is picked up
    assert d["throughput_per_s"] == pytest.approx(8 / (d["latency_ms"] / 1e3))
    no_cal = json.loads(run("analyze", MODEL, "-H", "h200-sxm", "--batch", "8", "--json", "--no-calibration").stdout)
    assert no_cal["calibrated"] is False


def test_analyze_table_and_plot(tmp_path):
    plot = tmp_path / "roof.png"
    r = run("analyze", MODEL, "-H", "rtx4090", "--mode", "eager", "--plot", str(plot))
    assert r.exit_code == 0, r.output
    assert "Advice" in r.output and "eager" in r.output
    assert plot.stat().st_size > 10_000


def test_analyze_int8_derived_from_fp16_count():
    fp16 = json.loads(run("analyze", MODEL, "-H", "h100-sxm", "--batch", "64", "--json").stdout)
    int8 = json.loads(run("analyze", MODEL, "-H", "h100-sxm", "--batch", "64", "--dtype", "int8", "--json").stdout)
    assert int8["bytes"] < fp16["bytes"] and int8["precision"] == "int8"


@pytest.mark.parametrize("args, message", [
    (("-H", "rtx-4009"), "unknown hardware 'rtx-4009'"),
    (("-H", "a100"), "is ambiguous"),
    (("-H", "h100"), "is ambiguous: it matches h100-nvl, h100-pcie, h100-sxm"),
    (("-H", "h200"), "is ambiguous: it matches h200-nvl, h200-sxm"),
    (("-H", "a100-pcie-40gb", "--dtype", "fp8"), "a100-pcie-40gb has no fp8 peak; it has"),
    (("-H", "h200-sxm", "--dtype", "fp17"), "unknown dtype 'fp17'"),
    (("-H", "h200-sxm", "--batch", "0"), "--batch must be a positive integer"),
    (("-H", "h200-sxm", "--plot", "/nonexistent/dir/x.png"), "cannot write plot"),
    (("-H", "h200-sxm", "--plot", "roof.txt"), "must end in .png, .svg or .pdf"),
    (("-H", "jetson-orin-nx-16gb", "--power-mode", "99W"),
     "jetson-orin-nx-16gb has no power mode '99W'; its modes: 10W (10 W), 15W (15 W), 25W (25 W), MAXN (25 W), "
     "40W (40 W), MAXN_SUPER (40 W)"),
    (("-H", "h200-sxm", "--power-mode", "15W"), "h200-sxm has no power modes"),
])
def test_analyze_bad_input(args, message):
    r = run("analyze", MODEL, *args)
    assert r.exit_code == 2
    assert message in r.output
    assert "Traceback" not in r.output


@pytest.mark.parametrize("command, ranking", [
    (("analyze", MODEL), "'tops-advisor recommend MODEL -H h200-sxm -H l4'"),
    (("train", MODEL), "'tops-advisor recommend MODEL --train -H h200-sxm -H l4'"),
    (("llm", "llama3-8b"), "'tops-advisor recommend --llm CONFIG -H h200-sxm -H l4'"),
    (("validate", MODEL, "--device", "cpu"), None),
])
def test_a_one_device_command_refuses_a_repeated_device(command, ranking):
    # click alone would keep the last -H and predict it silently
    r = run(*command, "-H", "h200-sxm", "-H", "l4")
    assert r.exit_code == 2 and "Traceback" not in r.output and r.stdout == ""
    assert f"error: tops-advisor {command[0]} predicts one device; got -H h200-sxm -H l4" in r.output
    assert ("rank them with " + ranking if ranking else "hint: keep one -H\n") in r.output


def test_analyze_at_a_power_mode():
    maxn = json.loads(run("analyze", MODEL, "-H", "jetson-orin-nx-16gb", "--batch", "8", "--json").stdout)
    r = run("analyze", MODEL, "-H", "jetson-orin-nx-16gb", "--power-mode", "15W", "--batch", "8", "--json")
    assert r.exit_code == 0, r.output
    at_15w = json.loads(r.stdout)
    assert maxn["power_mode"] == "MAXN" and at_15w["power_mode"] == "15W"
    # 15W: 4 of 8 SMs at 612 of 918 MHz, the memory clock uncapped: a third of the peak, the same bandwidth
    assert at_15w["peak_tops"] == pytest.approx(maxn["peak_tops"] * 612 / 918 * 4 / 8)
    assert at_15w["latency_ms"] > maxn["latency_ms"]
    table = run("analyze", MODEL, "-H", "jetson-orin-nx-16gb", "--power-mode", "15w")
    assert table.exit_code == 0 and "at power mode 15W" in table.output


def test_recommend_dtype_auto_says_why_int8_was_not_tried():
    r = run("recommend", MODEL, "--dtype", "auto", "--batch", "8", "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert {x["dtype"] for x in d["recommendations"]} <= {"fp32", "fp16", "bf16"}
    assert d["constraints"]["dtypes"] == ["fp32", "fp16", "bf16"] and d["constraints"]["dtype_auto"] is True
    assert any("not fp8/int8" in n and "TensorRT or torchao" in n for n in d["notes"])


def test_recommend_max_power_says_which_mode():
    r = run("recommend", MODEL, "--max-power", "15W", "--batch", "1", "--json")
    assert r.exit_code == 0, r.output
    recs = json.loads(r.stdout)["recommendations"]
    assert recs and all(x["tdp_w"] <= 15 for x in recs)
    assert {x["hardware"]: x["power_mode"] for x in recs}["jetson-agx-orin-64gb"] == "15W"
    table = run("recommend", MODEL, "--max-power", "15W", "--batch", "1")
    assert "jetson-agx-orin-64gb @15W" in table.output and "fastest mode within 15 W" in table.output


def test_analyze_invalid_calibration(tmp_path):
    bad = tmp_path / "cal.json"
    bad.write_text("{not json")
    r = run("analyze", MODEL, "-H", "h200-sxm", "--calibration", str(bad))
    assert r.exit_code == 2 and "is not valid JSON" in r.output


def test_analyze_missing_model_file():
    r = run("analyze", "nope.py", "-H", "h200-sxm")
    assert r.exit_code == 2 and "nope.py" in r.output


def test_recommend_json_and_rejections():
    r = run("recommend", MODEL, "--latency", "1ms", "--segment", "edge", "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["recommendations"] and {"hardware", "dtype", "batch", "latency_ms", "throughput_per_s", "bound",
                                     "calibrated"} <= set(d["recommendations"][0])
    assert all(x["latency_ms"] <= 1.0 for x in d["recommendations"])
    assert {"hardware", "reason"} <= set(d["rejected"][0])
    band = d["recommendations"][0]["expected_error"]
    # edge devices are uncalibrated: the band of published measurements of that card or its class (accuracy.card_band)
    assert band["family"] == "cnn" and band["mode"] == "graph" and band["text"].startswith("expected error")


@pytest.mark.parametrize("args, message", [
    (("--latency", "10"), "needs a positive number with a unit"),
    (("--latency", "-5ms"), "needs a positive number with a unit"),
    (("--latency", "0ms"), "must be greater than zero"),
    (("--latency", "10parsecs"), "unknown unit"),
    (("--segment", "edg"), "unknown segment 'edg'"),
    (("--latency", "1ns"), "no device meets the constraints"),
    (("--max-power", "1W"), "no device left after filtering"),
    (("--power-mode", "99W", "-H", "jetson-agx-orin-64gb"), "jetson-agx-orin-64gb has no power mode '99W'"),
    (("--power-mode", "99W"), "no device asked for has power mode '99W'; the modules' modes: 10W, 15W"),
])
def test_recommend_bad_input(args, message):
    r = run("recommend", MODEL, *args)
    assert r.exit_code == 2
    assert message in r.output
    assert "Traceback" not in r.output


# --- progress on stderr, assumptions shown --------------------------------------------------------------
def test_progress_is_silent_off_a_terminal_and_with_json():
    from tops_advisor.render.progress import progress

    stream = io.StringIO()
    with progress("counting a model", stream=stream):
        pass
    with progress("counting a model", enabled=False, stream=stream):
        pass
    assert stream.getvalue() == ""
    r = run("recommend", MODEL, "--latency", "100ms", "--top", "1", "--json")
    assert r.exit_code == 0 and r.stderr == ""



def test_progress_shows_on_a_terminal_and_clears_itself(monkeypatch):
    from tops_advisor.render.progress import progress

    monkeypatch.setenv("TTY_COMPATIBLE", "1")  # rich: treat the stream as a terminal
    stream = io.StringIO()
    with progress("counting model.py at batch 1", stream=stream):
        pass
    shown = stream.getvalue()
    assert "counting model.py at batch 1" in shown
    assert shown.endswith("\x1b[2K")  # the line is erased at the end: nothing stays on the terminal



def test_assumptions_about_precisions_not_used_are_left_out():
    from tops_advisor.render.analyze import relevant_assumptions

    pred = SimpleNamespace(ops=[SimpleNamespace(precision="fp16"), SimpleNamespace(precision="vector")],
                           assumptions=("mode graph: CUDA graph replay, no host launch cost",
                                        "not measured, scaled by the median measured/datasheet ratio 0.79: fp64",
                                        "not measured, scaled by the median ratio 0.8: fp16, tf32"))
    assert relevant_assumptions(pred) == ["mode graph: CUDA graph replay, no host launch cost",
                                          "not measured, scaled by the median ratio 0.8: fp16"]


# --- a batch below 1 or too large to fit, and hints ---------------------------------------------------------
def test_the_cli_gives_the_same_line_as_the_api():
    r = run("analyze", MODEL, "-H", "h200-sxm", "-b", "-4")
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert r.stderr.splitlines()[0] == "error: --batch must be a positive integer, got -4"


def test_analyze_refuses_a_batch_that_does_not_fit_in_one_line():
    r = run("analyze", MODEL, "-H", "h200-sxm", "-b", "100000000000")
    assert r.exit_code == 2 and "Traceback" not in r.output
    line = r.stderr.splitlines()[0]
    assert line.startswith("error: batch 100000000000 needs ") and "; h200-sxm has 141 GB; the largest batch" in line
    assert "e+" not in line


def test_recommend_hint_offers_only_options_not_taken():
    r = run("recommend", MODEL, "--latency", "1ns", "--segment", "edge")
    assert r.exit_code == 2
    hint = next(line for line in r.stderr.splitlines() if line.startswith("hint:"))
    assert "--mode graph" not in hint   # graph is already the mode
    r = run("recommend", MODEL, "--latency", "1ns", "--mode", "eager", "--segment", "edge")
    assert "--mode graph" in r.stderr


def test_channels_last_is_an_inference_option_of_analyze_and_recommend():
    base = ("analyze", "timm:resnet18", "-H", "rtx-4090", "--batch", "64", "--dtype", "amp", "--mode", "eager",
            "--json")
    nchw, nhwc = (json.loads(run(*base, *extra).stdout) for extra in ((), ("--channels-last",)))
    # cuDNN's NHWC kernels skip the NCHW<->NHWC conversions the convolution factor prices: the same operators
    # and bytes, less time
    assert nhwc["bytes"] == nchw["bytes"] and nhwc["latency_ms"] < nchw["latency_ms"]
    r = run("recommend", MODEL, "--batch", "8", "--channels-last", "--hardware", "h200-sxm", "--json")
    assert r.exit_code == 0, r.output
    r = run("recommend", "--llm", "llama3-8b", "--channels-last")
    assert r.exit_code == 2 and "--channels-last" in r.output and "Traceback" not in r.output
