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
from tops_advisor.roofline.power_limit import operator_clock_mhz, reference_clocks_mhz
from tops_advisor.roofline.predict import device_times, predict
from tops_advisor.workload import GemmShape, OpRecord, Workload

DB = REPO / "hardware_db"
CUBE = replace(DEFAULTS, dynamic_power_clock_exponent=replace(DEFAULTS.dynamic_power_clock_exponent, value=3.0))


def limited(**over) -> Hardware:
    """The toy device rated at 2000 MHz that holds 1000 MHz under a compute-bound load."""
    cites = {"boost_clock_mhz": "made-up", "sustained_tensor_clock_mhz": "made-up"}
    fields = {"boost_clock_mhz": 2000, "sustained_tensor_clock_mhz": 1000, **over}
    cites.update(fields.pop("citations", {}))
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


def test_a_simt_clock_needs_the_tensor_clock():
    data = limited().model_dump()
    data["sustained_tensor_clock_mhz"] = None
    data["sustained_simt_clock_mhz"] = 800
    data["citations"]["sustained_simt_clock_mhz"] = "made-up"
    with pytest.raises(ValidationError, match="sustained_simt_clock_mhz is given but sustained_tensor_clock_mhz"):
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
def clocks(compute, memory, efficiency, hw=None, reference_mhz=1000.0, reference_efficiency=0.8):
    hw = hw or limited()
    n = len(compute)
    return operator_clock_mhz(np.array(compute, float), np.array(memory, float), np.array(efficiency, float),
                              np.full(n, reference_mhz), np.full(n, reference_efficiency), hw, CUBE)


def test_a_large_gemm_runs_at_the_sustained_clock():
    # at the reference GEMM's own share of the peak (0.8), compute-bound: the measured clock
    assert clocks([10.0], [1.0], [0.8]) == pytest.approx([1000])


def test_a_compute_bound_kernel_below_the_gemm_share_runs_faster():
    # activity e x f^3 = 0.8 x 1000^3: at a quarter of the peak f = 1000 x (0.8 / 0.25)^(1/3) = 1474 MHz
    [f] = clocks([10.0], [1.0], [0.25])
    assert f == pytest.approx(1000 * (0.8 / 0.25) ** (1 / 3))
    assert 0.25 * f ** 3 == pytest.approx(0.8 * 1000 ** 3)      # dynamic power exactly at the limit


def test_memory_bound_operators_run_where_their_power_meets_the_limit():
    rho = np.array([0.25, 0.4])                      # compute time at boost over memory time
    f = clocks(rho, np.ones(2), [0.8, 0.8])
    busy = rho * 2000 / f                            # share of the time the datapath computes, at clock f
    assert np.all(busy < 1)
    assert 0.8 * busy * f ** 3 == pytest.approx(0.8 * 1000 ** 3 * np.ones(2))   # power at the limit
    assert f[0] == pytest.approx((1000 ** 3 / (0.25 * 2000)) ** 0.5)             # 1414.2 MHz


def test_light_operators_keep_the_boost_clock():
    # (1000 / 2000)^3 = 0.125: compute under 1/8 of the memory time stays under the limit even at boost
    assert clocks([0.1, 0.0, 0.125], [1.0, 1.0, 1.0], [0.8, 0.8, 0.8]) == pytest.approx([2000, 2000, 2000])
    assert clocks([10.0], [1.0], [0.05]) == pytest.approx([2000])    # compute-bound but barely busy


def test_simt_work_takes_the_simt_clock_where_the_card_has_one():
    hw = limited(sustained_simt_clock_mhz=800, citations={"sustained_simt_clock_mhz": "made-up"})
    assert reference_clocks_mhz(np.array([True, False]), hw) == pytest.approx([800, 1000])
    assert reference_clocks_mhz(np.array([True, False]), limited()) == pytest.approx([1000, 1000])


def test_a_card_without_a_power_limit_keeps_its_boost_clock():
    rated = make_hardware(boost_clock_mhz=2000, citations={**make_hardware().citations, "boost_clock_mhz": "made-up"})
    assert clocks([10.0, 0.1], [1.0, 1.0], [0.8, 0.8], hw=rated) == pytest.approx([2000, 2000])


# --- the roofline ------------------------------------------------------------------------------------------
def test_the_sustained_clock_lowers_only_the_compute_roof():
    w = workload(big_gemm(), big_add())
    rated, hot = make_hardware(boost_clock_mhz=2000, citations={**make_hardware().citations,
                                                                "boost_clock_mhz": "made-up"}), limited()
    a = op_arrays(w)
    t_rated = device_times(a, device_perf(rated))
    t_hot = device_times(a, device_perf(hot))
    # the 8192^3 GEMM reaches the card's GEMM share of its peak, the reference load: 1000 MHz
    assert t_hot.compute[0] == pytest.approx(t_rated.compute[0] * 2000 / 1000, rel=0.02)
    assert t_hot.compute[1] == pytest.approx(t_rated.compute[1])                 # the add at boost
    assert t_hot.memory == pytest.approx(t_rated.memory)                         # bandwidth untouched


def test_a_compute_bound_kernel_on_the_t4_runs_at_its_sustained_clock():
    t4 = load_hardware_file(DB / "t4.toml")
    dropped = ("sustained_tensor_clock_mhz", "sustained_simt_clock_mhz")
    cites = {k: v for k, v in t4.citations.items() if k not in dropped}
    rated = t4.model_copy(update={**dict.fromkeys(dropped), "citations": cites})
    w = workload(big_gemm())
    hot, cool = predict(w, t4, mode="graph"), predict(w, rated, mode="graph")
    [op_hot], [op_cool] = hot.ops, cool.ops
    assert op_hot.bound == "compute"
    # the large GEMM's share of the FP16 peak at boost, and the share the sustained clock was derived at
    peak = t4.dense_tops["fp16"] * 1e12
    share = big_gemm().flops / op_cool.compute_s / peak
    reference = device_perf(rated).matrix_ops_per_s["fp16"] / peak            # 0.80 for the T4
    assert share == pytest.approx(reference, rel=0.05)                          # a large GEMM is the reference load
    # power x activity at the limit: share x f^3 = reference x 1294^3, so f = 1294 x (reference / share)^(1/3)
    clock = t4.sustained_tensor_clock_mhz * (reference / share) ** (1 / 3)
    assert op_hot.compute_s == pytest.approx(op_cool.compute_s * t4.boost_clock_mhz / clock)
    assert clock == pytest.approx(t4.sustained_tensor_clock_mhz, rel=0.02)
    assert any("power limit 70 W" in note for note in hot.assumptions)


def test_t4_simt_work_throttles_further_than_tensor_work():
    t4 = load_hardware_file(DB / "t4.toml")
    assert t4.sustained_simt_clock_mhz < t4.sustained_tensor_clock_mhz
    n = 4096   # an FP32 SGEMM on the CUDA cores (the T4 has no TF32)
    sgemm = OpRecord("aten.mm", "matmul", "", 2.0 * n ** 3, 8.0 * n * n, 4.0 * n * n, 4.0 * n * n, "fp32", 1,
                     GemmShape(n, n, n))
    w = Workload(name="w", batch=1, dtype="fp32", ops=(sgemm,), functional=True)
    cites = {k: v for k, v in t4.citations.items() if k not in ("sustained_tensor_clock_mhz", "sustained_simt_clock_mhz")}
    rated = t4.model_copy(update={"sustained_tensor_clock_mhz": None, "sustained_simt_clock_mhz": None,
                                  "citations": cites})
    [hot], [cool] = predict(w, t4).ops, predict(w, rated).ops
    assert cool.compute_s < hot.compute_s <= cool.compute_s * t4.boost_clock_mhz / t4.sustained_simt_clock_mhz * 1.0001


def test_h200_predictions_do_not_see_a_power_limit():
    h200 = load_hardware_file(DB / "h200-sxm.toml")
    assert not h200.power_limited
    assert not any("power limit" in note for note in device_perf(h200).assumptions)
