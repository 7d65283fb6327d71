"""`tops-advisor hardware show` with prices: the JSON keys, the table, --prices / TOPS_ADVISOR_PRICES, and one
clear error line for a bad prices file."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from tests.paths import FIXTURES
from tops_advisor.cli import cli

USER = FIXTURES / "user_prices"
PRICE_KEYS = {"kind", "usd", "per", "provider", "source", "date", "date_kind", "basis", "note", "whose",
              "older_than_a_year"}
SOURCE_KEYS = {"key", "title", "url", "publisher", "date"}


def run(*args, env=None):
    result = CliRunner().invoke(cli, ["hardware", "show", *args], env=env)
    assert "Traceback" not in result.output
    return result


def show_json(*args, env=None) -> dict:
    result = run(*args, "--json", env=env)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_json_lists_prices_with_their_keys():
    rec = show_json("h100-sxm")
    assert rec["id"] == "h100-sxm" and rec["prices"]
    for p in rec["prices"]:
        assert set(p) == PRICE_KEYS and set(p["source"]) == SOURCE_KEYS
        assert (p["kind"], p["per"]) in {("purchase", "card"), ("rental", "gpu-hour")}
        assert p["usd"] > 0 and p["whose"] == "shipped" and p["source"]["key"]
        if p["kind"] == "rental":
            assert p["provider"]
    assert {p["kind"] for p in rec["prices"]} == {"purchase", "rental"}
    assert rec["no_public_price"] == {}
    assert rec["prices_checked_on"]


def test_json_says_why_a_kind_has_no_price():
    rec = show_json("jetson-agx-orin-64gb")
    assert rec["prices"] == []
    assert set(rec["no_public_price"]) == {"purchase", "rental"}


def test_an_old_price_is_marked_in_json_and_table():
    rec = show_json("rtx-4090")
    msrp = next(p for p in rec["prices"] if p["kind"] == "purchase")
    assert msrp["usd"] == 1599 and msrp["date"] == "2022-10-12" and msrp["older_than_a_year"] is True
    table = run("rtx-4090", env={"COLUMNS": "160"})
    assert table.exit_code == 0
    assert "2022-10-12 (older than a year)" in table.stdout and "Prices in USD" in table.stdout


def test_table_lists_providers_and_reasons():
    out = run("h100-sxm", env={"COLUMNS": "160"}).stdout
    assert "RunPod (Community Cloud)" in out and "system price / 8" in out
    out = run("h200-nvl", env={"COLUMNS": "160"}).stdout
    assert "no public purchase price:" in out and "no public rental price:" in out


@pytest.mark.parametrize("how", ["option", "env"])
def test_user_prices_replace_the_shipped_ones(how):
    path = USER / "good.toml"
    args, env = (("--prices", str(path)), None) if how == "option" else ((), {"TOPS_ADVISOR_PRICES": str(path)})
    rec = show_json("h100-sxm", *args, env=env)
    rentals = [p for p in rec["prices"] if p["kind"] == "rental"]
    assert [(p["usd"], p["whose"]) for p in rentals] == [(2.1, f"your prices ({path})")]
    assert rentals[0]["source"]["title"] == f"your prices ({path})" and rentals[0]["date"] is None
    assert any(p["kind"] == "purchase" and p["whose"] == "shipped" for p in rec["prices"])
    table = run("h100-sxm", *args, env={**(env or {}), "COLUMNS": "200"}).stdout
    assert f"your prices ({path})" in table


def test_the_option_wins_over_the_environment(tmp_path):
    other = tmp_path / "other.toml"
    other.write_text("[h100-sxm]\nusd_per_hour = 9.5\n")
    rec = show_json("h100-sxm", "--prices", str(other), env={"TOPS_ADVISOR_PRICES": str(USER / "good.toml")})
    assert [p["usd"] for p in rec["prices"] if p["kind"] == "rental"] == [9.5]


@pytest.mark.parametrize("name,expected", [
    ("unknown-device.toml", "[h10o-sxm]: unknown hardware 'h10o-sxm'"),
    ("unknown-key.toml", "field usd_per_hr: unknown key; expected usd_per_hour"),
    ("negative.toml", "field usd_per_hour: Input should be greater than 0 (got -2)"),
    ("malformed.toml", "not valid TOML"),
    ("missing.toml", "no such file"),
])
def test_a_bad_prices_file_is_one_error_line(name, expected):
    result = run("h100-sxm", "--prices", str(USER / name))
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert lines[0].startswith(f"error: {USER / name}: ") and expected in lines[0], result.stderr
    assert len(lines) <= 2 and result.stdout == ""


def test_a_bad_prices_file_from_the_environment_fails_the_same_way():
    result = run("h100-sxm", "--json", env={"TOPS_ADVISOR_PRICES": str(USER / "negative.toml")})
    assert result.exit_code == 2 and "greater than 0" in result.stderr and result.stdout == ""
