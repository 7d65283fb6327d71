"""The one serializer that makes the ``--json`` keys in human units from results held in base units."""

from __future__ import annotations

import pytest

from tests.conftest import make_hardware
from tops_advisor.recommend import LLMRecommendation, Recommendation
from tops_advisor.render.json_units import prediction_json, to_json
from tops_advisor.roofline import predict
from tops_advisor.workload import OpRecord, Workload


def _recommendation() -> Recommendation:
    return Recommendation(
        hardware="gpu", name="GPU", dtype="fp16", batch=8, mode="graph", latency_s=0.0025, throughput_per_s=3200.0,
        attainable_ops_per_s=4.5e13, utilisation=0.3, bound="memory", tdp_w=300.0, tops_per_watt=0.15,
        throughput_per_watt=10.7, price_usd=None, throughput_per_kusd=None, headroom=None, calibrated=False,
        memory_required_bytes=6.5e9)


def test_a_recommendation_keeps_base_units_and_gains_the_human_keys_last():
    rec = _recommendation()
    assert "latency_ms" not in rec.model_dump()
    d = to_json(rec)
    # 0.0025 s = 2.5 ms; 4.5e13 ops/s = 45 TOPS; 6.5e9 bytes = 6.5 GB (decimal)
    assert list(d)[-3:] == ["latency_ms", "attainable_tops", "memory_required_gb"]
    assert (d["latency_ms"], d["attainable_tops"], d["memory_required_gb"]) == pytest.approx((2.5, 45.0, 6.5))
    assert d["latency_s"] == 0.0025 and d["expected_error"] is None


def test_the_llm_form_fills_the_model_forms_keys():
    rec = LLMRecommendation(hardware="gpu", devices=2, tokens_per_s=40.0, ttft_s=0.3, tpot_s=0.025,
                            memory_required_bytes=7.0e10, bound="memory", total_tdp_w=600.0,
                            tokens_per_s_per_watt=40 / 600, price_usd=None, calibrated=False, why="2 devices")
    d = to_json(rec)
    # latency is the time per output token: 0.025 s = 25 ms; TTFT 0.3 s = 300 ms; 7e10 bytes = 70 GB
    assert (d["latency_ms"], d["ttft_ms"], d["memory_required_gb"]) == pytest.approx((25.0, 300.0, 70.0))
    assert (d["dtype"], d["batch"], d["throughput_per_s"]) == (None, None, 40.0)


def test_a_prediction_dump_is_in_base_units_and_its_json_renames_each_key_in_place():
    op = OpRecord(name="aten.mm", kind="matmul", module="fc", flops=2e9, bytes_read=4e6, bytes_written=1e6,
                  dtype="fp16")
    p = predict(Workload(name="toy", batch=1, dtype="fp16", ops=(op,)), make_hardware(), mode="graph")
    base = p.model_dump()
    assert base["latency_s"] == p.latency_s and not [k for k in base if k.endswith(("_ms", "_gb", "_tops"))]
    d = prediction_json(p)
    assert list(d).index("latency_ms") == list(base).index("latency_s")  # same place, human name
    assert d["latency_ms"] == p.latency_s * 1e3 and d["memory_required_gb"] == p.memory_required_bytes / 1e9
    assert d["peak_tops"] == p.peak_ops_per_s / 1e12
    assert d["ops"][0]["latency_ms"] == d["latency_ms"]  # one operator: its time is the whole graph's
    assert set(d["time_by_bound_ms"]) == set(p.time_by_bound_s)
