"""Eager host profiles (tops_advisor/roofline/hosts.py): the fit, the host-bound rule, applying a profile, the
CLI option, and the scorer's leave-one-model-out use of them (benchmarks/reports/published_score.py)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from tests.paths import load_script
from tops_advisor.api import device_perf, load_catalog
from tops_advisor.cli import cli
from tops_advisor.errors import InputError
from tops_advisor.roofline.defaults import DEFAULTS
from tops_advisor.roofline.hosts import (
    HOST_PROFILES,
    EagerCase,
    fit_host,
    fit_host_scale,
    get_host_profile,
    host_bound,
    host_perf,
    with_host_scale,
)
from tops_advisor.workload import OpRecord, Workload


def _workload(n_ops: int, nbytes: float = 4096.0) -> Workload:
    """n_ops small elementwise operators: eager latency is host time."""
    ops = tuple(OpRecord(name="aten.relu", kind="elementwise", module=f"m{i}", flops=nbytes / 4,
                         bytes_read=nbytes, bytes_written=nbytes, param_bytes=0.0, dtype="fp16", kernels=1)
                for i in range(n_ops))
    return Workload(name=f"ew{n_ops}", batch=1, dtype="fp16", ops=ops, module_calls=n_ops + 1)


@pytest.fixture(scope="module")
def perf():
    return device_perf(load_catalog().get("v100-sxm2-32gb"))


def test_the_fit_recovers_the_scale_the_rows_were_made_with(perf):
    cases = []
    for n in (40, 150):
        case = EagerCase(_workload(n), perf, measured_s=1.0)
        case.measured_s = case.latency_s(2.3)   # host time 2.3x the reference host's
        cases.append(case)
    assert fit_host_scale(cases) == pytest.approx(2.3, rel=0.002)
    # host-bound rows: latency proportional to the scale
    assert cases[1].latency_s(4.0) == pytest.approx(2 * cases[1].latency_s(2.0), rel=0.01)


def test_the_fit_needs_rows():
    with pytest.raises(InputError):
        fit_host_scale([])


def test_a_row_is_host_bound_when_the_device_time_is_under_half_the_latency():
    assert host_bound(device_s=4.9e-3, measured_s=10e-3)
    assert not host_bound(device_s=5.1e-3, measured_s=10e-3)


def test_a_profile_replaces_the_host_cost_and_scales_autocast_apart(perf):
    profile = get_host_profile("DLE-PyTorch-21.03")
    plain, amp = host_perf(perf, profile, "fp32"), host_perf(perf, profile, "amp")
    assert plain.eager_op_s == pytest.approx(DEFAULTS.eager_op_s.value * profile.host_scale)
    assert amp.eager_op_s == pytest.approx(plain.eager_op_s * profile.autocast_host_scale)
    assert any("dle-pytorch-21.03" in a for a in plain.assumptions)
    # the device side is untouched
    assert plain.matrix_ops_per_s == perf.matrix_ops_per_s and plain.kind_floor_s == perf.kind_floor_s
    assert host_perf(perf, HOST_PROFILES["reference"], "amp").eager_op_s == DEFAULTS.eager_op_s.value


def test_every_profile_says_what_it_assumes_and_where_its_numbers_come_from():
    for profile in HOST_PROFILES.values():
        assert profile.assumes and profile.source
        assert profile.host_scale > 0 and profile.autocast_host_scale > 0
        if profile.host_scale != 1.0:
            assert profile.fitted_from


def test_bad_scales_and_names_are_input_errors(perf):
    with pytest.raises(InputError):
        with_host_scale(perf, 0.0)
    with pytest.raises(InputError, match="known: reference"):
        get_host_profile("dle-21.03")


def test_cli_rejects_an_unknown_host_profile_in_one_line():
    r = CliRunner().invoke(cli, ["analyze", "examples/small_cnn.py", "-H", "v100-sxm2-32gb", "--mode", "eager",
                                 "--eager-host", "nope"])
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert "unknown eager host profile 'nope'" in r.stderr


def test_cli_eager_host_profile_raises_the_eager_latency():
    args = ["analyze", "examples/small_cnn.py", "-H", "v100-sxm2-32gb", "--mode", "eager", "--json"]
    import json
    plain = json.loads(CliRunner().invoke(cli, args).stdout)
    hosted = json.loads(CliRunner().invoke(cli, [*args, "--eager-host", "dle-pytorch-21.03"]).stdout)
    assert hosted["host_time_ms"] == pytest.approx(plain["host_time_ms"] * HOST_PROFILES["dle-pytorch-21.03"]
                                                   .host_scale, rel=0.05)


# --- the scorer: leave-one-model-out -----------------------------------------------------------------------
ps = load_script("benchmarks/reports/published_score.py", "published_score")


def _rec(workload: str, run: str = "eager", env: str = "env-x") -> dict:
    return {"card": "v100-sxm2-32gb", "workload": workload, "batch": 1, "precision": "fp32", "run": run,
            "environment": env, "metric": "latency_ms", "value": 10.0, "pointer": "test"}


def test_the_scale_for_a_model_is_fitted_without_that_model(monkeypatch):
    pred = ps.Predictor.__new__(ps.Predictor)
    pred._fits, pred.hosts = {}, True
    seen = []
    monkeypatch.setattr(pred, "_fit", lambda env, exclude, autocast: seen.append((env, exclude, autocast)))
    pred.host_fit(_rec("examples/a.py"))
    pred.host_fit(_rec("examples/b.py", run="amp"))
    pred.host_fit(_rec("examples/c.py", env=""))           # no environment: no profile
    pred.host_fit(_rec("examples/c.py", run="cuda-graph"))  # not an eager run
    assert seen == [("env-x", "examples/a.py", False), ("env-x", "examples/b.py", True)]


def test_a_scale_needs_rows_of_two_other_models(monkeypatch):
    pred = ps.Predictor.__new__(ps.Predictor)
    monkeypatch.setattr(pred, "host_cases", lambda env, exclude, autocast: [("m1", None), ("m1", None)])
    assert pred._fit("env-x", "m0", False) is None


def test_input_copies_are_checked_and_priced_only_where_a_record_names_one():
    rec = _rec("examples/resnet50.py")
    assert any("input_copy" in p for p in ps.record_problems({**rec, "input_copy": "pinned"}, {"v100-sxm2-32gb"}))
    assert not ps.record_problems({**rec, "input_copy": "dataloader-shared-memory"}, {"v100-sxm2-32gb"})

    class W:
        input_bytes = 7225344.0   # 12 x 3 x 224 x 224 fp32
    assert ps.timed_copy_bytes({**rec, "input_copy": "dataloader-shared-memory"}, W()) == 7225344.0
    assert ps.timed_copy_bytes(rec, W()) == 0.0


def test_environment_names_are_checked():
    rec = _rec("examples/resnet50.py", env=" ")
    assert any("environment" in p for p in ps.record_problems(rec, {"v100-sxm2-32gb"}))
    assert not ps.record_problems(_rec("examples/resnet50.py"), {"v100-sxm2-32gb"})


def test_the_scorer_collects_only_eager_rows_of_named_environments():
    pred = ps.Predictor.__new__(ps.Predictor)
    docs = [{"records": [_rec("a"), _rec("b", run="amp"), _rec("c", run="cuda-graph"), _rec("d", env="")]}]
    pred.set_environments(docs)
    assert [r["workload"] for r in pred._environments["env-x"]] == ["a", "b"]


def test_the_fit_recovers_a_timed_input_copy_beside_the_scale(perf):
    """Rows that time a host-to-device copy of their input (``copy_bytes``) beside rows that do not: the fit
    separates the copy's rate from the host scale."""
    rate = 2.0e9
    cases = []
    for n, copy_bytes in ((40, 7.2e6), (150, 7.2e6), (40, 0.0), (150, 0.0)):
        case = EagerCase(_workload(n), perf, measured_s=1.0, copy_bytes=copy_bytes)
        case.measured_s = case.latency_s(1.7) + copy_bytes / rate
        cases.append(case)
    fit = fit_host(cases)
    assert fit.scale == pytest.approx(1.7, rel=0.01)
    assert fit.copy_rate_b_s == pytest.approx(rate, rel=0.03)
    assert fit.latency_s(cases[0]) == pytest.approx(cases[0].measured_s, rel=0.01)
    # no row copies: no rate
    assert fit_host(cases[2:]).copy_rate_b_s is None
