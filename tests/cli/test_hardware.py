"""`tops-advisor hardware ...` through click's CliRunner: exit codes, messages, and pure JSON on stdout."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.paths import FIXTURES
from tops_advisor.catalog import load_catalog, shipped_catalog_dir
from tops_advisor.cli import cli

REQUIRED_KEYS = {"id", "name", "memory_gb", "memory_bandwidth_gb_s", "tdp_w", "dense_tops", "sparse_tops", "sources"}


def run(*args, env=None):
    result = CliRunner().invoke(cli, ["hardware", *args], env=env)
    assert "Traceback" not in result.output
    return result


def run_json(*args, env=None):
    result = run(*args, "--json", env=env)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)  # stdout holds only JSON


def fail(*args, code=2, env=None) -> str:
    """Run a command that must fail; return its stderr (one 'error:' line and maybe a 'hint:' line)."""
    result = run(*args, env=env)
    assert result.exit_code == code, result.output
    lines = result.stderr.strip().splitlines()
    assert lines[0].startswith("error: ") and len(lines) <= 2, result.stderr
    return result.stderr


# --- list ------------------------------------------------------------------------------------------------

def test_list_json_has_every_device_with_required_keys():
    devices = run_json("list")
    assert [d["id"] for d in devices] == load_catalog().ids
    for d in devices:
        assert REQUIRED_KEYS <= set(d)
        assert "fp32" in d["dense_tops"]


def test_list_filters():
    edge = run_json("list", "--segment", "datacenter")
    assert edge and all(d["segment"] == "datacenter" for d in edge)
    big = run_json("list", "--min-memory", "100")
    ids = {d["id"] for d in big}
    assert {"h200-sxm", "h200-nvl", "b200"} <= ids and "h100-sxm" not in ids  # 141, 141, 180 GB vs 80 GB
    assert all(d["memory_gb"] >= 100 for d in big)
    fp8 = {d["id"] for d in run_json("list", "--precision", "FP8")}
    assert {"h100-sxm", "l4", "b200"} <= fp8 and not fp8 & {"a100-sxm4-80gb", "t4", "v100-sxm2-32gb"}


def test_list_table_shows_the_filter():
    result = run("list", "--precision", "int4", "--segment", "datacenter")
    assert result.exit_code == 0
    assert "int4 dense" in result.output and "a100-sxm4-80gb" in result.output
    assert "h100-sxm" not in result.output  # Hopper has no int4


def test_list_bad_filters():
    err = fail("list", "--precision", "fp7")
    assert "unknown dtype 'fp7'" in err and "did you mean" in err
    assert "--min-memory must be zero or more GB" in fail("list", "--min-memory", "-1")
    usage = run("list", "--segment", "cloud")  # click's own usage error, also exit 2
    assert usage.exit_code == 2 and "'cloud' is not one of 'edge', 'workstation', 'datacenter'" in usage.stderr


# --- show ------------------------------------------------------------------------------------------------

def test_show_json_by_alias():
    d = run_json("show", "h200-sxm")
    assert d["id"] == "h200-sxm" and REQUIRED_KEYS <= set(d)
    assert d["memory_gb"] == 141 and d["memory_bandwidth_gb_s"] == 4800 and d["tdp_w"] == 700
    assert d["dense_tops"]["fp16"] == 989.5 and d["sparse_tops"]["fp16"] == 1979  # 1979 / 2 = 989.5
    assert {s["key"] for s in d["sources"]} >= {"h200-datasheet"}


def test_show_table_cites_sources():
    result = run("show", "H100 NVL")
    assert result.exit_code == 0
    for text in ("NVIDIA H100 NVL", "3,900", "h100-datasheet", "2:4 sparse", "Notes"):
        assert text in result.output


def test_show_table_has_every_cited_field():
    from tops_advisor.catalog import load_catalog
    from tops_advisor.catalog.schema import _NUMERIC_FIELDS
    from tops_advisor.render.hardware import _SHOW_FIELDS

    assert set(_NUMERIC_FIELDS) <= {name for name, _ in _SHOW_FIELDS}   # every field a file may cite is a row
    result = run("show", "l40s")
    assert result.exit_code == 0
    hw = load_catalog().get("l40s")
    for field in ("l2_cache_mb", "l2_bandwidth_gb_s", "boost_clock_mhz"):
        assert getattr(hw, field) is not None and field in result.output


def test_show_ambiguous():
    err = fail("show", "a100")
    assert "error: hardware name 'a100' is ambiguous: it matches a100-pcie-40gb, a100-pcie-80gb, a100-sxm4-80gb" in err


def test_show_unknown_suggests():
    err = fail("show", "h10o-sxm")
    assert "error: unknown hardware 'h10o-sxm'" in err and "hint: did you mean:" in err and "h100-sxm" in err


# --- compare ---------------------------------------------------------------------------------------------

def test_compare_json_derived_columns():
    a, b = run_json("compare", "h100-sxm", "h200-sxm")
    assert (a["id"], b["id"]) == ("h100-sxm", "h200-sxm")
    # fp16 dense 989.5 TOPS / 700 W = 1.4136 TOPS/W; sparse 1979 / 700 = 2.827
    assert a["tops_per_watt"]["dense"]["fp16"] == pytest.approx(989.5 / 700)
    assert a["tops_per_watt"]["sparse"]["fp16"] == pytest.approx(1979 / 700)
    # ridge = 989.5e12 ops/s / 3.35e12 bytes/s = 295.4 ops/byte (H100); / 4.8e12 = 206.1 (H200)
    assert a["ridge_ops_per_byte"]["fp16"] == pytest.approx(989.5 / 3.35)
    assert b["ridge_ops_per_byte"]["fp16"] == pytest.approx(989.5 / 4.8)


def test_compare_table_keeps_dense_and_sparse_apart():
    result = run("compare", "a100-sxm4-80gb", "h100-sxm", "b200")
    assert result.exit_code == 0
    out = result.output
    for row in ("fp16 dense TOPS", "fp16 2:4 sparse TOPS", "fp16 dense TOPS/W", "memory bandwidth GB/s", "TDP W",
                "fp4 dense TOPS"):
        assert row in out
    assert "fp32 2:4 sparse" not in out  # no device has a sparse fp32 peak: no empty row


def test_compare_needs_two_devices():
    err = fail("compare", "H200 SXM", "h200-sxm")  # one device under two names
    assert "at least two different devices" in err and "hardware show" in err
    assert "unknown hardware 'nope'" in fail("compare", "h200-sxm", "nope")


# --- validate --------------------------------------------------------------------------------------------

def test_validate_shipped_dir_ok():
    result = run("validate", str(shipped_catalog_dir()))
    assert result.exit_code == 0, result.output
    n = len(list(shipped_catalog_dir().glob("*.toml")))
    assert result.stdout.count("OK ") == n and "ERROR" not in result.stdout


def test_validate_reports_each_bad_file():
    bad = FIXTURES / "catalog_bad"
    result = run("validate", str(bad), str(FIXTURES / "catalog_extra" / "toy-gpu.toml"))
    assert result.exit_code == 1
    n_bad = len(list(bad.glob("*.toml")))
    assert result.stdout.count("ERROR ") == n_bad and result.stdout.count("OK ") == 1
    assert "unknown-key.toml: field shader_clock_mhz: unknown key" in result.stdout


def test_validate_json_and_clash_and_missing(tmp_path):
    results = json.loads(run("validate", "--json", str(FIXTURES / "catalog_clash"), str(tmp_path / "nope")).stdout)
    by_path = {Path(r["path"]).name: r for r in results}
    assert by_path["toy-gpu.toml"]["ok"] is True
    assert "names the same device as 'toy-gpu'" in by_path["toygpu.toml"]["error"]
    assert by_path["nope"]["error"].endswith("no such file or directory")
    assert run("validate", str(tmp_path)).exit_code == 1  # an empty directory is not a catalog


# --- schema ----------------------------------------------------------------------------------------------

def test_schema_is_json_schema():
    result = run("schema")
    assert result.exit_code == 0
    schema = json.loads(result.stdout)
    assert schema["additionalProperties"] is False
    assert {"memory_bandwidth_gb_s", "dense_tops", "sparse_tops", "citations"} <= set(schema["properties"])
    assert "memory_gb" in schema["required"]
    assert json.loads(run("schema", "--json").stdout) == schema


def test_schema_takes_no_catalog():
    # the schema is the file format, the same for every catalog: an option that would be ignored is refused
    result = run("schema", "--catalog", str(FIXTURES / "catalog_extra"))
    assert result.exit_code == 2 and "No such option '--catalog'" in result.stderr


# --- extra catalogs --------------------------------------------------------------------------------------

def test_catalog_option_adds_and_overrides(tmp_path):
    extra = str(FIXTURES / "catalog_extra")
    assert run_json("show", "toy", "--catalog", extra)["id"] == "toy-gpu"
    assert "unknown hardware 'toy'" in fail("show", "toy")
    (tmp_path / "t4.toml").write_text(
        (shipped_catalog_dir() / "t4.toml").read_text().replace("tdp_w = 70", "tdp_w = 60"))
    assert run_json("show", "t4", "--catalog", str(tmp_path))["tdp_w"] == 60


def test_env_var_catalog():
    env = {"TOPS_ADVISOR_CATALOG": str(FIXTURES / "catalog_extra")}
    assert run_json("show", "Toy GPU 16GB", env=env)["id"] == "toy-gpu"
    assert "toy-gpu" in {d["id"] for d in run_json("list", env=env)}


def test_bad_catalog_dirs(tmp_path):
    assert "does not exist" in fail("list", "--catalog", str(tmp_path / "absent"))
    assert "names the same device" in fail("show", "h200-sxm", "--catalog", str(FIXTURES / "catalog_clash"))
    err = fail("list", "--catalog", str(FIXTURES / "catalog_bad"))
    assert "catalog_bad/" in err and "error: " in err
    env = {"TOPS_ADVISOR_CATALOG": str(tmp_path / "absent")}
    assert "does not exist" in fail("list", env=env)
