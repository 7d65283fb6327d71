"""Power-limited cards: the catalog field ``sustained_tensor_clock_mhz`` and ``roofline/power_limit.py``.

Expected clocks are derived here from the power balance the module states (dynamic power = D x u x (f / f_t)^n
at the limit), with round-numbered clocks and the exponent replaced by a round 2 or 3 where the value matters.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from pydantic import ValidationError

from tests.conftest import make_hardware
from tests.paths import REPO
from tops_advisor.catalog import Hardware, load_catalog, load_hardware_file
from tops_advisor.roofline.arrays import op_arrays
from tops_advisor.roofline.defaults import DEFAULTS
from tops_advisor.roofline.device import device_perf
from tops_advisor.roofline.power_limit import compute_slowdown, operator_clock_mhz
from tops_advisor.roofline.predict import device_times, predict
from tops_advisor.workload import GemmShape, OpRecord, Workload

DB = REPO / "hardware_db"
CUBE = replace(DEFAULTS, dynamic_power_clock_exponent=replace(DEFAULTS.dynamic_power_clock_exponent, value=3.0))


def limited(**over) -> Hardware:
    """The toy device rated at 2000 MHz that holds 1000 MHz under a compute-bound load."""
    cites = {"boost_clock_mhz": "made-up", "sustained_tensor_clock_mhz": "made-up"}
    fields = {"boost_clock_mhz": 2000, "sustained_tensor_clock_mhz": 1000, **over}
    return make_hardware(citations={**make_hardware().citations, **cites}, **fields)


def workload(*ops: OpRecord) -> Workload:
    return Workload(name="w", batch=1, dtype="fp16", ops=ops, functional=True)


def big_gemm(n: int = 8192) -> OpRecord:
    """An n^3 fp16 GEMM: compute-bound on every card in the catalog."""
    return OpRecord("aten.mm", "matmul", "", 2.0 * n ** 3, 4.0 * n * n, 2.0 * n * n, 2.0 * n * n, "fp16", 1,
                    GemmShape(n, n, n))


def big_add(elems: float = 5e8) -> OpRecord:
    """An fp16 add of two tensors: 1 operation per 6 bytes, memory-bound everywhere."""
    return OpRecord("aten.add", "elementwise", "", elems, 4.0 * elems, 2.0 * elems, 0.0, "fp16", 1)


# --- the catalog field -------------------------------------------------------------------------------------
def test_the_field_needs_a_boost_clock():
    data = limited().model_dump()
    data["boost_clock_mhz"] = None
    data["citations"].pop("boost_clock_mhz")
    with pytest.raises(ValidationError, match="sustained_tensor_clock_mhz is given but boost_clock_mhz is not"):
        Hardware(**data)


def test_the_field_needs_a_citation():
    data = limited().model_dump()
    data["citations"].pop("sustained_tensor_clock_mhz")
    with pytest.raises(ValidationError, match="no citation for sustained_tensor_clock_mhz"):
        Hardware(**data)


@pytest.mark.parametrize(("clock", "message"), [(2500, "above boost_clock_mhz"), (0, "greater than 0"),
                                                (-5, "greater than 0")])
def test_the_field_is_a_positive_clock_no_higher_than_boost(clock, message):
    data = limited().model_dump()
    data["sustained_tensor_clock_mhz"] = clock
    with pytest.raises(ValidationError, match=message):
        Hardware(**data)


def test_power_limited_means_a_sustained_clock_below_boost():
    assert limited().power_limited
    assert not limited(sustained_tensor_clock_mhz=2000).power_limited   # at boost: nothing to lower
    assert not make_hardware().power_limited


def test_shipped_cards_with_the_field_are_the_power_limited_ones():
    catalog = load_catalog()
    for hw in catalog:
        expected = hw.sustained_tensor_clock_mhz is not None and hw.sustained_tensor_clock_mhz < hw.boost_clock_mhz
        assert hw.power_limited == expected, hw.id
    ids = {hw.id for hw in catalog if hw.power_limited}
    assert "t4" in ids
    assert not ids & {"h200-sxm", "h100-sxm", "a100-sxm4-80gb", "rtx-4090"}   # no power-limit clock of their own


def test_t4_sustained_clock_is_below_its_boost_clock():
    t4 = load_hardware_file(DB / "t4.toml")
    # the datasheet's FP16 peak is 40 SMs x 8 tensor cores x 64 FMA x 2 at the boost clock
    assert 40 * 8 * 64 * 2 * t4.boost_clock_mhz * 1e6 == pytest.approx(t4.dense_tops["fp16"] * 1e12, rel=0.01)
    assert t4.sustained_tensor_clock_mhz < t4.boost_clock_mhz


# --- the clock of one operator -----------------------------------------------------------------------------
def test_compute_bound_operators_run_at_the_sustained_clock():
    hw = limited()
    # compute at boost 0.5 s, memory 0.5 s: at 1000 MHz compute takes 1.0 s, so the SMs are always busy
    assert operator_clock_mhz(np.array([0.5, 10.0]), np.array([1.0, 1.0]), hw, CUBE) == pytest.approx([1000, 1000])


def test_light_operators_run_where_their_power_meets_the_limit():
    hw = limited()
    rho = np.array([0.25, 0.4])                        # compute share of the memory time, at boost
    f = operator_clock_mhz(rho, np.ones(2), hw, CUBE)
    busy = rho * 2000 / f                              # share of the time the SMs compute, at clock f
    assert np.all(busy < 1)
    assert busy * (f / 1000) ** 3 == pytest.approx([1.0, 1.0])   # dynamic power exactly at the limit
    assert f[0] == pytest.approx((1000 ** 3 / (0.25 * 2000)) ** 0.5)   # 1414.2 MHz


def test_memory_bound_operators_keep_the_boost_clock():
    hw = limited()
    # (1000 / 2000)^3 = 0.125: with compute under 1/8 of the memory time even boost stays under the limit
    clocks = operator_clock_mhz(np.array([0.1, 0.0, 0.125]), np.ones(3), hw, CUBE)
    assert clocks == pytest.approx([2000, 2000, 2000])


def test_a_card_without_a_power_limit_keeps_every_clock():
    slow = compute_slowdown(np.array([1.0, 0.1]), np.array([0.1, 1.0]), make_hardware(boost_clock_mhz=2000,
                            citations={**make_hardware().citations, "boost_clock_mhz": "made-up"}), DEFAULTS)
    assert slow == pytest.approx([1.0, 1.0])


# --- the roofline ------------------------------------------------------------------------------------------
def test_the_sustained_clock_lowers_only_the_compute_roof():
    w = workload(big_gemm(), big_add())
    rated, hot = make_hardware(boost_clock_mhz=2000, citations={**make_hardware().citations,
                                                                "boost_clock_mhz": "made-up"}), limited()
    a = op_arrays(w)
    t_rated = device_times(a, device_perf(rated))
    t_hot = device_times(a, device_perf(hot))
    assert t_hot.compute[0] == pytest.approx(t_rated.compute[0] * 2000 / 1000)   # the GEMM at 1000 MHz
    assert t_hot.compute[1] == pytest.approx(t_rated.compute[1])                 # the add at boost
    assert t_hot.memory == pytest.approx(t_rated.memory)                         # bandwidth untouched


def test_a_compute_bound_kernel_on_the_t4_runs_at_its_sustained_clock():
    t4 = load_hardware_file(DB / "t4.toml")
    cites = {k: v for k, v in t4.citations.items() if k != "sustained_tensor_clock_mhz"}
    rated = t4.model_copy(update={"sustained_tensor_clock_mhz": None, "citations": cites})
    w = workload(big_gemm())
    hot, cool = predict(w, t4, mode="graph"), predict(w, rated, mode="graph")
    [op_hot], [op_cool] = hot.ops, cool.ops
    assert op_hot.bound == "compute"
    # the GEMM's compute time grows by boost / sustained, read from the catalog (1590 / 1294)
    assert op_hot.compute_s == pytest.approx(op_cool.compute_s * t4.boost_clock_mhz / t4.sustained_tensor_clock_mhz)
    # its rate: the card's GEMM share of the datasheet peak at the sustained clock
    perf = device_perf(rated)
    rate_at_sustained = perf.matrix_ops_per_s["fp16"] * t4.sustained_tensor_clock_mhz / t4.boost_clock_mhz
    assert big_gemm().flops / op_hot.compute_s <= rate_at_sustained * 1.0001
    assert any("power limit 70 W" in note for note in hot.assumptions)


def test_h200_predictions_do_not_see_a_power_limit():
    h200 = load_hardware_file(DB / "h200-sxm.toml")
    assert not h200.power_limited
    assert not any("power limit" in note for note in device_perf(h200).assumptions)
