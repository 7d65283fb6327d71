"""LLM recommendations: the precisions and kernels an LLM run tries (``LLMRun``), and serving plans with
continuous batching (``recommend_serving``): the replica each device kind gets, its money, the fleet."""

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path

import pytest

from tests.conftest import make_hardware
from tops_advisor.catalog.prices import UserPrice, UserPrices
from tops_advisor.costs import Pricing
from tops_advisor.errors import InputError, NothingFeasibleError
from tops_advisor.llm import load_config
from tops_advisor.recommend import Constraints, LLMRun, ServingAsk, recommend_llm, recommend_serving
from tops_advisor.recommend.llm import auto_dtypes
from tops_advisor.recommend.llm_serving import _points

CITES = {**make_hardware().citations, "peer_link_bandwidth_gb_s": "made-up"}
# 80 GB, NVLink: holds Llama-2-7B alone; has bf16, int8 but no fp8 peak
BIG = make_hardware(id="big", memory_gb=80, peer_link="NVLink", peer_link_bandwidth_gb_s=600, citations=CITES)
SMALL = make_hardware(id="small", memory_gb=12, peer_link="NVLink", peer_link_bandwidth_gb_s=600, citations=CITES)
FP16_ONLY = make_hardware(id="old", dense_tops={"fp32": 10, "fp16": 100, "int8": 200})


# "big" rents at $2 per GPU-hour; "small" has no price
BIG_AT_2 = Pricing({}, UserPrices(Path("test.toml"), {"big": UserPrice(usd_per_hour=2.0)}), today=dt.date(2026, 12, 1))


def test_llm_run_precisions():
    assert auto_dtypes(BIG) == ["bf16", "int8"]                       # no fp8 peak
    assert auto_dtypes(FP16_ONLY) == ["fp16", "int8"]                 # no bf16: fp16
    ps = LLMRun(dtypes=("auto",)).precisions(BIG)
    assert [(p.weight, p.act) for p in ps] == [("bf16", "bf16"), ("int8", "int8")]   # W8A8
    fp8 = LLMRun(dtypes=("fp8",), kv="fp8").precisions(BIG)[0]
    assert (fp8.weight, fp8.act, fp8.kv) == ("fp8", "fp8", "fp8")
    weight_only = LLMRun(weight="int4").precisions(BIG)[0]
    assert (weight_only.weight, weight_only.act) == ("int4", "bf16")
    assert LLMRun().precisions(FP16_ONLY)[0].weight == "fp16"


@pytest.mark.parametrize("kw, message", [
    ({"kernels": "vllm"}, "unknown --kernels 'vllm'"),
    ({"kernels": "llama.cpp:Q5"}, "llama.cpp has no weight format 'Q5'"),
    ({"weight": "fp9"}, "unknown dtype 'fp9'"),
    ({"dtypes": ("fp8",), "weight": "fp8"}, "not both"),
    ({"dtypes": ("tf32",)}, "unknown dtype 'tf32'"),
    ({"weight": "bf16", "act": "fp8"}, "weights bf16 with activations fp8"),
    ({"weight": "int8", "act": "fp8"}, "activations fp8 need weights fp8"),
])
def test_llm_run_refuses_bad_input(kw, message):
    with pytest.raises(InputError, match=message):
        LLMRun(**kw)


def test_fewest_devices_form_says_its_kernels_and_precision():
    res = recommend_llm(load_config("llama2-7b"), [SMALL, BIG], Constraints(), tokens_per_s=1.0, ttft_s=None,
                        run=LLMRun(weight="int8", kernels="fused"))
    for r in res.recommendations:
        assert (r.kernels, r.weight_dtype, r.act_dtype, r.ttft_kind, r.burst_prompts) == \
            ("fused", "int8", "bf16", "burst", 1)
    assert res.constraints.dtypes == ("int8",)
    # int8 weights: 6.7 GB of blocks + bf16 embeddings fit the 12 GB device alone (bf16 needed 2)
    assert {r.hardware: r.devices for r in res.recommendations} == {"small": 1, "big": 1}


def serving(devices, ask: ServingAsk, c: Constraints | None = None, pricing=None, **kw):
    return recommend_serving(load_config("llama2-7b"), devices, c or Constraints(), ask, pricing=pricing, **kw)


def test_serving_plan_money_and_fleet():
    ask = ServingAsk(prompt=512, generate=128, tokens_per_s=20.0, requests_per_s=25.0)
    res = serving([BIG, SMALL], ask, pricing=BIG_AT_2)
    by = {r.hardware: r for r in res.recommendations}
    big, small = by["big"], by["small"]
    assert big.concurrent_requests >= 1 and big.tokens_per_s_per_request >= 20.0
    assert big.tokens_per_s == pytest.approx(big.concurrent_requests / big.step_s)
    assert big.tokens_per_s_per_gpu == pytest.approx(big.tokens_per_s / big.devices)
    # the fleet: the fewest replicas that complete 25 requests/s, each at $2 x its devices an hour
    assert big.replicas == math.ceil(25.0 / big.requests_per_s) and big.requests_per_s_target == 25.0
    assert big.fleet_devices == big.replicas * big.devices
    assert big.usd_per_hour == pytest.approx(2.0 * big.fleet_devices) and big.unit == "tokens"
    # per million of the tokens the fleet generates: 25 requests/s x 128 tokens
    assert big.usd_per_million == pytest.approx(big.usd_per_hour / (25.0 * 128 * 3600) * 1e6)
    assert (big.price_kind, big.price_source, big.price_date) == ("rental", "your prices (test.toml)", None)
    # no price: the plan stands, its money is None (never made up)
    assert small.usd_per_million is None and small.usd_per_hour is None and small.replicas >= 1
    assert small.no_price_reason == "no rental price recorded for small"
    assert small.devices == 2  # 13.5 GB of bf16 weights need two 12 GB devices


def test_serving_plan_takes_the_best_degree_by_the_ranking():
    ask = ServingAsk(prompt=512, generate=128, tokens_per_s=20.0)
    res = serving([BIG], ask, Constraints(rank_by="throughput"))
    k = LLMRun().setups(BIG)[0]
    points, _ = _points(load_config("llama2-7b"), BIG, k, ask.targets(BIG), Constraints(), None, 8)
    assert len(points) > 1  # several degrees serve: the choice is a choice
    best = max(points, key=lambda p: p.tokens_per_s_per_gpu)
    assert res.recommendations[0].devices == best.tp
    assert res.recommendations[0].concurrent_requests == best.concurrent_requests


def test_serving_rejections_and_nothing_feasible():
    with pytest.raises(NothingFeasibleError, match="dtype bf16 .*kernels torch"):
        serving([BIG], ServingAsk(tokens_per_s=1e6))
    res = serving([BIG, make_hardware(id="tiny", memory_gb=4)], ServingAsk(tokens_per_s=5.0))
    assert [r.hardware for r in res.rejected] == ["tiny"]
    assert "one request needs" in res.rejected[0].reason and "no peer link" in res.rejected[0].reason
    with pytest.raises(InputError, match="--requests-per-s must be greater than zero"):
        ServingAsk(requests_per_s=0.0)
