"""Every table fits an 80-column terminal: no line wider than 80, no number cut to '12.…', and no
character of any cell lost (rich crops a table it squeezed too little). Also at the piped width (120).

The tables are built from real library results (an LLM workload built analytically: no torch, long module
paths), a synthetic workload with long names, the shipped catalog and a validation report made by hand.
"""

from __future__ import annotations

import io
from dataclasses import replace
from types import SimpleNamespace

import pytest
from rich.console import Console

from tests.conftest import make_hardware
from tops_advisor.accuracy import ErrorBand
from tops_advisor.catalog import load_catalog
from tops_advisor.costs import load_pricing
from tops_advisor.llm import analyze_llm, build_workload, load_config
from tops_advisor.recommend import (
    Constraints,
    LLMRun,
    ServingAsk,
    recommend,
    recommend_llm,
    recommend_serving,
)
from tops_advisor.render import analyze as r_analyze
from tops_advisor.render import counting as r_counting
from tops_advisor.render import hardware_tables as r_hw
from tops_advisor.render import recommend as r_rec
from tops_advisor.render.console import NARROW_COLUMNS, PIPED_WIDTH_COLUMNS
from tops_advisor.render.llm import render_llm
from tops_advisor.render.tables import Name
from tops_advisor.render.validate import render_validation
from tops_advisor.roofline import predict
from tops_advisor.scaling import retype
from tops_advisor.validate.compare import KindRow, LatencyRow
from tops_advisor.validate.run import KindsAtBatch, ValidationReport
from tops_advisor.workload import OpRecord, Workload

BOX_AND_RULES = set("─━│┃┏┓┗┛┡┩┌┐└┘├┤┼╇╋┳┻┬┴")


def rendered(draw, width: int) -> str:
    """What ``draw(console)`` prints on a console of ``width`` columns."""
    out = Console(width=width, record=True, file=open("/dev/null", "w"), color_system=None)  # noqa: SIM115
    draw(out)
    return out.export_text()


def visible(text: str) -> list[str]:
    """The non-space, non-rule characters of ``text``, in order."""
    return sorted(ch for ch in text if not ch.isspace() and ch not in BOX_AND_RULES)


def cells(table) -> str:
    """Every header, cell, footer and the title of a rich table, as one string."""
    parts = [str(table.title or "")]
    for col in table.columns:
        parts += [str(col.header), str(col.footer or ""), *(str(c) for c in col._cells)]
    return " ".join(parts)


def assert_fits(text: str, width: int = NARROW_COLUMNS) -> None:
    lines = text.splitlines()
    assert lines, "nothing was printed"
    wide = [line for line in lines if len(line.rstrip()) > width]
    assert not wide, f"{len(wide)} lines wider than {width}: {wide[0]!r}"
    assert "…" not in text, next(line for line in lines if "…" in line)


def assert_table_fits(table, width: int = NARROW_COLUMNS) -> None:
    """The table within ``width``, nothing cut, nothing cropped."""
    text = rendered(lambda out: out.print(table), width)
    assert_fits(text, width)
    assert visible(text) == visible(cells(table)), "characters of the table were lost (cropped or cut)"


@pytest.fixture(scope="module")
def catalog():
    return load_catalog(())


@pytest.fixture(scope="module")
def llama():
    return load_config("llama2-7b")


def _band(text: str) -> ErrorBand:
    return ErrorBand(source="report", median_abs_error=0.11, worst_abs_error=0.35, n=197, card="H200", text=text)


def _long_names_workload() -> Workload:
    """Operators with long names under deep module paths, and an unsupported operator."""
    mod = "encoder.stages.3.blocks.11.attention_with_a_rather_long_name.output_projection"
    ops = tuple(OpRecord(name=name, kind=kind, module=mod, flops=flops, bytes_read=3e7, bytes_written=1e7,
                         param_bytes=2e7, dtype="fp16")
                for name, kind, flops in (("aten.convolution_backward_overrideable_like", "conv", 8.2e11),
                                          ("aten._native_batch_norm_legit_no_training", "norm", 2.2e8),
                                          ("aten.upsample_bilinear2d_aa", "elementwise", 1.0e6)))
    return Workload(name="a_model_with_a_long_file_name", batch=256, dtype="fp16", ops=ops,
                    unsupported_ops={"aten._grouped_mm": 4}, source="examples/a_model_with_a_long_file_name.py")


@pytest.fixture(scope="module")
def workloads(llama):
    return [build_workload(llama, phase="prefill", batch=1, context=128), _long_names_workload()]


@pytest.mark.parametrize("width", [NARROW_COLUMNS, PIPED_WIDTH_COLUMNS])
def test_count_tables_fit(workloads, width):
    for w in workloads:
        for by, depth in (("module", 2), ("module", None), ("op", 2)):
            assert_table_fits(r_counting.ops_table(w, by=by, depth=depth), width)


@pytest.mark.parametrize("width", [NARROW_COLUMNS, PIPED_WIDTH_COLUMNS])
def test_count_summary_wraps_within_the_width(workloads, width):
    """``count`` prints its totals as lines the console wraps: within the width, every character kept."""
    noted = replace(_long_names_workload(), notes=(
        "the model copies a tensor to the host in its forward pass: CUDA-graph capture fails on such a model",),
        assumptions=("a data-dependent size read on the host (torch.nonzero in encoder.stages.3) was taken as "
                     "its upper bound",))
    every = [r_counting.summary_lines(w) for w in (*workloads, noted)]
    assert any(len(line) > PIPED_WIDTH_COLUMNS for lines in every for line in lines)  # something wraps at 120
    for lines in every:
        text = rendered(lambda out, ls=lines: [out.print(line, highlight=False) for line in ls], width)
        assert_fits(text, width)
        assert visible(text) == visible("\n".join(lines)), "characters of the summary were lost"


@pytest.mark.parametrize("width", [NARROW_COLUMNS, PIPED_WIDTH_COLUMNS])
def test_hardware_list_keeps_every_device_id_whole(catalog, width):
    devices = list(catalog)
    listing = rendered(lambda out: out.print(r_hw.list_table(devices, None, width)), width)
    assert_fits(listing, width)
    assert "jetson-orin-nano-8gb" in {hw.id for hw in devices}  # the longest ids are in the catalog
    assert [hw.id for hw in devices if hw.id not in listing.split()] == []  # each id whole on one line


@pytest.mark.parametrize("width", [NARROW_COLUMNS, PIPED_WIDTH_COLUMNS])
def test_recommend_keeps_every_device_id_whole(llama, catalog, width):
    def at(batch, dtype):
        return retype(build_workload(llama, phase="prefill", batch=batch, context=16), dtype)

    res = recommend(at, list(catalog), Constraints(max_batch=4))
    ranked = rendered(lambda out: r_rec.render_recommendations(res, out), width)
    assert_fits(ranked, width)
    assert "jetson-agx-orin-32gb" in {r.hardware for r in res.recommendations}
    assert [r.hardware for r in res.recommendations if r.hardware not in ranked.split()] == []


def test_analyze_fits(workloads, catalog):
    for w in workloads:
        for hw_id, mode in (("h200-sxm", "graph"), ("jetson-orin-nano-8gb", "eager")):
            hw = catalog.get(hw_id)
            pred = predict(w, hw, mode=mode)
            for table in (r_analyze.summary_table(pred, hw.name), r_analyze.by_kind_table(pred),
                          r_analyze.top_ops_table(pred, 10)):
                assert_table_fits(table)
            band = _band("expected error on H200-class measurements: median 11%, worst 35% (CNNs, graph mode, "
                         "calibrated; n=197)")
            assert_fits(rendered(lambda out, p=pred, h=hw, b=band: r_analyze.render_analysis(
                p, h.name, ["a long piece of advice " * 8], b, 10, out), NARROW_COLUMNS))


def test_analyze_time_split_adds_up(workloads, catalog):
    """The 'time' line's parts sum to the latency, in graph and in eager mode (where the host's launching
    overlaps the device: only the device's wait for it is added)."""
    for w in workloads:
        for mode in ("graph", "eager"):
            pred = predict(w, catalog.get("rtx-4090"), mode=mode)
            split = r_analyze.time_split(pred)
            assert sum(split.values()) == pytest.approx(pred.latency_s, rel=1e-9)
            assert max(("compute", "memory", "overhead"), key=split.get) == pred.bound


def test_recommend_tables_fit(llama, catalog):
    def at(batch, dtype):
        return retype(build_workload(llama, phase="prefill", batch=batch, context=16), dtype)

    pricing = load_pricing(catalog)
    for c in (Constraints(max_batch=4), Constraints(max_batch=4, dtypes=("fp16", "int8", "fp32"), rank_by="price"),
              Constraints(max_batch=4, dtypes=("fp16", "int8"), rank_by="cost", throughput_per_s=5e4),
              Constraints(max_batch=4, rank_by="cost", price_kind="purchase")):
        res = recommend(at, list(catalog), c, pricing=pricing)
        assert_table_fits(r_rec.recommendations_table(res))
        for table in (r_rec.prices_table(res), r_rec.no_price_table(res)):
            assert_table_fits(table)
        assert_fits(rendered(lambda out, r=res: r_rec.render_recommendations(r, out), NARROW_COLUMNS))
    res = recommend_llm(llama, list(catalog), Constraints(), tokens_per_s=60.0, ttft_s=None)
    assert res.rejected
    assert_table_fits(r_rec.llm_recommendations_table(res, "llama2-7b"))
    assert_table_fits(r_rec.rejected_table(res))
    for kind in ("rental", "purchase"):  # ranked by cost: the money columns, the prices and the unpriced
        res = recommend_llm(llama, list(catalog), Constraints(rank_by="cost", price_kind=kind), tokens_per_s=30.0,
                            ttft_s=None, pricing=pricing)
        assert res.no_price
        assert_fits(rendered(lambda out, r=res: r_rec.render_llm_recommendations(r, "llama2-7b", out),
                             NARROW_COLUMNS))


def test_serving_tables_fit(llama, catalog):
    ask = ServingAsk(tokens_per_s=30.0, requests_per_s=10.0)
    some = [catalog.get(i) for i in ("a100-pcie-40gb", "h100-sxm", "rtx-4090", "l4", "jetson-agx-orin-32gb", "t4")]
    res = recommend_serving(llama, some, Constraints(), ask, run=LLMRun(dtypes=("auto",)),
                            pricing=load_pricing(catalog))
    assert res.rejected and any(r.usd_per_million for r in res.recommendations)
    for width in (NARROW_COLUMNS, PIPED_WIDTH_COLUMNS):
        assert_table_fits(r_rec.serving_table(res, "llama2-7b", width), width)
        assert_fits(rendered(lambda out: r_rec.render_llm_recommendations(res, "llama2-7b", out), width), width)
    # at 120 columns the limit column is there; at 80 it gives way, and a line says where it went
    assert r_rec.has_limit_column(r_rec.serving_table(res, "llama2-7b", PIPED_WIDTH_COLUMNS))


def test_llm_fits(llama, catalog):
    for hw_id, phase in (("rtx-3090", "decode"), ("h200-sxm", "prefill"), ("jetson-orin-nano-8gb", "decode")):
        hw = catalog.get(hw_id)
        r = analyze_llm(llama, hw, phase=phase)
        band = _band("expected error from published measurements on rtx-3090 (datasheet defaults, llm; n=8): "
                     "median 32%, worst 75%")
        assert_fits(rendered(lambda out, r=r, hw=hw, b=band: render_llm(r, hw, "", out, band=b), NARROW_COLUMNS))


def test_hardware_tables_fit(catalog):
    devices = list(catalog)
    for precision in (None, "fp8"):
        assert_table_fits(r_hw.list_table(devices, precision, NARROW_COLUMNS))
        assert_table_fits(r_hw.list_table(devices, precision, PIPED_WIDTH_COLUMNS), PIPED_WIDTH_COLUMNS)
    for hw in devices:
        for table in r_hw.show_tables(hw):
            assert_table_fits(table)
    picks = [catalog.get(i) for i in ("h200-sxm", "rtx-4090", "a100-sxm4-80gb", "jetson-agx-orin-64gb", "mi300x")]
    for n in (2, 3, 5):
        tables = r_hw.compare_tables(picks[:n], NARROW_COLUMNS)
        assert sum(len(t.columns) - 1 for t in tables) == n  # every device shown once
        for table in tables:
            assert_table_fits(table)


def _validation_report() -> ValidationReport:
    rows = tuple(LatencyRow(model="resnet50", batch=b, dtype="fp16", mode=mode, measured_s=m,
                            spread_s=(m * 0.97, m * 1.08), default_s=m * 1.31, calibrated_s=m * 0.93,
                            bound="overhead")
                 for b, m in ((1, 9.27e-4), (64, 0.0123), (1024, 1.234)) for mode in ("graph", "eager"))
    kinds = tuple(KindRow(kind=k, measured_s=s, predicted_s=s * 1.2, bound="memory", measured_share=0.4,
                          predicted_share=0.45) for k, s in (("elementwise", 1.5e-4), ("conv", 4.0e-4)))
    failed = SimpleNamespace(batch=4096, error="CUDA out of memory. Tried to allocate 12.25 GiB (GPU 0; 139.81 "
                                               "GiB total capacity; 120.1 GiB already allocated)")
    return ValidationReport(
        model="examples/resnet50.py", hardware="h200-sxm", hardware_name="NVIDIA H200 SXM", device="cuda",
        dtype="fp16", modes=("graph", "eager"), calibration_source="shipped hardware_db/calibrations/h200-sxm.json",
        note="a long note " * 12, family="cnn",
        expected_error={"graph": _band("expected error on H200-class measurements: median 11%, worst 35%")},
        rows=rows, per_op=(KindsAtBatch(batch=1, kinds=kinds),), environment={}, runs=(failed,), plot=None)


def test_validate_fits():
    from tops_advisor.render.validate import kinds_table, latency_table

    report = _validation_report()
    assert_table_fits(latency_table(report))
    assert_table_fits(kinds_table(1, (KindRow(kind="elementwise", measured_s=1.5e-4, predicted_s=1.8e-4,
                                              bound="memory", measured_share=0.4, predicted_share=0.45),)))
    assert_fits(rendered(lambda out: render_validation(report, out), NARROW_COLUMNS))


def _probe_report() -> dict:
    rows = [{"precision": p, "measured_tops": t, "best_shape": "8192x8192x8192 (batch 1, column-major)",
             "article_8192_tops": t * 0.97, "datasheet_tops": d, "fraction_of_datasheet": t / d}
            for p, t, d in (("fp16_fp16acc", 812.345, 989.5), ("tf32", 401.2, 494.5), ("fp8", 1_543.2, 1_979))]
    bandwidth = [{"what": w, "gb_s": g, "datasheet_gb_s": 4_800, "fraction_of_datasheet": g / 4_800}
                 for w, g in (("device-to-device copy (read + write)", 4_123.4), ("host-to-device, pinned", 55.1))]
    return {"device": "NVIDIA H200 with a long marketing name", "hardware": "h200-sxm", "matched_catalog": True,
            "precisions": rows, "backend": "cuda", "bandwidth": bandwidth, "kernel_eager_us": 4.71,
            "kernel_graph_us": 1.93, "sustained": None, "state": None, "warnings": ["a long warning " * 9],
            "notes": ["a long note " * 9], "environment": {}}


def _links_report() -> dict:
    coll = [{"collective": c, "size": s, "time_us": t, "algbw_gb_s": a, "busbw_gb_s": a * 1.75}
            for c, s, t, a in (("all_reduce_graph", "1 GiB", 3_301.2, 325.3), ("all_gather", "8 KiB", 12.3, 0.66))]
    return {"world_size": 8, "backend": "nccl", "device": "NVIDIA H200", "dtype": "bf16",
            "topology": "NV18 between every pair (NVSwitch)", "collectives": coll, "all_reduce_busbw_gb_s": 325.3,
            "all_gather_busbw_gb_s": 268.1, "all_reduce_latency_us": 12.3, "all_reduce_graph_latency_us": 8.1,
            "p2p": [{"src": 0, "dst": 1, "gb_s": 371.2, "peer_access": True}], "notes": ["a long note " * 9]}


def test_probe_fits():
    from tops_advisor.render.probe import render_links, render_probe

    report, links = _probe_report(), _links_report()
    probe = rendered(lambda out: render_probe(report, out), NARROW_COLUMNS)
    assert_fits(probe)
    assert all(n in probe for n in ("812.3", "4123", "1543.2", "8192x8192x8192"))
    shown = rendered(lambda out: render_links(links, out), NARROW_COLUMNS)
    assert_fits(shown)
    assert all(n in shown for n in ("3301.2 us", "569", "all-reduce (graph)", "371"))


def test_console_width_policy():
    from tops_advisor.render.console import PIPED_WIDTH_COLUMNS, output_width

    assert output_width(io.StringIO(), environ={"COLUMNS": "80"}) == 80
    assert output_width(io.StringIO(), environ={}) == PIPED_WIDTH_COLUMNS  # piped: not rich's 80
    assert output_width(io.StringIO(), environ={"COLUMNS": "zero"}) == PIPED_WIDTH_COLUMNS


# --- names in tables ----------------------------------------------------------------------------------------

def test_names_fold_after_their_separators():
    assert Name("max_pool2d_with_indices").lines(20) == ["max_pool2d_with_", "indices"]
    assert Name("layer1.0.downsample.1").lines(12) == ["layer1.0.", "downsample.1"]
    assert Name("abcdefghij").lines(4) == ["abcd", "efgh", "ij"]   # one piece wider than the column


def test_the_operator_column_keeps_whole_names_at_80_columns():
    op = OpRecord("aten.max_pool2d_with_indices", "pool", "layer1.0.downsample.1", 1e6, 1e8, 1e7, 0, "fp16", 1)
    pred = predict(Workload("w", 1, "fp16", (op,)), make_hardware())
    assert "max_pool2d_with_indices" in rendered(lambda out: out.print(r_analyze.top_ops_table(pred, 1)), 80)
