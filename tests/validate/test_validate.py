"""`tops-advisor validate` on the CPU (plumbing) and the pure comparison. GPU runs are in
tests/validate/test_gpu.py; the accuracy bands in tests/accuracy/test_bands.py."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from tops_advisor.cli import cli
from tops_advisor.validate.compare import (
    aten_kind,
    compare_by_kind,
    compare_latency,
    error_summary,
    measured_by_kind,
    relative_error,
)

CPU = ["validate", "examples/small_cnn.py", "--device", "cpu", "--hardware", "h200-sxm", "--dtype", "fp32",
       "--repeats", "2", "--warmup", "1"]


def run(args):
    return CliRunner().invoke(cli, args)


# --- the command, on the CPU ----------------------------------------------------------------------------
@pytest.mark.slow
def test_cpu_run_puts_measurement_beside_prediction_and_says_it_is_plumbing():
    res = run(CPU + ["--batch", "1,2", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["hardware"] == "h200-sxm" and out["device"] == "cpu" and out["modes"] == ["eager"]
    assert "plumbing" in out["note"] and "not" in out["note"]
    assert [(r["batch"], r["mode"]) for r in out["rows"]] == [(1, "eager"), (2, "eager")]
    from tops_advisor.api import load_catalog
    from tops_advisor.counting import count
    from tops_advisor.roofline import device_perf, predict

    hw = load_catalog().get("h200-sxm")
    for r in out["rows"]:
        # the prediction is the roofline's for the same workload, and error = (predicted - measured) / measured
        expected = predict(count("examples/small_cnn.py", batch=r["batch"], dtype="fp32"), hw, mode="eager",
                           perf=device_perf(hw)).latency_s
        assert r["default_s"] == pytest.approx(expected, rel=1e-6)
        assert r["err_default"] == pytest.approx((r["default_s"] - r["measured_s"]) / r["measured_s"])
        assert r["spread_s"][0] <= r["measured_s"] <= r["spread_s"][1]
    assert out["runs"][0]["device"] == "cpu" and "eager_s" in out["runs"][0]   # benchmark record format
    assert out["family"] == "cnn"


def test_cpu_per_op_lines_up_operator_kinds():
    res = run(CPU + ["--batch", "2", "--per-op", "--json"])
    assert res.exit_code == 0, res.output
    kinds = {k["kind"]: k for k in json.loads(res.stdout)["per_op"][0]["kinds"]}
    # small_cnn: 5 conv-BN-ReLU blocks, 2 max pools, an adaptive pool and a linear head
    assert {"conv", "norm", "matmul"} <= set(kinds)
    assert kinds["conv"]["measured_s"] > 0 and kinds["conv"]["predicted_s"] > 0
    assert sum(k["predicted_share"] for k in kinds.values()) == pytest.approx(1.0)


@pytest.mark.slow
def test_cpu_table_and_plot(tmp_path):
    plot = tmp_path / "parity.png"
    res = run(CPU + ["--batch", "1", "--plot", str(plot)])
    assert res.exit_code == 0, res.output
    assert "plumbing" in res.stdout and "measured" in res.stdout
    assert plot.stat().st_size > 0


def test_no_gpu_is_one_line(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    res = run(["validate", "examples/small_cnn.py"])
    assert res.exit_code == 2
    assert res.stderr.startswith("error: no CUDA GPU found") and "Traceback" not in res.output
    assert "--device cpu" in res.stderr


@pytest.mark.parametrize("args, message", [
    (["--batch", "1,x"], "batch list '1,x': 'x' is not a positive integer"),
    (["--batch", "0"], "'0' is not a positive integer"),
    (["--dtype", "int8"], "unknown dtype 'int8'"),
    (["--mode", "graph"], "graph mode replays CUDA graphs"),
])
def test_bad_input_is_one_line(args, message):
    res = run(CPU + args)
    assert res.exit_code == 2
    assert message in res.stderr and "Traceback" not in res.output


def test_cpu_needs_hardware():
    res = run(["validate", "examples/small_cnn.py", "--device", "cpu"])
    assert res.exit_code == 2 and "--device cpu needs --hardware" in res.stderr


@pytest.mark.slow
def test_out_of_memory_at_one_batch_is_reported_and_the_others_go_on(monkeypatch):
    import torch

    from tops_advisor.validate import measure

    real = measure.measure_one

    def fake(model_file, batch, dtype, **kw):
        if batch == 4:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return real(model_file, batch, dtype, **kw)

    monkeypatch.setattr(measure, "measure_one", fake)
    res = run(CPU + ["--batch", "1,4,2", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["failed"] == [{"batch": 4, "error": "out of memory"}]
    assert [r["batch"] for r in out["rows"]] == [1, 2]
    assert "batch 4: out of memory; going on" in res.stderr


def test_model_failing_on_the_device_is_one_line(monkeypatch):
    from tops_advisor.validate import measure

    def fake(model_file, batch, dtype, **kw):
        raise RuntimeError("CUDA error: an illegal memory access was encountered\nmore lines")

    monkeypatch.setattr(measure, "measure_one", fake)
    res = run(CPU + ["--batch", "1"])
    assert res.exit_code == 2
    assert "failed on cpu at batch 1: RuntimeError" in res.stderr and "Traceback" not in res.output


def test_missing_model_file_is_one_line():
    res = run(["validate", "nope.py", "--device", "cpu", "-H", "h200-sxm"])
    assert res.exit_code == 2 and "nope.py: no such file" in res.stderr


# --- the pure comparison --------------------------------------------------------------------------------
class FakeMeasurement(SimpleNamespace):
    def latency_s(self, mode):
        return {"eager": self.eager_s, "graph": self.graph_s}[mode]

    def spread_s(self, mode):
        return (0.9e-3, 1.2e-3) if mode == "eager" else None


def test_compare_latency_errors_by_hand():
    m = FakeMeasurement(model="m", batch=8, dtype="fp16", eager_s=1.0e-3, graph_s=None)
    default, cal = SimpleNamespace(latency_s=1.25e-3, bound="memory"), SimpleNamespace(latency_s=0.9e-3,
                                                                                       bound="compute")
    rows = compare_latency(m, {"eager": (default, cal), "graph": (default, cal)})
    assert len(rows) == 1                       # graph was not measured: no row
    r = rows[0]
    assert r.err_default == pytest.approx(0.25)     # (1.25 - 1.0) / 1.0
    assert r.err_calibrated == pytest.approx(-0.1)  # (0.9 - 1.0) / 1.0
    assert r.bound == "compute"                     # the calibrated prediction's
    assert relative_error(None, 1.0) is None and relative_error(1.0, 0.0) is None


@pytest.mark.parametrize("name, kind", [
    ("aten::cudnn_convolution", "conv"), ("aten::conv2d", "conv"), ("aten::linear", "matmul"),
    ("aten::addmm", "matmul"), ("aten::native_layer_norm", "norm"), ("aten::cudnn_batch_norm", "norm"),
    ("aten::_scaled_dot_product_flash_attention", "attention"), ("aten::softmax", "softmax"),
    ("aten::gelu", "elementwise"), ("aten::add_", "elementwise"), ("aten::_to_copy", "elementwise"),
    ("aten::cat", "copy"), ("aten::copy_", "copy"), ("aten::max_pool2d", "pool"), ("aten::mean", "reduction"),
    ("aten::embedding", "embedding"),
])
def test_aten_kind(name, kind):
    assert aten_kind(name) == kind


def test_measured_by_kind_counts_each_kernel_once():
    ops = {  # conv2d calls convolution calls cudnn_convolution; the outermost holds all 100 us
        "aten::conv2d": {"device_us": 100.0, "self_device_us": 0.0, "outer_device_us": 100.0},
        "aten::cudnn_convolution": {"device_us": 90.0, "self_device_us": 90.0, "outer_device_us": 0.0},
        "aten::add_": {"device_us": 10.0, "self_device_us": 10.0, "outer_device_us": 0.0},
        "aten::gelu": {"device_us": 5.0, "self_device_us": 5.0, "outer_device_us": 5.0},
    }
    assert measured_by_kind(ops) == pytest.approx({"conv": 100e-6, "elementwise": 5e-6})
    # older records without outer times: self times, each kernel under its innermost operator
    old = {k: {kk: vv for kk, vv in v.items() if kk != "outer_device_us"} for k, v in ops.items()}
    assert measured_by_kind(old) == pytest.approx({"conv": 90e-6, "elementwise": 15e-6})


def test_compare_by_kind_shares_and_bound():
    op = lambda kind, t, bound: SimpleNamespace(kind=kind, latency_s=t, bound=bound)  # noqa: E731
    pred = SimpleNamespace(ops=[op("conv", 60e-6, "compute"), op("conv", 20e-6, "memory"),
                                op("elementwise", 20e-6, "memory")])
    rows = compare_by_kind({"aten::conv2d": {"outer_device_us": 120.0},
                            "aten::relu": {"outer_device_us": 40.0}}, pred)
    conv = rows[0]
    assert conv.kind == "conv" and conv.bound == "compute"          # 60 us compute > 20 us memory
    assert conv.predicted_s == pytest.approx(80e-6) and conv.measured_s == pytest.approx(120e-6)
    assert conv.error == pytest.approx(-1 / 3)                      # (80 - 120) / 120
    assert conv.measured_share == pytest.approx(0.75)               # 120 / 160
    assert conv.predicted_share == pytest.approx(0.8)               # 80 / 100


def test_error_summary():
    s = error_summary([0.1, -0.3, None, 0.2])
    assert s == {"median_abs_error": pytest.approx(0.2), "worst_abs_error": pytest.approx(0.3), "n": 3}
    assert error_summary([None]) is None


def test_cpu_channels_last_run_measures_and_predicts_nhwc():
    res = run(CPU + ["--batch", "2", "--channels-last", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["channels_last"] is True
    from tops_advisor.api import ModelCosts, load_catalog
    from tops_advisor.roofline import device_perf, predict

    hw = load_catalog().get("h200-sxm")
    nhwc = ModelCosts("examples/small_cnn.py", base_dtype="fp32", channels_last=True).at(2)
    expected = predict(nhwc, hw, mode="eager", perf=device_perf(hw)).latency_s
    assert out["rows"][0]["default_s"] == pytest.approx(expected, rel=1e-6)
