"""What an LLM's tokens cost, through the CLI: recommend --llm --rank-by cost in the fewest-devices form and as
serving plans (cheapest million generated tokens first, the JSON keys, devices without a price listed apart),
--buy, --requests-per-s's fleet, --budget, a user's price file, and the bad input (one line, exit 2)."""

from __future__ import annotations

import json
import math

import pytest
from click.testing import CliRunner

from tests.paths import FIXTURES
from tops_advisor.cli import cli

MINE = FIXTURES / "user_prices" / "good.toml"   # h100-sxm $2.10/GPU-h; rtx-4090 $0.35/GPU-h and $1,800
COST_KEYS = {"usd_per_hour", "usd_per_million", "unit", "price_source", "price_date", "price_kind", "replicas"}
# three cards rented in the shipped price files, and titan-rtx, which no price list rents out
ASK = ("recommend", "--llm", "llama3-8b", "--tokens-per-s", "30")
LLM = (*ASK, "-H", "h100-sxm", "-H", "l4", "-H", "rtx-4090", "-H", "titan-rtx")


def run(*args, env=None):
    result = CliRunner().invoke(cli, list(args), env=env)
    assert "Traceback" not in result.output
    return result


def run_json(*args) -> dict:
    result = run(*args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def check_ranked(out: dict, unpriced: str) -> list[dict]:
    """The keys of every ranked record, cheapest first, and ``unpriced`` apart, without a price."""
    recs = out["recommendations"]
    assert recs and out["rank_by"] == "cost"
    for r in recs:
        assert COST_KEYS <= set(r) and r["unit"] == "tokens" and r["usd_per_million"] > 0
    costs = [r["usd_per_million"] for r in recs]
    assert costs == sorted(costs)
    assert [r["hardware"] for r in out["no_price"]] == [unpriced]
    assert unpriced not in [r["hardware"] for r in recs]
    return recs


def test_fewest_devices_ranked_by_cost():
    out = run_json(*LLM, "--rank-by", "cost")
    for r in check_ranked(out, "titan-rtx"):
        assert r["price_kind"] == "rental" and r["price_date"] and r["price_source"]
        assert r["usd_per_hour"] == pytest.approx(r["devices"] * r["unit_price_usd"])
        assert r["usd_per_million"] == pytest.approx(r["usd_per_hour"] / (r["tokens_per_s_served"] * 3600) * 1e6)


def test_serving_plans_ranked_by_cost_with_a_fleet_bought():
    out = run_json(*LLM, "--rank-by", "cost", "--requests-per-s", "4", "--buy", "--prompt", "1024",
                   "--generate", "256")
    # bought, the L4 is the one without a price (NVIDIA lists none, no dated quote found); titan-rtx has its launch
    # price
    recs = check_ranked(out, "l4")
    assert "titan-rtx" in [r["hardware"] for r in recs]
    for r in recs:
        assert r["price_kind"] == "purchase" and r["replicas"] == math.ceil(4 / r["requests_per_s"])
        assert r["fleet_devices"] == r["replicas"] * r["devices"]
        assert r["up_front_usd"] == pytest.approx(r["fleet_devices"] * r["unit_price_usd"])
        # three years of every hour, plus the electricity
        assert r["amortisation_usd_per_hour"] == pytest.approx(r["up_front_usd"] / (3 * 8760))
        assert r["usd_per_hour"] == pytest.approx(r["amortisation_usd_per_hour"] + r["energy_usd_per_hour"])
        assert r["usd_per_million"] == pytest.approx(r["usd_per_hour"] / (4 * 256 * 3600) * 1e6)


def test_the_table_shows_the_money_the_prices_and_the_unpriced():
    result = run(*LLM, "--rank-by", "cost", env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "cheapest first" in out and "USD per M" in out and "Prices used" in out
    assert "No price (meet the targets, not ranked)" in out and "titan-rtx" in out


def test_your_own_prices_and_a_budget():
    out = run_json(*LLM, "--rank-by", "cost", "--serving", "--prices", str(MINE), "--budget", "1")
    by = {r["hardware"]: r for r in out["recommendations"]}
    assert by["rtx-4090"]["unit_price_usd"] == 0.35 and by["rtx-4090"]["price_source"].startswith("your prices")
    assert "h100-sxm" not in by                                            # $2.10/h > $1/h
    assert any(r["hardware"] == "h100-sxm" and r["reason"].endswith("> budget $1.00/h rented")
               for r in out["rejected"])


@pytest.mark.parametrize("args, message", [
    ((*LLM, "--rank-by", "cost", "--budget", "0.01"), "--budget $0.01/h rented is below every device"),
    ((*ASK, "--rank-by", "cost", "-H", "titan-rtx", "--serving"), "--rank-by cost: no device that meets the targets"),
    ((*LLM, "--budget", "-5"), "--budget must be greater than zero"),
    ((*LLM, "--pue", "0.5"), "--pue must be at least 1"),
])
def test_bad_cost_input_is_one_line_and_exit_2(args, message):
    result = run(*args)
    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines()[0].startswith(f"error: {message}"), result.stderr
