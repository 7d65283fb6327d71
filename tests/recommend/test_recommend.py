"""Search and ranking on synthetic workloads and devices whose answers are worked out by hand."""

from __future__ import annotations

import pytest

from tests.conftest import make_hardware
from tops_advisor.errors import InputError, NothingFeasibleError
from tops_advisor.recommend import Constraints, recommend
from tops_advisor.workload import OpRecord, Workload

MODEL = "examples/small_cnn.py"

# Fast: 1000 GB/s x 0.85 = 850 GB/s attainable, 200 W. Slow: 500 GB/s x 0.85 = 425 GB/s, 50 W, edge, no int8.
FAST = make_hardware()
SLOW = make_hardware(id="slow-gpu", name="Slow GPU", memory_bandwidth_gb_s=500, tdp_w=50, segment="edge",
                     dense_tops={"fp32": 5, "fp16": 50, "bf16": 50}, sparse_tops={})


def stream(batch: int, dtype: str, param_bytes: float = 0.0) -> Workload:
    """One memory-bound operator (a matmul kind: full attainable bandwidth) moving 8.5 MB per sample:
    10 us per sample on FAST, 20 us on SLOW, plus 3.15 us per kernel (the 2.4 us GEMM floor, added to the
    work, and the 0.75 us gap)."""
    op = OpRecord("aten.mm", "matmul", "", 1e3 * batch, 4.25e6 * batch, 4.25e6 * batch, 0, dtype, 1)
    return Workload("stream", batch, dtype, (op,), param_bytes=param_bytes)


def test_largest_batch_meeting_latency():
    # FAST: 10 us x b + 3.15 us <= 100 us -> b <= 9.68 -> 8. SLOW: 20 us x b + 3.15 us <= 100 us -> b <= 4.84
    # -> 4.
    res = recommend(stream, [FAST, SLOW], Constraints(latency_s=100e-6, rank_by="throughput"))
    by_id = {r.hardware: r for r in res.recommendations}
    assert by_id["toy-gpu"].batch == 8 and by_id["slow-gpu"].batch == 4
    assert by_id["toy-gpu"].latency_s == pytest.approx(83.15e-6)
    assert by_id["toy-gpu"].headroom == pytest.approx(100 / 83.15)
    assert [r.hardware for r in res.recommendations] == ["toy-gpu", "slow-gpu"]


def test_efficiency_ranking_prefers_samples_per_watt():
    # FAST: 8 / 83.15 us = 96,212/s over 200 W = 481 /s/W. SLOW: 4 / 83.15 us = 48,106/s over 50 W = 962 /s/W.
    res = recommend(stream, [FAST, SLOW], Constraints(latency_s=100e-6))
    assert [r.hardware for r in res.recommendations] == ["slow-gpu", "toy-gpu"]
    assert res.recommendations[0].throughput_per_watt == pytest.approx(4 / 83.15e-6 / 50)


def test_fixed_batch_and_latency_rejection_reason():
    # At batch 8, SLOW takes 20 x 8 + 3.15 = 163.15 us > 100 us.
    res = recommend(stream, [FAST, SLOW], Constraints(latency_s=100e-6, batch=8))
    assert [r.hardware for r in res.recommendations] == ["toy-gpu"]
    assert res.rejected[0].hardware == "slow-gpu"
    assert res.rejected[0].reason == "163 us at batch 8 > 100 us"


def test_nothing_meets_latency_names_closest_miss():
    # batch 1: FAST 13.15 us, SLOW 23.15 us; target 5 us; FAST comes closest (5 / 13.15 = 0.38).
    with pytest.raises(NothingFeasibleError, match=r"latency target.*closest miss: toy-gpu: 13.1 us at batch 1 > 5 us"):
        recommend(stream, [FAST, SLOW], Constraints(latency_s=5e-6))


def test_memory_rejection():
    # 16 GB params + 1 GB runtime do not fit in 16 GB.
    res = recommend(lambda b, d: stream(b, d, param_bytes=16e9), [FAST, make_hardware(id="big", memory_gb=80)],
                    Constraints(batch=1))
    assert [r.hardware for r in res.recommendations] == ["big"]
    assert res.rejected[0].reason == "needs 17.0 GB at batch 1, has 16 GB"


def test_missing_dtype_and_prefilters():
    res = recommend(stream, [FAST, SLOW], Constraints(batch=1, dtypes=("int8",)))
    assert [r.hardware for r in res.recommendations] == ["toy-gpu"]
    assert res.rejected == [res.rejected[0]] and res.rejected[0].reason == "no int8"
    res = recommend(stream, [FAST, SLOW], Constraints(batch=1, segment="edge"))
    assert [r.hardware for r in res.recommendations] == ["slow-gpu"]
    assert res.rejected[0].reason == "segment datacenter, not edge"
    res = recommend(stream, [FAST, SLOW], Constraints(batch=1, max_power_w=60))
    assert res.rejected[0].reason == "TDP 200 W > 60 W"


def test_empty_after_filtering_is_an_error():
    with pytest.raises(NothingFeasibleError, match="no device left after filtering: .*power <= 10 W"):
        recommend(stream, [FAST, SLOW], Constraints(max_power_w=10))


def test_throughput_target():
    # Without a latency target the batch grows until throughput saturates; FAST at batch 1024:
    # 1024 / (10.24 ms + 1 us) ~ 99,990/s; a target of 200,000/s cannot be met.
    with pytest.raises(NothingFeasibleError, match="throughput target"):
        recommend(stream, [FAST], Constraints(throughput_per_s=200_000))
    res = recommend(stream, [FAST], Constraints(throughput_per_s=50_000))
    assert res.recommendations[0].throughput_per_s >= 50_000


def test_bad_constraints():
    with pytest.raises(InputError, match="unknown segment 'edg'"):
        Constraints(segment="edg")
    with pytest.raises(InputError, match="--batch must be a positive integer"):
        Constraints(batch=0)


def test_llm_form_counts_devices_by_memory():
    # llama2-7b in bf16: 6.74e9 params x 2 B = 13.5 GB of weights, + KV + ~1 GB runtime: more than a
    # 12 GB device holds, so it needs tensor parallelism over 2; an 80 GB device holds it alone.
    from tops_advisor.llm import load_config
    from tops_advisor.recommend import recommend_llm

    small = make_hardware(id="small", memory_gb=12, peer_link="NVLink", peer_link_bandwidth_gb_s=600,
                          citations={**FAST.citations, "peer_link_bandwidth_gb_s": "made-up"})
    big = make_hardware(id="big", memory_gb=80)
    res = recommend_llm(load_config("llama2-7b"), [small, big], Constraints(dtypes=("bf16",)),
                        tokens_per_s=1.0, ttft_s=None)
    by_id = {r.hardware: r for r in res.recommendations}
    assert by_id["small"].devices == 2 and by_id["big"].devices == 1
    assert by_id["big"].tokens_per_s_per_watt == pytest.approx(by_id["big"].tokens_per_s / 200)


def test_llm_form_cli_json():
    import json

    from click.testing import CliRunner

    from tops_advisor.cli import cli

    r = CliRunner().invoke(cli, ["recommend", "--llm", "llama3-8b", "--tokens-per-s", "10", "-H", "h200-sxm",
                                 "-H", "l4", "--json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data["recommendations"], "no device recommended: the subset check below would pass on nothing"
    assert {x["hardware"] for x in data["recommendations"]} <= {"h200-sxm", "l4"}
    assert all(x["devices"] >= 1 for x in data["recommendations"])
    bad = CliRunner().invoke(cli, ["recommend"])
    assert bad.exit_code == 2 and "give a MODEL file" in bad.output


def test_result_json_adds_human_units_and_hides_closeness():
    from tops_advisor.render.json_units import to_json

    res = recommend(stream, [FAST, SLOW], Constraints(latency_s=100e-6, batch=8))
    assert "latency_ms" not in res.model_dump()["recommendations"][0]  # the model holds base units
    d = to_json(res)
    rec = d["recommendations"][0]
    # FAST at batch 8: 83.15 us
    assert rec["latency_ms"] == pytest.approx(83.15e-3) and rec["attainable_tops"] == pytest.approx(
        res.recommendations[0].attainable_ops_per_s / 1e12)
    assert isinstance(rec["advice"], list)
    assert d["rejected"] == [{"hardware": "slow-gpu", "reason": "163 us at batch 8 > 100 us"}]
    assert d["constraints"]["dtypes"] == ["fp16"] and d["rank_by"] == "efficiency"


def test_a_model_cuda_graphs_cannot_capture_is_said_in_graph_mode_only():
    from dataclasses import replace

    from tops_advisor.counting.notes import CPU_COPY_NOTE
    from tops_advisor.workload import Note, NoteKind

    note = CPU_COPY_NOTE.format(n=2)

    def uncapturable(batch: int, dtype: str) -> Workload:
        return replace(stream(batch, dtype), notes=(Note(NoteKind.CAPTURE_FAILS, note),))

    def said_otherwise(batch: int, dtype: str) -> Workload:  # the same words, but not a capture failure
        return replace(stream(batch, dtype), notes=(Note(NoteKind.INFO, note),))

    assert note in recommend(uncapturable, [FAST, SLOW], Constraints(batch=1, mode="graph")).notes
    assert note not in recommend(uncapturable, [FAST, SLOW], Constraints(batch=1, mode="eager")).notes
    assert note not in recommend(said_otherwise, [FAST, SLOW], Constraints(batch=1, mode="graph")).notes
    assert note not in recommend(stream, [FAST, SLOW], Constraints(batch=1, mode="graph")).notes


# --- the command's forms and the library's notes ----------------------------------------------------------
def run(*args):
    from click.testing import CliRunner

    from tops_advisor.cli import cli

    return CliRunner().invoke(cli, [str(a) for a in args])


@pytest.mark.parametrize("args, message", [
    (("recommend", MODEL, "--llm", "llama3-8b", "--latency", "10ms"), "not both"),
    (("recommend", "--llm", "llama3-8b", "--latency", "10ms"), "--latency applies to a MODEL file"),
    (("recommend", "--llm", "llama3-8b", "--seq", "8", "--strict"), "--strict, --seq apply to a MODEL"),
    (("recommend", MODEL, "--tokens-per-s", "30"), "--tokens-per-s applies to --llm"),
    (("recommend", MODEL, "--kernels", "fused", "--serving"), "--kernels, --serving apply to --llm"),
    (("recommend", "--ttft", "1s"), "give a MODEL file"),
])
def test_recommend_refuses_options_it_would_ignore(args, message):
    r = run(*args)
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert message in r.stderr
    assert len(r.stderr.strip().splitlines()) == 2  # the error and its hint



def test_top_must_be_at_least_one():
    from tops_advisor.recommend import Constraints

    for command in (("recommend", MODEL), ("analyze", MODEL, "-H", "h200-sxm")):
        r = run(*command, "--top", "0")
        assert r.exit_code == 2 and "0 is not in the range x>=1" in r.stderr
    with pytest.raises(InputError, match="--top must be at least 1"):
        Constraints(top=0)



def test_recommend_builds_its_notes_and_error_bands_in_the_library():
    """The CLI used to append to the result's notes and add the bands to the JSON: now the library does both,
    and the result cannot be changed after the fact."""
    from tops_advisor.catalog import load_catalog
    from tops_advisor.recommend import Constraints, recommend
    from tops_advisor.workload import OpRecord, Workload

    def at(batch, dtype):
        op = OpRecord(name="aten.mm", kind="matmul", module="fc", flops=2e9 * batch, bytes_read=4e6 * batch,
                      bytes_written=1e6 * batch, dtype=dtype)
        return Workload(name="toy", batch=batch, dtype=dtype, ops=(op,), unsupported_ops={"aten.fancy_op": 2})

    res = recommend(at, list(load_catalog(())), Constraints(max_batch=2, top=3))
    assert "unsupported operators counted as zero: aten.fancy_op x2" in res.notes
    assert len(res.recommendations) == 3
    assert all(r.expected_error and r.expected_error.text for r in res.recommendations)
    assert isinstance(res.notes, tuple)
    assert res.model_dump()["notes"] == list(res.notes)


# --- power modes: a limit admits a module only at a mode within it -----------------------------------------

def _module():
    from tests.catalog.test_power_modes import module

    return module(id="toy-module", name="Toy module")


def test_max_power_runs_a_module_in_its_fastest_mode_within_the_limit():
    # the stream moves 8.5 MB per sample: bandwidth-bound; at 15W the module's memory clock is 2133 of 3200 MHz
    res = recommend(stream, [_module()], Constraints(batch=1, max_power_w=15))
    rec = res.recommendations[0]
    assert rec.power_mode == "15W" and rec.tdp_w == 15
    full = recommend(stream, [_module()], Constraints(batch=1)).recommendations[0]
    assert full.power_mode == "MAXN" and full.tdp_w == 200
    assert rec.latency_s > full.latency_s


def test_power_mode_by_name_and_its_rejections():
    res = recommend(stream, [_module(), FAST], Constraints(batch=1, power_mode="30W"))
    assert [r.power_mode for r in res.recommendations] == ["30W"]
    assert res.rejected[0].reason == "no power mode 30W"
    res = recommend(stream, [_module()], Constraints(batch=1, power_mode="60W", max_power_w=200))
    assert res.recommendations[0].power_mode == "60W"
    with pytest.raises(NothingFeasibleError):
        recommend(stream, [_module()], Constraints(batch=1, power_mode="60W", max_power_w=30))
    with pytest.raises(InputError, match="toy-module has no power mode '99W'; its modes: 15W"):
        recommend(stream, [_module(), FAST], Constraints(batch=1, power_mode="99W"))


def test_a_15w_limit_never_admits_a_jetson_at_a_higher_modes_speed():
    """On the shipped catalog: every device a 15 W limit admits runs at a mode of at most 15 W, and its prediction
    is that mode's, slower than the device at its datasheet (full-power) mode."""
    from tops_advisor.catalog import load_catalog
    from tops_advisor.roofline import device_perf, predict

    def mixed(batch: int, dtype: str) -> Workload:  # the stream plus a compute-bound GEMM (1e10 ops, 3 MB)
        gemm = OpRecord("aten.mm", "matmul", "", 1e10 * batch, 2e6, 1e6, 0, dtype, 1)
        return Workload("mixed", batch, dtype, (*stream(batch, dtype).ops, gemm))

    catalog = load_catalog()
    res = recommend(mixed, list(catalog), Constraints(batch=1, max_power_w=15))
    assert res.recommendations
    for rec in res.recommendations:
        hw = catalog.get(rec.hardware)
        assert rec.tdp_w <= 15
        if not hw.power_modes:
            continue
        mode = hw.get_power_mode(rec.power_mode)
        assert mode.power_w <= 15 and mode == hw.fastest_power_mode(15)
        at_mode = hw.at_power_mode(rec.power_mode)
        expected = predict(mixed(1, "fp16"), at_mode, perf=device_perf(at_mode))
        assert rec.latency_s == pytest.approx(expected.latency_s)
        full = predict(mixed(1, "fp16"), hw, perf=device_perf(hw))
        if hw.get_power_mode(hw.power_mode).power_w > 15:  # the datasheet mode is above the limit
            assert rec.latency_s > full.latency_s
    agx = next(r for r in res.recommendations if r.hardware == "jetson-agx-orin-64gb")
    assert agx.power_mode == "15W"


# --- --dtype auto: only precisions the run mode's software runs ---------------------------------------------

def test_auto_never_picks_a_precision_plain_pytorch_cannot_run():
    from tops_advisor.recommend import auto_dtypes
    from tops_advisor.recommend.constraints import auto_dtype_note

    for mode in ("graph", "eager", "compiled"):
        assert auto_dtypes(mode) == ("fp32", "fp16", "bf16")
        assert "not fp8/int8" in auto_dtype_note(mode) and "TensorRT or torchao" in auto_dtype_note(mode)
    def sized(batch: int, dtype: str) -> Workload:  # the stream's bytes at the precision's width (int8: half)
        width = {"fp32": 2.0, "int8": 0.5, "fp8": 0.5}.get(dtype, 1.0)
        op = OpRecord("aten.mm", "matmul", "", 1e3 * batch, 4.25e6 * batch * width, 4.25e6 * batch * width, 0,
                      dtype, 1)
        return Workload("stream", batch, dtype, (op,))

    # FAST has int8: on this stream int8 moves half the bytes and would win if it were tried
    explicit = recommend(sized, [FAST], Constraints(batch=1, dtypes=("fp16", "int8"), rank_by="latency"))
    assert explicit.recommendations[0].dtype == "int8"
    auto = recommend(sized, [FAST], Constraints(batch=1, dtypes=auto_dtypes("graph"), dtype_auto=True,
                                                rank_by="latency"))
    assert auto.recommendations[0].dtype in ("fp16", "bf16")
    assert any(n.startswith("dtype auto: tried fp32/fp16/bf16, not fp8/int8") for n in auto.notes)
