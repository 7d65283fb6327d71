"""Mode tensorrt in the roofline: a TensorRT workload is predicted only in its mode, priced like a CUDA graph
(no host time), fp32 engines in TF32 where the card has it; and the recommender's --dtype auto per mode."""

from __future__ import annotations

import pytest
import torch

from tests.counting.test_tensorrt import C_IN, ConvBnRelu, H, N
from tops_advisor.api import ModelCosts, load_catalog, predict
from tops_advisor.errors import InputError
from tops_advisor.recommend.constraints import auto_dtype_note, auto_dtypes
from tops_advisor.tensorrt import TENSORRT

pytestmark = pytest.mark.filterwarnings("ignore")


@pytest.fixture(scope="module")
def costs():
    from tops_advisor.counting import load_model

    model = load_model("examples/small_cnn.py")
    return ModelCosts(model, mode="tensorrt"), ModelCosts(model)


def test_tensorrt_workloads_are_predicted_in_their_mode_only(costs):
    trt, pytorch = costs
    hw = load_catalog().get("a100-sxm4-80gb")
    p = predict(trt.at(8, "fp16"), hw, mode="tensorrt")
    assert p.mode == "tensorrt" and p.host_time_s == 0.0 and p.latency_s == pytest.approx(p.device_time_s)
    with pytest.raises(InputError, match="tensorrt lowering"):
        predict(pytorch.at(8, "fp16"), hw, mode="tensorrt")
    with pytest.raises(InputError, match="eager lowering"):
        predict(trt.at(8, "fp16"), hw, mode="graph")


def test_fp32_engines_run_tf32_where_the_card_has_it(costs):
    trt, _ = costs
    cat = load_catalog()
    a100 = predict(trt.at(8, "fp32"), cat.get("a100-sxm4-80gb"), mode="tensorrt")
    assert TENSORRT.tf32.does in " ".join(a100.assumptions)
    no_tf32 = next(hw for hw in cat if "tf32" not in hw.dense_tops and hw.vendor == "NVIDIA")   # V100, T4
    p = predict(trt.at(8, "fp32"), no_tf32, mode="tensorrt")
    assert any("has no TF32" in a for a in p.assumptions) and p.precision == "fp32"


def test_fp16_engines_take_the_fp16_accumulate_rate_where_it_is_faster(costs):
    """GeForce runs FP32 accumulation at half its FP16-accumulate rate; a TensorRT fp16 engine keeps the faster
    tactics there (tensorrt.py, fp16_accumulate), so its peak is fp16_fp16acc and its compute time halves; on a
    card whose two rates are one (TITAN RTX, data-centre cards) nothing changes, and PyTorch never takes it."""
    trt, pytorch = costs
    cat = load_catalog()
    geforce, titan = cat.get("rtx-3090"), cat.get("titan-rtx")
    p = predict(trt.at(64, "fp16"), geforce, mode="tensorrt")
    assert p.peak_ops_per_s == pytest.approx(geforce.dense_tops["fp16_fp16acc"] * 1e12)
    assert any(TENSORRT.fp16_accumulate.does in a for a in p.assumptions)
    assert predict(pytorch.at(64, "fp16"), geforce).peak_ops_per_s == pytest.approx(geforce.dense_tops["fp16"] * 1e12)
    same = predict(trt.at(64, "fp16"), titan, mode="tensorrt")
    assert same.peak_ops_per_s == pytest.approx(titan.dense_tops["fp16"] * 1e12)
    assert not any(TENSORRT.fp16_accumulate.does in a for a in same.assumptions)
    fp32 = predict(trt.at(64, "fp32"), geforce, mode="tensorrt")
    assert fp32.peak_ops_per_s == pytest.approx(geforce.dense_tops["tf32"] * 1e12)


def test_tensorrt_runs_on_nvidia_gpus_only(costs):
    from tops_advisor.errors import UnsupportedEngineError

    amd = next(hw for hw in load_catalog() if hw.vendor != "NVIDIA")
    with pytest.raises(UnsupportedEngineError, match="NVIDIA GPUs"):
        predict(costs[0].at(8, "fp16"), amd, mode="tensorrt")


def test_auto_tries_int8_with_tensorrt_only():
    assert "int8" in auto_dtypes("tensorrt") and "int8" not in auto_dtypes("graph")
    assert "int8" not in auto_dtypes("compiled") and "fp8" not in auto_dtypes("tensorrt")
    assert "calibration" in auto_dtype_note("tensorrt") and "calibration" not in auto_dtype_note("graph")


def test_the_api_refuses_an_llm_preset_for_an_engine():
    with pytest.raises(InputError, match="LLM config"):
        ModelCosts("llama3-8b", mode="tensorrt")


def test_an_engine_moves_fewer_bytes_than_the_eager_run_of_the_same_model():
    from tops_advisor.counting import count_module
    from tops_advisor.counting.lowering import PYTORCH_CUDA
    from tops_advisor.counting.lowering import TENSORRT as TRT

    x = torch.randn(N, C_IN, H, H)
    eager, engine = (count_module(ConvBnRelu(), x, "fp16", lowering=lw) for lw in (PYTORCH_CUDA, TRT))
    assert engine.flops == pytest.approx(eager.flops, rel=0.02)   # the same work, batch norm folded
    assert engine.bytes < eager.bytes / 2
