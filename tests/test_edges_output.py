"""What a user reads: numbers in human units, one line per shared reason or advice, names folded at their
separators, advice that does not contradict itself, a roofline chart whose every line is labelled, and the
short names h100 and h200 treated alike (both ask, listing the variants)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from tests.conftest import make_hardware
from tops_advisor.advice import advise
from tops_advisor.api import largest_fitting_batch
from tops_advisor.catalog import load_catalog
from tops_advisor.cli import cli
from tops_advisor.errors import AmbiguousHardwareError
from tops_advisor.formatting import fmt_bytes, fmt_memory, fmt_ops, format_seconds
from tops_advisor.render.recommend import advice_lines, grouped, rejected_table
from tops_advisor.render.tables import Name
from tops_advisor.roofline import predict
from tops_advisor.workload import OpRecord, Workload

HW = make_hardware()   # 100 TOPS fp16, 1000 GB/s, 16 GB


# --- numbers ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("seconds, text", [
    (0.99951, "1 s"),           # rounds to 1.00 s: not '1e+03 ms'
    (1.06, "1.06 s"),
    (9300.0, "2.58 h"),         # 9300 / 3600 = 2.583 h: not '9.3e+03 s'
    (150.0, "2.5 min"),
    (13.15e-6, "13.1 us"),      # 13.15e-6 * 1e6 (binary 13.149999...) rounds down, as before
    (0.0123, "12.3 ms"),
])
def test_format_seconds_never_prints_an_exponent(seconds, text):
    assert format_seconds(seconds) == text


def test_large_counts_use_decimal_prefixes():
    assert fmt_ops(8.2176e17) == "822 P"        # 821,763,123.20 G operations before
    assert fmt_bytes(5.2e15) == "5.2 PB"
    assert fmt_ops(999_960) == "1 M"            # the prefix is chosen after rounding
    assert fmt_memory(41e9) == "41.0 GB" and fmt_memory(6.2e14) == "620 TB"


# --- a workload that does not fit ---------------------------------------------------------------------------

def test_the_largest_fitting_batch_follows_the_memory_model():
    # batch 8: weights 4 GB, activations 8 GB + inputs 0.8 GB = 1.1 GB per sample; 16 GB less the weights and
    # the runtime's reserve R leaves 12 GB - R: floor((12e9 - R) / 1.1e9) samples
    w = Workload("w", 8, "fp16", (OpRecord("aten.mm", "matmul", "", 1e9, 1e6, 1e6, 0, "fp16", 1),),
                 param_bytes=4e9, activation_peak_bytes=8e9, input_bytes=0.8e9)
    p = predict(w, HW)
    reserve = p.memory_required_bytes - 12.8e9
    assert largest_fitting_batch(w, p) == int((16e9 - 4e9 - reserve) // 1.1e9)


def test_analyze_refuses_a_batch_that_does_not_fit_in_one_line():
    r = CliRunner().invoke(cli, ["analyze", "examples/small_cnn.py", "-H", "h200-sxm", "-b", "100000000000"])
    assert r.exit_code == 2 and "Traceback" not in r.output
    line = r.stderr.splitlines()[0]
    assert line.startswith("error: batch 100000000000 needs ") and "; h200-sxm has 141 GB; the largest batch" in line
    assert "e+" not in line


# --- grouped lines ------------------------------------------------------------------------------------------

def _rec(hardware: str, advice: str):
    return SimpleNamespace(hardware=hardware, advice=(advice,))


def test_identical_reasons_are_one_row_naming_the_devices():
    res = SimpleNamespace(rejected=[SimpleNamespace(hardware=h, reason=why) for h, why in (
        ("a10", "segment datacenter, not edge"), ("b200", "segment datacenter, not edge"),
        ("rtx-4090", "segment workstation, not edge"), ("h200-sxm", "segment datacenter, not edge"))])
    table = rejected_table(res)
    assert [str(c) for c in table.columns[0]._cells] == ["segment datacenter, not edge",
                                                        "segment workstation, not edge"]
    assert [str(c) for c in table.columns[1]._cells] == ["a10, b200, h200-sxm", "rtx-4090"]


def test_advice_repeated_word_for_word_is_printed_once():
    res = SimpleNamespace(recommendations=[_rec("l4", "fuse"), _rec("t4", "fuse"), _rec("a10", "other")])
    assert advice_lines(res) == ["l4, t4: fuse", "a10: other"]
    assert grouped([("x", "a"), ("y", "b"), ("z", "a")]) == [(["x", "z"], "a"), (["y"], "b")]


def test_recommend_hint_offers_only_options_not_taken():
    r = CliRunner().invoke(cli, ["recommend", "examples/small_cnn.py", "--latency", "1ns", "--segment", "edge"])
    assert r.exit_code == 2
    hint = next(line for line in r.stderr.splitlines() if line.startswith("hint:"))
    assert "--mode graph" not in hint   # graph is already the mode
    r = CliRunner().invoke(cli, ["recommend", "examples/small_cnn.py", "--latency", "1ns", "--mode", "eager",
                                 "--segment", "edge"])
    assert "--mode graph" in r.stderr


# --- names in tables ----------------------------------------------------------------------------------------

def test_names_fold_after_their_separators():
    assert Name("max_pool2d_with_indices").lines(20) == ["max_pool2d_with_", "indices"]
    assert Name("layer1.0.downsample.1").lines(12) == ["layer1.0.", "downsample.1"]
    assert Name("abcdefghij").lines(4) == ["abcd", "efgh", "ij"]   # one piece wider than the column


def test_the_operator_column_keeps_whole_names_at_80_columns():
    from rich.console import Console

    from tops_advisor.render.analyze import top_ops_table

    op = OpRecord("aten.max_pool2d_with_indices", "pool", "layer1.0.downsample.1", 1e6, 1e8, 1e7, 0, "fp16", 1)
    pred = predict(Workload("w", 1, "fp16", (op,)), HW)
    out = Console(width=80, record=True, file=open("/dev/null", "w"), color_system=None)  # noqa: SIM115
    out.print(top_ops_table(pred, 1))
    assert "max_pool2d_with_indices" in out.export_text()


# --- advice that does not contradict itself -----------------------------------------------------------------

def _compute_bound(peak_scale: float):
    """A compute-bound prediction on a small fp32 device (no faster precision to suggest, so no other rule
    speaks), its peak scaled by ``peak_scale``: utilisation = attainable / (peak x scale)."""
    import dataclasses

    hw = make_hardware(dense_tops={"fp32": 10}, sparse_tops={})
    op = OpRecord("aten.mm", "matmul", "", 1e9, 1e4, 1e4, 0, "fp32", 1)
    pred = predict(Workload("w", 1, "fp32", (op,)), hw)
    return dataclasses.replace(pred, peak_ops_per_s=pred.peak_ops_per_s * peak_scale), hw


def test_compute_bound_far_below_peak_says_what_limits_it():
    pred, hw = _compute_bound(3.0)   # 78% of peak at scale 1: 26% at scale 3
    assert pred.bound == "compute" and pred.utilisation < 0.3
    text = advise(pred, hw)[-1]
    assert "little to gain" not in text and "shapes allow" in text


def test_little_to_gain_only_near_the_roof():
    pred, hw = _compute_bound(1.0)   # 78% of peak
    assert pred.utilisation > 0.6
    assert advise(pred, hw)[-1] == f"near the roof: compute-bound at {pred.utilisation:.0%} of peak; little to " \
                                   "gain from settings"


# --- the roofline chart -------------------------------------------------------------------------------------

def test_the_roofline_chart_labels_every_line(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from tops_advisor.render.plot import roofline_figure, roofline_plot
    from tops_advisor.roofline import device_perf

    hw = load_catalog().get("h200-sxm")
    ops = (OpRecord("aten.mm", "matmul", "", 1e12, 1e9, 1e8, 0, "fp16", 1),
           OpRecord("aten.add", "elementwise", "", 1e8, 4e8, 2e8, 0, "fp16", 1))
    pred, perf = predict(Workload("w", 8, "fp16", ops), hw), device_perf(hw)
    assert roofline_plot(pred, perf, tmp_path / "roof.png").stat().st_size > 0
    fig = roofline_figure(pred, perf)
    ax = fig.axes[0]
    texts = [t.get_text() for t in ax.get_legend().get_texts()]
    plt.close(fig)
    bw_text = fmt_bytes(perf.bandwidth_bytes_per_s)
    assert any(t.startswith("memory roof: ") and f"{bw_text}/s" in t for t in texts)
    assert any(t.startswith("fp16 roof ") for t in texts) and any(t.startswith("bf16 roof ") for t in texts)
    assert any(t.startswith("bubble area: ") for t in texts)
    assert all(not line.get_label().startswith("_") for line in ax.get_lines())   # every line is in the legend
    fp16, bf16 = (next(line for line in ax.get_lines() if line.get_label().startswith(f"{p} roof"))
                  for p in ("fp16", "bf16"))
    assert fp16.get_linestyle() != bf16.get_linestyle() and fp16.get_color() != bf16.get_color()


# --- short names --------------------------------------------------------------------------------------------

def test_h100_and_h200_are_both_ambiguous_and_list_their_variants():
    catalog = load_catalog()
    for short, variants in (("h100", "h100-nvl, h100-pcie, h100-sxm"), ("h200", "h200-nvl, h200-sxm")):
        with pytest.raises(AmbiguousHardwareError, match=f"it matches {variants}"):
            catalog.get(short)
    assert catalog.get("H100 PCIe").id == "h100-pcie" and catalog.get("H200 NVL").id == "h200-nvl"
    assert catalog.get("H100 SXM").id == "h100-sxm" and catalog.get("H200 SXM").id == "h200-sxm"
