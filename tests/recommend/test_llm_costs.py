"""``recommend_llm`` and ``recommend_serving`` ranked by cost: cheapest million generated tokens first, the price
behind each (``CostFields``), rented or bought, devices without a price listed apart (at the precision any other
ranking gives them), the budget (per hour rented, up front bought) and the one-line errors. Prices are a user's
own, in round numbers; the rates are the records' own predictions, the money worked out from them by hand."""

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path

import pytest

from tests.conftest import make_hardware
from tops_advisor.catalog.prices import UserPrice, UserPrices
from tops_advisor.costs import CostSettings, Pricing
from tops_advisor.errors import InputError, NothingFeasibleError
from tops_advisor.llm import load_config
from tops_advisor.recommend import Constraints, LLMRun, ServingAsk, recommend_llm, recommend_serving
from tops_advisor.recommend.llm import AUTO, _plan_on

CITES = {**make_hardware().citations, "peer_link_bandwidth_gb_s": "made-up"}
LINK = {"peer_link": "NVLink", "peer_link_bandwidth_gb_s": 600, "citations": CITES}
BIG = make_hardware(id="big", memory_gb=80, **LINK)      # 200 W, holds Llama-2-7B alone
SMALL = make_hardware(id="small", memory_gb=12, **LINK)  # needs two for bf16 weights
BARE = make_hardware(id="bare", memory_gb=80, **LINK)    # BIG's numbers, no price
# big: $2/GPU-h or $26,280 (= $1/h over 3 years); small: $0.50/GPU-h or $8,760 (= $1/3 per hour)
PRICES = UserPrices(Path("mine.toml"), {"big": UserPrice(usd_per_hour=2.0, purchase_usd=26_280.0),
                                        "small": UserPrice(usd_per_hour=0.5, purchase_usd=8_760.0)})
PRICING = Pricing({}, PRICES, CostSettings(electricity_usd_per_kwh=0.10, pue=1.5), today=dt.date(2026, 12, 1))
LLAMA = load_config("llama2-7b")
PROMPT, GENERATE = 512, 128


def fewest(c: Constraints, devices=(BIG, SMALL, BARE), pricing=PRICING, **kw):
    return recommend_llm(LLAMA, list(devices), c, tokens_per_s=1.0, ttft_s=None, prompt=PROMPT, generate=GENERATE,
                         pricing=pricing, **kw)


def serving(c: Constraints, ask: ServingAsk | None = None, devices=(BIG, SMALL, BARE)):
    ask = ask or ServingAsk(prompt=PROMPT, generate=GENERATE, tokens_per_s=20.0)
    return recommend_serving(LLAMA, list(devices), c, ask, pricing=PRICING)


def served(r) -> float:
    """Generated tokens/s of ``burst_prompts`` requests served start to end: each yields GENERATE tokens in
    the prefill and GENERATE - 1 decode steps."""
    return r.burst_prompts * GENERATE / (r.ttft_s + (GENERATE - 1) * r.tpot_s)


def test_fewest_devices_ranked_by_cost_rented():
    res = fewest(Constraints(rank_by="cost"))
    assert {r.hardware: r.devices for r in res.recommendations} == {"big": 1, "small": 2}
    for r in res.recommendations:
        hourly = r.devices * PRICES.by_device[r.hardware].usd_per_hour       # $2 x 1, $0.50 x 2
        assert r.usd_per_hour == pytest.approx(hourly) and r.unit == "tokens" and r.replicas == 1
        assert r.tokens_per_s_served == pytest.approx(served(r))
        assert r.usd_per_million == pytest.approx(hourly / (served(r) * 3600) * 1e6)
        assert (r.price_kind, r.price_source, r.price_date) == ("rental", "your prices (mine.toml)", None)
    costs = [r.usd_per_million for r in res.recommendations]
    assert costs == sorted(costs)                                             # cheapest first
    assert "ranked by cost (USD per million generated tokens, rented" in res.notes[0]


def test_fewest_devices_bought_pays_off_the_cards_and_their_electricity():
    # a card busy all the time draws its 200 W: x PUE 1.5 x $0.10/kWh = $0.03/h, beside its purchase over 3 years
    res = fewest(Constraints(rank_by="cost", price_kind="purchase"))
    by = {r.hardware: r for r in res.recommendations}
    assert by["big"].usd_per_hour == pytest.approx(1.0 + 0.03)
    assert by["small"].usd_per_hour == pytest.approx(2 * (1 / 3 + 0.03))
    assert by["small"].up_front_usd == pytest.approx(17_520.0) and by["small"].power_w == pytest.approx(200.0)


def test_an_unpriced_device_is_listed_apart_at_the_throughput_rankings_precision():
    for res in (fewest(Constraints(rank_by="cost")), serving(Constraints(rank_by="cost"))):
        assert "bare" not in [r.hardware for r in res.recommendations]
        assert [(r.hardware, r.reason) for r in res.no_price] == [("bare", "no rental price recorded for bare")]
    run = LLMRun(dtypes=AUTO)   # bf16 and W8A8 int8: int8 decodes faster (half the weight bytes)
    args = dict(tokens_per_s=1.0, ttft_s=None, batch=1, prompt=PROMPT, generate=GENERATE)
    by_throughput = _plan_on(BARE, LLAMA, Constraints(rank_by="throughput"), run, None, PRICING, **args)
    for rank_by in ("cost", "price"):
        rec = _plan_on(BARE, LLAMA, Constraints(rank_by=rank_by), run, None, PRICING, **args)
        assert (rec.weight_dtype, rec.devices) == (by_throughput.weight_dtype, by_throughput.devices) == ("int8", 1)


def test_other_rankings_carry_the_costs_and_rank_the_unpriced():
    res = fewest(Constraints(rank_by="throughput"))
    assert {r.hardware for r in res.recommendations} == {"big", "small", "bare"} and res.no_price == []
    bare = next(r for r in res.recommendations if r.hardware == "bare")
    assert bare.usd_per_million is None and bare.no_price_reason == "no rental price recorded for bare"


def test_a_budget_rejects_what_costs_more():
    res = fewest(Constraints(rank_by="cost", budget_usd=1.5))            # small: 2 x $0.50 = $1/h fits
    assert [r.hardware for r in res.recommendations] == ["small"]
    assert [(r.hardware, r.reason) for r in res.rejected] == [("big", "1 x $2.00/h = $2.00/h > budget $1.50/h rented")]
    bought = fewest(Constraints(rank_by="cost", price_kind="purchase", budget_usd=20_000.0))
    assert [r.hardware for r in bought.recommendations] == ["small"]   # 2 x $8,760 = $17,520
    assert bought.rejected[0].reason == "1 x $26,280 = $26,280 up front > budget $20,000 up front"


def test_a_budget_takes_a_plan_of_the_kind_within_it():
    # big's cheapest million tokens come from a replica of several devices; at $3/h only its one-device plan
    # ($2/h) is within budget, and the kind is ranked with that plan, not rejected for the other
    cheapest = serving(Constraints(rank_by="cost"), devices=(BIG,)).recommendations[0]
    assert cheapest.devices > 1 and cheapest.usd_per_hour > 3.0
    within = serving(Constraints(rank_by="cost", budget_usd=3.0), devices=(BIG,)).recommendations[0]
    assert within.devices == 1 and within.usd_per_hour == pytest.approx(2.0)
    assert within.usd_per_million > cheapest.usd_per_million


@pytest.mark.parametrize("rank_by, budget, message", [
    ("cost", 0.5, "--budget $0.50/h rented is below every device that meets the targets; the cheapest, small, "
                  "costs 2 x $0.50/h = $1.00/h"),
    ("cost", None, "--rank-by cost: no device that meets the targets has a rental price (bare)"),
])
def test_nothing_to_rank_is_one_line(rank_by, budget, message):
    devices = (BARE,) if budget is None else (BIG, SMALL)
    with pytest.raises(NothingFeasibleError) as err:
        fewest(Constraints(rank_by=rank_by, budget_usd=budget), devices=devices)
    assert str(err.value).startswith(message)


def test_ranking_by_cost_needs_prices():
    with pytest.raises(InputError, match="ranking by cost needs prices"):
        fewest(Constraints(rank_by="cost"), pricing=None)
    with pytest.raises(InputError, match="a budget needs prices"):
        recommend_serving(LLAMA, [BIG], Constraints(budget_usd=10.0), ServingAsk())


def test_serving_plans_ranked_by_cost_with_the_fleet_bought():
    # 25 requests/s of 128 tokens: each kind's replicas share the load; each card draws its idle 24 W (12% of
    # TDP) plus 176 W x its share of the work, priced at PUE 1.5 and $0.10/kWh beside its purchase over 3 years
    ask = ServingAsk(prompt=PROMPT, generate=GENERATE, tokens_per_s=20.0, requests_per_s=25.0)
    res = serving(Constraints(rank_by="cost", price_kind="purchase"), ask)
    costs = [r.usd_per_million for r in res.recommendations]
    assert costs == sorted(costs) and [r.hardware for r in res.no_price] == ["bare"]
    for r in res.recommendations:
        assert r.replicas == math.ceil(25.0 / r.requests_per_s) and r.fleet_devices == r.replicas * r.devices
        load = 25.0 / (r.replicas * r.requests_per_s)
        per_card = PRICES.by_device[r.hardware].purchase_usd / (3 * 8760) + (24 + 176 * load) / 1000 * 1.5 * 0.10
        assert r.usd_per_hour == pytest.approx(r.fleet_devices * per_card)
        assert r.usd_per_million == pytest.approx(r.usd_per_hour / (25.0 * GENERATE * 3600) * 1e6)
        assert r.up_front_usd == pytest.approx(r.fleet_devices * PRICES.by_device[r.hardware].purchase_usd)
