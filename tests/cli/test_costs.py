"""What the work costs, through the CLI: recommend --rank-by cost (replicas, the fleet's cost, cheapest first,
the JSON keys, devices without a price), analyze's costs, a user's price file, old prices, and every bad input
(one line on stderr, exit 2)."""

from __future__ import annotations

import json
import math

import pytest
from click.testing import CliRunner

from tests.paths import FIXTURES
from tops_advisor.cli import cli

MODEL = "examples/small_cnn.py"
MINE = FIXTURES / "user_prices" / "good.toml"   # h100-sxm $2.10/GPU-h; rtx-4090 $0.35/GPU-h and $1,800
COST_KEYS = {"usd_per_hour", "usd_per_million", "unit", "price_source", "price_date", "price_kind", "replicas"}
# Four cards: two with rental prices in the shipped files, a Jetson without one, and h100-sxm
CARDS = ("-H", "h100-sxm", "-H", "l4", "-H", "rtx-4090", "-H", "jetson-orin-nx-16gb")


def run(*args, env=None):
    result = CliRunner().invoke(cli, list(args), env=env)
    assert "Traceback" not in result.output
    return result


def run_json(*args) -> dict:
    result = run(*args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def fleet() -> dict:
    return run_json("recommend", MODEL, "--throughput", "50000", "--rank-by", "cost", "--dtype", "auto", *CARDS)


def test_rank_by_cost_answers_with_replicas_and_the_fleets_cost(fleet):
    recs = fleet["recommendations"]
    assert recs and fleet["rank_by"] == "cost"
    for r in recs:
        assert COST_KEYS <= set(r) and r["unit"] == "samples" and r["price_kind"] == "rental"
        assert r["replicas"] == math.ceil(50_000 / r["throughput_per_s"])          # the fewest that reach it
        assert r["usd_per_hour"] == pytest.approx(r["replicas"] * r["unit_price_usd"])
        assert r["usd_per_million"] == pytest.approx(r["usd_per_hour"] / (50_000 * 3600) * 1e6)
    costs = [r["usd_per_million"] for r in recs]
    assert costs == sorted(costs)                                                   # cheapest first
    assert [r["hardware"] for r in fleet["no_price"]] == ["jetson-orin-nx-16gb"]
    assert fleet["no_price"][0]["reason"].startswith("no rental price: Jetson modules")


def test_the_table_shows_replicas_prices_and_the_unpriced(fleet):
    result = run("recommend", MODEL, "--throughput", "50000", "--rank-by", "cost", "--dtype", "auto", *CARDS,
                 env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "cheapest first" in out and "fleet's total" in out and "Prices used" in out
    assert "No price (meet the targets, not ranked)" in out and "jetson-orin-nx-16gb" in out
    first = fleet["recommendations"][0]
    assert f"{first['hardware']}" in out and "/GPU-h" in out


def test_the_python_api_gives_the_same_answer(fleet):
    from tops_advisor.api import ModelCosts, calibration_for, load_catalog, load_pricing
    from tops_advisor.recommend import Constraints, auto_dtypes, recommend

    catalog = load_catalog()
    res = recommend(ModelCosts(MODEL).at, list(catalog),
                    Constraints(throughput_per_s=50_000, rank_by="cost", dtypes=auto_dtypes("graph"), dtype_auto=True,
                                hardware=("h100-sxm", "l4", "rtx-4090", "jetson-orin-nx-16gb")),
                    calibration_of=calibration_for, pricing=load_pricing(catalog))
    assert [(r.hardware, r.replicas, r.dtype, r.batch) for r in res.recommendations] == \
        [(r["hardware"], r["replicas"], r["dtype"], r["batch"]) for r in fleet["recommendations"]]
    assert [r.usd_per_hour for r in res.recommendations] == \
        pytest.approx([r["usd_per_hour"] for r in fleet["recommendations"]])


def test_buying_uses_purchase_prices_and_the_overrides():
    d = run_json("recommend", MODEL, "--rank-by", "cost", "--buy", "-H", "rtx-4090", "-H", "rtx-5090",
                 "--electricity-usd-per-kwh", "0.2", "--pue", "1.2", "--life-years", "5")
    for r in d["recommendations"]:
        assert r["price_kind"] == "purchase" and r["price_older_than_a_year"] is True   # launch MSRPs
        amortised = r["unit_price_usd"] / (5 * 8760)
        energy = r["power_w"] / 1000 * 1.2 * 0.2
        assert r["usd_per_hour"] == pytest.approx(amortised + energy)
    assert "5 years of use" in " ".join(d["notes"]) and "PUE 1.2" in " ".join(d["notes"])


def test_a_user_price_file_is_used_and_named():
    d = run_json("recommend", MODEL, "--rank-by", "cost", "-H", "h100-sxm", "-H", "rtx-4090", "--prices", str(MINE))
    by_id = {r["hardware"]: r for r in d["recommendations"]}
    assert by_id["h100-sxm"]["unit_price_usd"] == 2.1 and by_id["rtx-4090"]["unit_price_usd"] == 0.35
    assert by_id["h100-sxm"]["price_source"] == f"your prices ({MINE})" and by_id["h100-sxm"]["price_date"] is None


def test_analyze_states_what_the_operating_point_costs():
    d = run_json("analyze", MODEL, "-H", "h100-sxm", "--batch", "8")
    kinds = {c["price_kind"]: c for c in d["costs"]}
    assert set(kinds) == {"rental", "purchase"} and d["no_price"] == []
    for c in kinds.values():
        assert COST_KEYS - {"replicas"} <= set(c) and c["devices"] == 1
        assert c["usd_per_million"] == pytest.approx(c["usd_per_hour"] / (d["throughput_per_s"] * 3600) * 1e6)
    table = " ".join(run("analyze", MODEL, "-H", "rtx-4090", "--batch", "8", env={"COLUMNS": "160"}).stdout.split())
    assert "rented $" in table and "bought $" in table
    assert "price $1,599/card from NVIDIA (launch MSRP), 2022-10-12 (older than a year)" in table
    mine = run("analyze", MODEL, "-H", "rtx-4090", "--batch", "8", "--prices", str(MINE), env={"COLUMNS": "160"})
    assert f"your prices ({MINE})" in mine.stdout
    jetson = run_json("analyze", MODEL, "-H", "jetson-orin-nx-16gb", "--batch", "8")
    assert jetson["costs"] == [] and len(jetson["no_price"]) == 2


@pytest.mark.parametrize("args,message", [
    (("--rank-by", "cost", "--segment", "edge"),
     "error: --rank-by cost: no device that meets the targets has a rental price"),
    (("--rank-by", "cost", "-H", "h100-sxm", "--throughput", "50000", "--budget", "0.01"),
     "error: --budget $0.01/h rented is below every device that meets the targets; the cheapest, h100-sxm, costs"),
    (("--rank-by", "cost", "--budget", "-3"), "error: --budget must be greater than zero, got -3"),
    (("--rank-by", "cost", "--pue", "0.5"), "error: --pue must be at least 1, got 0.5"),
    (("--rank-by", "cost", "--electricity-usd-per-kwh", "-1"),
     "error: --electricity-usd-per-kwh must be zero or more, got -1"),
    (("--rank-by", "cost", "--life-years", "0"), "error: --life-years must be greater than zero, got 0"),
])
def test_bad_cost_input_is_one_line_and_exit_2(args, message):
    result = run("recommend", MODEL, *args)
    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines()[0].startswith(message), result.stderr
