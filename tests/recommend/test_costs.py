"""``recommend`` ranked by cost: the replicas each device needs for a total, the fleet's cost, cheapest first;
devices without a price listed apart (at the operating point any other ranking gives them); the budget; and the
one-line errors. Devices and workloads are the synthetic ones of test_recommend.py, worked out by hand."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from tests.conftest import make_hardware
from tests.recommend.test_recommend import FAST, SLOW, stream
from tops_advisor.catalog.prices import UserPrice, UserPrices
from tops_advisor.costs import CostSettings, Pricing
from tops_advisor.errors import InputError, NothingFeasibleError
from tops_advisor.recommend import Constraints, recommend
from tops_advisor.workload import OpRecord, Workload

TODAY = dt.date(2026, 12, 1)
BARE = make_hardware(id="bare-gpu", name="Bare GPU")   # FAST's numbers, no price
# FAST: $2/GPU-h or $26,280 (= $1/h over 3 years); SLOW: $0.50/GPU-h or $8,760 ($0.333/h)
PRICES = UserPrices(Path("mine.toml"), {"toy-gpu": UserPrice(usd_per_hour=2.0, purchase_usd=26_280.0),
                                        "slow-gpu": UserPrice(usd_per_hour=0.5, purchase_usd=8_760.0)})
PRICING = Pricing({}, PRICES, CostSettings(electricity_usd_per_kwh=0.10, pue=1.5, idle_power_fraction=0.1),
                  today=TODAY)
# At batch 8: FAST 8 / 83.15 us = 96,211.7/s, SLOW 8 / 163.15 us = 49,034.6/s (test_recommend.py), memory-bound
# all the time (busy 1).
FAST_RATE, SLOW_RATE = 8 / 83.15e-6, 8 / 163.15e-6


def ranked(c: Constraints, devices=(FAST, SLOW, BARE), workload=stream, pricing=PRICING):
    return recommend(workload, list(devices), c, pricing=pricing)


def test_cost_ranking_gives_replicas_for_the_total_and_ranks_the_fleets():
    # 200,000/s: FAST needs ceil(2.079) = 3 replicas x $2 = $6/h; SLOW ceil(4.079) = 5 x $0.50 = $2.50/h.
    # Per million samples of the 200,000/s asked for (720 M per hour): SLOW $0.00347, FAST $0.00833.
    res = ranked(Constraints(batch=8, throughput_per_s=200_000, rank_by="cost"))
    assert [(r.hardware, r.replicas) for r in res.recommendations] == [("slow-gpu", 5), ("toy-gpu", 3)]
    slow, fast = res.recommendations
    assert slow.usd_per_hour == pytest.approx(2.5) and fast.usd_per_hour == pytest.approx(6.0)
    assert slow.usd_per_million == pytest.approx(2.5 / 720) and fast.usd_per_million == pytest.approx(6.0 / 720)
    assert (fast.price_kind, fast.unit, fast.unit_price_usd) == ("rental", "samples", 2.0)
    assert fast.price_source == "your prices (mine.toml)" and fast.price_date is None
    assert "fleet's total" in " ".join(res.notes)


def test_without_a_target_the_cost_is_one_device_at_its_rate():
    # FAST: $2/h at 96,211.7/s = 346.4 M/h: $0.005774 per M. SLOW: $0.50/h at 176.5 M/h: $0.002833 per M.
    res = ranked(Constraints(batch=8, rank_by="cost"))
    assert [r.hardware for r in res.recommendations] == ["slow-gpu", "toy-gpu"]
    fast = res.recommendations[1]
    assert fast.replicas == 1 and fast.usd_per_million == pytest.approx(2.0 / (FAST_RATE * 3600) * 1e6)


def test_other_rankings_keep_the_throughput_target_per_device_and_carry_costs():
    res = ranked(Constraints(batch=8, throughput_per_s=60_000, rank_by="throughput"))
    assert [r.hardware for r in res.recommendations] == ["toy-gpu", "bare-gpu"]   # SLOW misses 60,000/s alone
    assert res.rejected[0].hardware == "slow-gpu"
    toy, bare = res.recommendations
    assert toy.replicas == 1 and toy.usd_per_hour == pytest.approx(2.0)
    assert bare.usd_per_hour is None and bare.no_price_reason == "no rental price recorded for bare-gpu"
    assert res.no_price == []          # ranking by throughput: an unpriced device is still ranked


def test_an_unpriced_device_is_listed_apart_not_ranked():
    res = ranked(Constraints(batch=8, rank_by="cost"))
    assert "bare-gpu" not in [r.hardware for r in res.recommendations]
    assert [(r.hardware, r.reason) for r in res.no_price] == [("bare-gpu", "no rental price recorded for bare-gpu")]


def typed_stream(batch: int, dtype: str) -> Workload:
    """stream() with bytes at the precision's width: 4.25 MB per sample at fp32, halved at fp16, quartered at
    int8; so int8 is the fastest precision on every device."""
    width = {"fp32": 4, "fp16": 2, "bf16": 2, "fp8": 1, "int8": 1}[dtype]
    op = OpRecord("aten.mm", "matmul", "", 1e3 * batch, 1.0625e6 * width * batch, 1.0625e6 * width * batch, 0,
                  dtype, 1)
    return Workload("typed", batch, dtype, (op,))


@pytest.mark.parametrize("rank_by", ["price", "cost"])
def test_an_unpriced_device_gets_the_precision_and_batch_of_the_throughput_ranking(rank_by):
    """Before, ranking by price gave a device without a price the first precision tried (fp32), not the one it
    runs fastest in."""
    dtypes = ("fp32", "fp16", "int8")
    by_throughput = ranked(Constraints(dtypes=dtypes, rank_by="throughput", max_batch=64), workload=typed_stream)
    expected = {r.hardware: (r.dtype, r.batch) for r in by_throughput.recommendations}
    res = ranked(Constraints(dtypes=dtypes, rank_by=rank_by, max_batch=64), workload=typed_stream)
    assert expected["bare-gpu"][0] == "int8"
    for r in res.recommendations:
        assert (r.dtype, r.batch) == expected[r.hardware], r.hardware
    assert [r.hardware for r in res.no_price] == ["bare-gpu"]


def test_buying_adds_the_electricity_of_each_replicas_share_of_the_load():
    # 100,000/s on FAST: 2 replicas, each at 100,000 / (2 x 96,211.7) = 52.0% load, so busy 0.520:
    # 20 W + 180 W x 0.520 = 113.5 W; x PUE 1.5 x $0.10/kWh = $0.01702/h; + $1/h paying off each card.
    res = ranked(Constraints(batch=8, throughput_per_s=100_000, rank_by="cost", price_kind="purchase"),
                 devices=(FAST,))
    r = res.recommendations[0]
    load = 100_000 / (2 * FAST_RATE)
    watts = 20 + 180 * load
    assert r.replicas == 2 and r.power_w == pytest.approx(watts)
    assert r.energy_usd_per_hour == pytest.approx(2 * watts / 1000 * 1.5 * 0.10)
    assert r.usd_per_hour == pytest.approx(2 * (1.0 + watts / 1000 * 1.5 * 0.10))
    assert r.up_front_usd == pytest.approx(52_560.0) and r.price_kind == "purchase"


def test_a_budget_rejects_the_fleets_that_cost_more():
    res = ranked(Constraints(batch=8, throughput_per_s=200_000, rank_by="cost", budget_usd=3.0))
    assert [r.hardware for r in res.recommendations] == ["slow-gpu"]
    assert [(r.hardware, r.reason) for r in res.rejected] == [
        ("toy-gpu", "3 x $2.00/h = $6.00/h > budget $3.00/h rented")]
    bought = ranked(Constraints(batch=8, throughput_per_s=200_000, rank_by="cost", price_kind="purchase",
                                budget_usd=50_000.0))
    # FAST: 3 x $26,280 = $78,840 up front > $50,000; SLOW: 5 x $8,760 = $43,800
    assert [r.hardware for r in bought.recommendations] == ["slow-gpu"]
    assert bought.rejected[0].reason == "3 x $26,280 = $78,840 up front > budget $50,000 up front"


def test_a_budget_below_every_option_is_one_line():
    with pytest.raises(NothingFeasibleError) as err:
        ranked(Constraints(batch=8, throughput_per_s=200_000, rank_by="cost", budget_usd=1.0))
    assert str(err.value) == ("--budget $1.00/h rented is below every device that meets the targets; the cheapest, "
                              "slow-gpu, costs 5 x $0.50/h = $2.50/h")
    assert "raise --budget" in err.value.hint


def test_no_price_for_any_candidate_is_one_line():
    with pytest.raises(NothingFeasibleError) as err:
        ranked(Constraints(batch=8, rank_by="cost"), devices=(BARE,))
    assert str(err.value).startswith("--rank-by cost: no device that meets the targets has a rental price "
                                     "(bare-gpu)")
    assert "--prices FILE" in err.value.hint


def test_ranking_by_cost_needs_prices():
    with pytest.raises(InputError, match="ranking by cost needs prices"):
        recommend(stream, [FAST], Constraints(rank_by="cost"))
    with pytest.raises(InputError, match="--budget must be greater than zero, got -5"):
        Constraints(budget_usd=-5)
    with pytest.raises(InputError, match="unknown price kind 'lease'"):
        Constraints(price_kind="lease")


def test_max_price_reads_the_purchase_prices_of_the_pricing():
    res = ranked(Constraints(batch=8, max_price_usd=10_000))
    assert [r.hardware for r in res.recommendations] == ["slow-gpu"]
    assert {(r.hardware, r.reason) for r in res.rejected} == {("toy-gpu", "price $26,280 > $10,000"),
                                                              ("bare-gpu", "no known purchase price")}
