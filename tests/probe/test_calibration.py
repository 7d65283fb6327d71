"""Calibration files: round trip, atomic write under interruption, lookup order, corrupt files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import tops_advisor.calibration as calmod
from tops_advisor.calibration import (
    Calibration,
    GemmSample,
    calibration_filename,
    find_calibration,
    load_calibration,
    save_calibration,
)
from tops_advisor.errors import CalibrationError


def make_cal(hardware: str = "toy-gpu", bf16: float = 700.0) -> Calibration:
    return Calibration(hardware=hardware, measured_tops={"bf16": bf16, "fp32": 50.0},
                       memory_bandwidth_gb_s=4000.0, read_bandwidth_gb_s=4100.0, kernel_graph_us=0.9,
                       kernel_eager_us=7.0, elementwise_bandwidth_gb_s=4300.0,
                       gemm_samples=(GemmSample(precision="bf16", m=1, n=4096, k=4096, tops=2.5),))


@pytest.fixture
def dirs(tmp_path, monkeypatch):
    """A user directory and a shipped directory of our own."""
    user, shipped = tmp_path / "user", tmp_path / "shipped"
    shipped.mkdir()
    monkeypatch.setenv(calmod.DIR_ENV_VAR, str(user))
    monkeypatch.setattr(calmod, "shipped_calibration_dir", lambda: shipped)
    return user, shipped


def test_round_trip(tmp_path):
    cal = make_cal()
    path = save_calibration(cal, tmp_path / "sub" / "toy-gpu.json")
    back = load_calibration(path)
    assert back == cal
    assert back.memory_bandwidth_bytes_per_s == 4000.0 * 1e9  # GB = 1e9 bytes
    assert back.peak_ops_per_s("bf16") == 700.0 * 1e12  # TOPS = 1e12 ops/s
    assert back.peak_ops_per_s("fp8") is None
    assert not list(path.parent.glob(".*.tmp"))


def test_interrupted_write_keeps_old_file(tmp_path, monkeypatch):
    path = save_calibration(make_cal(bf16=600.0), tmp_path / "toy-gpu.json")
    old = path.read_text()

    def boom(fd):
        raise KeyboardInterrupt  # Ctrl-C after the new bytes were written, before the rename

    monkeypatch.setattr(calmod.os, "fsync", boom)
    with pytest.raises(KeyboardInterrupt):
        save_calibration(make_cal(bf16=700.0), path)
    assert path.read_text() == old
    assert load_calibration(path).measured_tops["bf16"] == 600.0
    assert [p.name for p in tmp_path.iterdir()] == ["toy-gpu.json"]  # no temp file left behind


def test_unwritable_path_is_one_clear_error(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    with pytest.raises(CalibrationError, match="cannot write calibration"):
        save_calibration(make_cal(), blocker / "cal.json")


@pytest.mark.parametrize("text, match", [
    ("{not json", "not valid JSON"),
    (json.dumps({"hardware": "toy-gpu", "measured_tops": {"bf16": -1}, "memory_bandwidth_gb_s": 1}),
     "measured_tops.bf16"),
    (json.dumps({"hardware": "toy-gpu", "measured_tops": {}}), "memory_bandwidth_gb_s"),
])
def test_corrupt_file_errors_name_file_and_field(tmp_path, text, match):
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(CalibrationError, match=match) as err:
        load_calibration(path)
    assert str(path) in str(err.value)


def test_missing_file():
    with pytest.raises(CalibrationError, match="does not exist"):
        load_calibration("/nonexistent/x.json")


def test_filename_slug():
    assert calibration_filename("h200-sxm") == "h200-sxm.json"
    assert calibration_filename("NVIDIA Foo Bar 24GB") == "nvidia-foo-bar-24gb.json"


def test_find_prefers_explicit_then_user_then_shipped(dirs, tmp_path):
    user, shipped = dirs
    assert find_calibration("toy-gpu") == (None, "none")
    save_calibration(make_cal(bf16=500.0), shipped / "toy-gpu.json")
    cal, where = find_calibration("toy-gpu")
    assert cal.measured_tops["bf16"] == 500.0 and where.startswith("shipped ")
    save_calibration(make_cal(bf16=600.0), user / "toy-gpu.json")
    cal, where = find_calibration("toy-gpu")
    assert cal.measured_tops["bf16"] == 600.0 and where.startswith("user ")
    explicit = save_calibration(make_cal(bf16=700.0), tmp_path / "mine.json")
    cal, where = find_calibration("toy-gpu", explicit)
    assert cal.measured_tops["bf16"] == 700.0 and where == f"file {explicit}"


def test_corrupt_implicit_file_is_ignored_with_one_warning(dirs, capsys):
    user, shipped = dirs
    user.mkdir()
    (user / "toy-gpu.json").write_text("{truncated")
    save_calibration(make_cal(bf16=500.0), shipped / "toy-gpu.json")
    cal, where = find_calibration("toy-gpu")
    assert cal.measured_tops["bf16"] == 500.0 and where.startswith("shipped ")
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("warning: ignoring calibration") and "toy-gpu.json" in err


def test_mismatched_implicit_file_is_ignored(dirs, capsys):
    user, _ = dirs
    save_calibration(make_cal(hardware="other-gpu"), user / "toy-gpu.json")
    assert find_calibration("toy-gpu") == (None, "none")
    assert "measured on 'other-gpu'" in capsys.readouterr().err


def test_explicit_bad_file_raises(dirs, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("[]")
    with pytest.raises(CalibrationError):
        find_calibration("toy-gpu", bad)
    other = save_calibration(make_cal(hardware="other-gpu"), tmp_path / "other.json")
    with pytest.raises(CalibrationError, match="measured on 'other-gpu'"):
        find_calibration("toy-gpu", other)


def test_shipped_calibrations_validate_and_match_catalog_ids():
    from tops_advisor.catalog import load_catalog

    catalog = load_catalog()
    shipped = calmod.shipped_calibration_dir()
    files = sorted(Path(shipped).glob("*.json"))
    for path in files:
        cal = load_calibration(path)
        assert path.name == calibration_filename(cal.hardware)
        assert cal.hardware in catalog and cal.matched_catalog
        assert cal.measured_tops and cal.memory_bandwidth_gb_s > 0
