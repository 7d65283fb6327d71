"""LLM engine profiles (tops_advisor/llm/engines.py): format bytes, accumulate rate, decode attention blocking."""

from __future__ import annotations

import pytest

from tests.conftest import make_hardware
from tops_advisor.errors import InputError
from tops_advisor.llm.engines import ENGINES, engine_perf, engine_precision, get_engine
from tops_advisor.llm.precision import Precision
from tops_advisor.roofline import device_perf


def test_formats_set_the_bytes_per_weight():
    llama = get_engine("llama.cpp")
    assert engine_precision(llama, Precision("int4"), "Q4_0").weight_bytes_per_param == 4.5 / 8
    # gpt-fast int4: 4 bits + a bf16 scale and a bf16 zero per 32 weights = 5 bits
    assert engine_precision(get_engine("gpt-fast"), Precision("int4")).weight_bytes_per_param == 5 / 8
    # no format of the engine's own: the PyTorch default (int4 with an fp16 scale per 128)
    assert engine_precision(ENGINES["pytorch"], Precision("int4")).weight_bytes_per_param == 0.5 + 2 / 128


def test_fp16_accumulate_takes_the_faster_rate_where_the_card_has_one():
    geforce = make_hardware(dense_tops={"fp32": 10, "fp16": 100, "fp16_fp16acc": 200})
    perf = device_perf(geforce)
    fast = engine_perf(get_engine("llama.cpp"), perf)
    # the FP16-accumulate rate (200 TOPS x its fraction), not the half-rate FP32-accumulate one
    assert fast.matrix_ops_per_s["fp16"] == perf.matrix_ops_per_s["fp16_fp16acc"]
    assert fast.matrix_ops_per_s["fp16"] > 1.5 * perf.matrix_ops_per_s["fp16"]
    assert fast.defaults.attention_block_rows.value == 1.0
    plain = engine_perf(get_engine("llama.cpp"), device_perf(make_hardware()))  # no fp16_fp16acc peak
    assert plain.matrix_ops_per_s["fp16"] == device_perf(make_hardware()).matrix_ops_per_s["fp16"]
    assert engine_precision(get_engine("llama.cpp"), Precision("int4")).act == "fp16"


def test_unknown_engine_or_format_is_one_clear_error():
    with pytest.raises(InputError, match="unknown engine"):
        get_engine("tensorrt")
    with pytest.raises(InputError, match="no weight format"):
        engine_precision(get_engine("llama.cpp"), Precision("int4"), "Q3_K_S")


def test_quantized_prefill_dequantizes_above_the_row_limit():
    from tops_advisor.llm.engines import engine_workload
    from tops_advisor.workload import GemmShape, OpRecord, Workload

    def linear(rows):  # 1000 x 1000 weights at 4.5 bits: 562.5 kB
        return OpRecord("aten.mm", "matmul", "l", 2e6 * rows, rows * 2e3 + 562.5e3, rows * 2e3, 562.5e3, "fp16", 1,
                        GemmShape(rows, 1000, 1000))
    llama = get_engine("llama.cpp")
    prefill = engine_workload(llama, Workload("w", 1, "fp16", (linear(512),)))
    dequant, gemm = prefill.ops
    assert dequant.kind == "elementwise" and dequant.bytes_read == 562.5e3 and dequant.bytes_written == 2e6
    assert gemm.param_bytes == 2e6 and gemm.bytes_read == 512 * 2e3 + 2e6
    decode = Workload("w", 1, "fp16", (linear(1),))      # 1 row: quantized kernels read the blocks directly
    assert engine_workload(llama, decode).ops == decode.ops
    assert engine_workload(get_engine("gpt-fast"), prefill).ops == prefill.ops  # no dequantize rule


def test_quantized_kernels_stream_their_weights_at_their_share_of_the_16_bit_rate():
    from tops_advisor.llm.engines import engine_workload
    from tops_advisor.workload import GemmShape, OpRecord, Workload

    # 1000 x 1000 int8 weights (1 MB) read by a one-row product; a bf16 one (2 MB) next to it
    int8 = OpRecord("aten.mm", "matmul", "q", 2e6, 2e3 + 1e6, 2e3, 1e6, "bf16", 1, GemmShape(1, 1000, 1000))
    bf16 = OpRecord("aten.mm", "matmul", "h", 2e6, 2e3 + 2e6, 2e3, 2e6, "bf16", 1, GemmShape(1, 1000, 1000))
    w = Workload("w", 1, "bf16", (int8, bf16))
    gpt_fast = get_engine("gpt-fast")
    share = gpt_fast.quantized_bandwidth["int8"]
    q, h = engine_workload(gpt_fast, w, "int8").ops
    assert q.bytes_read == pytest.approx(2e3 + 1e6 / share) and h == bf16
    assert engine_workload(gpt_fast, w, "bf16").ops == w.ops      # no share for 16-bit weights


def test_kernels_option_names_a_layout_or_an_engine():
    from tops_advisor.llm.engines import parse_kernels

    assert parse_kernels("fused") == ("fused", None, None)
    layout, profile, fmt = parse_kernels("llama.cpp:Q4_K_M")
    assert (layout, profile.name, fmt) == ("torch", "llama.cpp", "Q4_K_M")
    assert parse_kernels("gpt-fast")[0] == "fused"
    # no format named: the engine's own format for the weight dtype (llama.cpp int4 -> Q4_0, 4.5 bits)
    assert engine_precision(get_engine("llama.cpp"), Precision("int4")).weight_bytes_per_param == 4.5 / 8
    with pytest.raises(InputError, match="unknown --kernels"):
        parse_kernels("tensorrt-llm")
    with pytest.raises(InputError, match="no weight format"):
        parse_kernels("llama.cpp:Q3_K_S")


def test_one_row_products_stream_hbm_at_the_engines_matvec_share():
    from tops_advisor.llm.engines import engine_workload
    from tops_advisor.workload import GemmShape, OpRecord, Workload

    def linear(rows):  # 1000 x 1000 F16 weights: 2 MB
        return OpRecord("aten.mm", "matmul", "l", 2e6 * rows, rows * 2e3 + 2e6, rows * 2e3, 2e6, "fp16", 1,
                        GemmShape(rows, 1000, 1000))
    attention = OpRecord("attn", "attention", "a", 2e6, 2e6, 2e3, 0.0, "fp16", 1)   # no parameters: untouched
    llama = get_engine("llama.cpp")
    share = llama.matvec_bandwidth["HBM"]
    assert share == pytest.approx(1 / 1.33)   # PR #9816: the vectorised kernel is 1.33x faster on an H100 SXM
    w = Workload("w", 1, "fp16", (linear(1), linear(8), attention))
    one, eight, attn = engine_workload(llama, w, "fp16", "HBM").ops
    assert one.bytes_read == pytest.approx(1 * 2e3 + 2e6 * 1.33)        # the weights take 1.33x as long
    assert eight == linear(8) and attn == attention                     # more rows, or no weights: unchanged
    assert engine_workload(llama, w, "fp16", "GDDR").ops == w.ops       # GDDR: the copy rate
    assert engine_workload(get_engine("gpt-fast"), w, "bf16", "HBM").ops == w.ops   # no such rule


def test_the_matvec_share_reaches_the_predictor_through_the_cards_memory():
    from tops_advisor.llm.engines import engine_predictor
    from tops_advisor.workload import GemmShape, OpRecord, Workload

    # a 1-row product over 1 GB of F16 weights: memory-bound on both cards
    op = OpRecord("aten.mm", "matmul", "l", 1e9, 2e3 + 1e9, 2e3, 1e9, "fp16", 1, GemmShape(1, 500_000, 1000))
    w = Workload("w", 1, "fp16", (op,))
    llama = get_engine("llama.cpp")
    for memory, slower in (("HBM3", 1.33), ("GDDR6", 1.0)):
        hw = make_hardware(memory_type=memory)
        plain = device_perf(hw)
        [p] = engine_predictor(llama, hw)(w, hw, None, "graph").ops
        assert p.memory_s == pytest.approx((2e3 + 1e9 * slower + 2e3) / plain.bandwidth_bytes_per_s, rel=1e-6)
