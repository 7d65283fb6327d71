"""End-to-end LLM analysis with a transparent roofline (so the arithmetic is checkable) and the real one."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tests.conftest import make_hardware
from tops_advisor.errors import LLMConfigError, UnsupportedPrecisionError
from tops_advisor.llm import analyze_llm, build_workload, load_config, make_precision
from tops_advisor.llm.parallel import link_for, tp_comm_time_s
from tops_advisor.render.json_units import to_json

CITES = {**make_hardware().citations, "peer_link_bandwidth_gb_s": "made-up", "pcie_gen": "made-up",
         "pcie_lanes": "made-up"}


def toy(**over):
    return make_hardware(peer_link="NVLink", peer_link_bandwidth_gb_s=400, pcie_gen=4, pcie_lanes=16,
                         citations=CITES, **over)


def plain_roofline(w, hw, cal=None, mode="graph"):
    """time = sum over operators of max(flops / datasheet peak, bytes / datasheet bandwidth)."""
    by = {"compute": 0.0, "memory": 0.0, "overhead": 0.0}
    for op in w.ops:
        peak = hw.peak_ops_per_s(op.dtype if op.kind in ("matmul", "attention") else "fp32")
        c, m = op.flops / peak, op.bytes / hw.memory_bandwidth_bytes_per_s
        by["compute" if c > m else "memory"] += max(c, m)
    total = sum(by.values())
    return SimpleNamespace(latency_s=total, bound=max(by, key=by.get), time_by_bound_s=by)


def run(cfg="llama2-7b", hw=None, **kw):
    return analyze_llm(load_config(cfg), hw or toy(), predictor=plain_roofline, **kw)


def test_decode_latency_is_the_roofline_of_the_workload():
    cfg = load_config("llama2-7b")
    r = run(batch=2, context=500)
    w = build_workload(cfg, phase="decode", batch=2, context=500)
    assert r.latency_s == pytest.approx(plain_roofline(w, toy()).latency_s)
    assert r.tokens_per_s == pytest.approx(2 / r.latency_s)          # aggregate output tokens/s
    # 13.48 GB weights + 2 x 501 x 0.52 MB KV + 1 GB runtime = 15.0 GB < 16 GB
    assert r.bound == "memory" and r.fits_memory is True
    assert r.memory.total_bytes == pytest.approx(13.477e9 + 2 * 501 * 524_288 + 1e9, rel=1e-3)


def test_prefill_tokens_per_s():
    r = run(batch=2, phase="prefill", context=300)
    assert r.latency_s == r.ttft_s
    assert r.tokens_per_s == pytest.approx(2 * 300 / r.latency_s)


def test_request_is_ttft_plus_decode_steps():
    r = run(batch=1, prompt=200, generate=50)
    assert r.prefill.context == 200 and r.decode.context == 200 + 25  # the middle of the generation
    assert r.request_latency_s == pytest.approx(r.ttft_s + 49 * r.tpot_s)
    assert r.memory.kv_cache_bytes == 250 * 524_288


def test_request_beyond_the_maximum_context():
    with pytest.raises(LLMConfigError, match="prompt 4000 \\+ generate 200 = 4200 tokens exceeds"):
        run(prompt=4000, generate=200)


def test_tensor_parallel_scaling():
    hw = toy(memory_gb=80)
    one, two = run("llama2-13b", hw, batch=1, context=1000), run("llama2-13b", hw, batch=1, context=1000, tp=2)
    # each rank moves about half the bytes; the all-reduces come on top
    assert two.decode.compute_s == pytest.approx(one.decode.compute_s / 2, rel=0.03)
    comm = tp_comm_time_s(load_config("llama2-13b"), 1, 2, link_for(hw), 2)
    assert two.decode.communication_s == pytest.approx(comm)
    assert two.latency_s == pytest.approx(two.decode.compute_s + comm)
    assert two.memory.weights_bytes < 0.51 * one.memory.weights_bytes
    assert two.tp == 2 and two.link == "NVLink"


def test_decode_turns_compute_bound_exactly_at_the_reported_batch():
    cfg = load_config("llama2-7b")
    r = run(batch=1, context=64)
    b = r.decode_compute_bound_batch
    assert b is not None and b > 1
    below = plain_roofline(build_workload(cfg, phase="decode", batch=b - 1, context=64), toy())
    at = plain_roofline(build_workload(cfg, phase="decode", batch=b, context=64), toy())
    assert below.bound == "memory" and at.bound == "compute"


def test_impossible_request_says_why_and_what_would_work():
    hw = toy(memory_gb=24)
    r = run("gpt3-175b", hw, context=512, precision=make_precision("int8"))
    assert not r.fits_memory and not r.possible
    assert "but toy-gpu has 24 GB" in r.reasons[0]
    assert r.devices_needed == 8
    assert any("--tp 8" in s for s in r.suggestions)
    assert r.max_batch == 0


def test_weight_only_quantization_is_said():
    r = run(precision=make_precision("int4"), context=100)
    assert any("compute at the bf16 peak" in n for n in r.notes)
    assert "weight-only" in r.model_dump()["precision_note"]


def test_real_roofline_on_the_catalog():
    from tops_advisor.catalog import load_catalog

    cat = load_catalog()
    r = analyze_llm(load_config("llama3-8b"), cat.get("h200-sxm"), batch=1, context=1024)
    d = to_json(r)
    for key in ("latency_ms", "tokens_per_s", "memory_required_gb", "fits_memory", "devices", "bound"):
        assert key in d
    assert d["fits_memory"] and d["devices"] == 1
    # the weights must be read at least once per step: 16.06 GB / 4.8 TB/s = 3.35 ms
    assert d["latency_ms"] > 3.3
    with pytest.raises(UnsupportedPrecisionError, match="fp8"):
        analyze_llm(load_config("llama3-8b"), cat.get("a100-sxm4-80gb"), precision=make_precision("fp8", "fp8"))


def test_plan_finds_the_fewest_devices_that_meet_the_targets():
    from tops_advisor.recommend import plan_llm

    hw = toy(memory_gb=80)
    cfg = load_config("llama2-70b")  # 138 GB of bf16 weights: 2 ranks of 69 GB
    plan = plan_llm(cfg, hw, prompt=256, generate=64, predictor=plain_roofline)
    assert plan.devices == 2 and plan.meets_targets and plan.analysis.tp == 2
    fast = plan_llm(cfg, hw, prompt=256, generate=64, tokens_per_s=1e6, max_devices=4, predictor=plain_roofline)
    assert fast.devices is None and not fast.meets_targets and "tokens/s per request < 1e+06" in fast.why
    # the next degree up is faster per token: the plan with a reachable target takes it
    at2 = plan.analysis.tpot_s
    quicker = plan_llm(cfg, hw, prompt=256, generate=64, tokens_per_s=1.01 / at2, predictor=plain_roofline)
    assert quicker.devices == 4


def test_default_precision_follows_the_device():
    from tops_advisor.llm.analysis import precision_for

    no_bf16 = make_hardware(dense_tops={"fp32": 10, "fp16": 100})
    assert precision_for(no_bf16).act == "fp16" and precision_for(no_bf16).weight == "fp16"
    assert precision_for(no_bf16, "int4").act == "fp16"
    assert precision_for(toy()).weight == "bf16"


def test_result_is_frozen_and_its_json_adds_human_units():
    import json

    from pydantic import ValidationError

    r = run(batch=2, prompt=100, generate=10)
    with pytest.raises(ValidationError):
        r.batch = 3
    assert not [k for k in r.model_dump() if k.endswith(("_ms", "_gb"))]  # the model holds base units
    d = to_json(r)
    # ms and GB in the JSON; the precision flattened; tuples become lists
    assert d["ttft_ms"] == pytest.approx(r.ttft_s * 1e3) and d["time_per_output_token_ms"] == pytest.approx(r.tpot_s * 1e3)
    assert d["request_latency_ms"] == pytest.approx((r.ttft_s + 9 * r.tpot_s) * 1e3)
    assert d["memory_required_gb"] == pytest.approx(r.memory.total_bytes / 1e9)
    assert (d["kernel_layout"], d["weight_dtype"], d["devices"]) == ("torch", r.precision.weight, 1)
    assert isinstance(d["notes"], list) and d["prefill"]["latency_ms"] == pytest.approx(r.prefill.latency_s * 1e3)
    assert not {"layout", "precision", "requested", "memory", "request_latency_s"} & set(d)
    json.dumps(d)


def test_the_llm_api_refuses_a_batch_and_context_below_one():
    from tops_advisor.catalog import load_catalog
    from tops_advisor.errors import TopsAdvisorError

    cfg, hw = load_config("llama3-8b"), load_catalog().get("h200-sxm")
    for kwargs in ({"batch": 0}, {"batch": -4}, {"context": 0}):
        with pytest.raises(TopsAdvisorError, match="must be a positive"):
            analyze_llm(cfg, hw, **kwargs)
