"""The roofline chart (tops_advisor/render/plot.py): every line is labelled, fp16 and bf16 told apart."""

from __future__ import annotations

from tops_advisor.catalog import load_catalog
from tops_advisor.formatting import fmt_bytes
from tops_advisor.roofline import predict
from tops_advisor.workload import OpRecord, Workload


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
