"""The roofline's operator arrays (one meaning per field) and its ordered rule tables."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import make_hardware
from tops_advisor.kinds import OpKind
from tops_advisor.roofline.arrays import OpArrays, op_arrays
from tops_advisor.roofline.device import device_perf
from tops_advisor.roofline.rates import CONV_RATE_RULES, DEPTHWISE_RULES
from tops_advisor.roofline.rates.conv import DepthwiseContext, conv_context
from tops_advisor.roofline.rules import Rule, always, first_match, which_rule
from tops_advisor.workload import CHANNELS_LAST_FAMILY, GemmShape, OpRecord, Workload


def _op(kind: str, batch: int, family: str = "") -> OpRecord:
    return OpRecord("op", kind, "", 1e6, 1e3, 1e3, gemm=GemmShape(64, 32, 16, batch), family=family)


def test_gemm_shape_batch_becomes_one_field_per_meaning():
    """A matmul's batch is its products (a MoE grouped GEMM: the experts hit), a convolution's its groups,
    attention's batch x heads; each field is 0 for the other kinds, and an operator without a shape has none."""
    ops = (_op("matmul", 6), _op("conv", 4), _op("attention", 96), _op("norm", 1),
           OpRecord("add", "elementwise", "", 1.0, 2.0, 2.0))
    a = op_arrays(Workload("w", 1, "fp16", ops))
    assert a.gemm_batch.tolist() == [6, 0, 0, 0, 0]
    assert a.groups.tolist() == [0, 4, 0, 0, 0]
    assert a.batch_heads.tolist() == [0, 0, 96, 0, 0]
    assert a.kind.tolist() == [OpKind.MATMUL.position, OpKind.CONV.position, OpKind.ATTENTION.position,
                               OpKind.NORM.position, OpKind.ELEMENTWISE.position]
    # m, n, k are a GEMM's only: the norm's (64, 32) are its rows and their elements
    assert a.m.tolist() == [64, 64, 64, 0, 0] and a.n.tolist() == [32, 32, 32, 0, 0]
    assert a.k.tolist() == [16, 16, 16, 0, 0] and a.window.tolist() == [1] * 5
    assert a.norm_rows.tolist() == [0, 0, 0, 64, 0] and a.norm_row_elements.tolist() == [0, 0, 0, 32, 0]
    assert a.upsample_positions.tolist() == [0] * 5 and a.upsample_planes.tolist() == [0] * 5


def _counted(module, x):
    from tops_advisor.counting import count_module

    w = count_module(module, (x,), "fp16")
    assert len(w.ops) == 1
    return op_arrays(w)


def test_a_layer_norm_has_rows_and_no_gemm_shape():
    """LayerNorm(768) over (4, 197, 768): 4 x 197 = 788 rows of 768 elements, one thread block per row."""
    import torch

    a = _counted(torch.nn.LayerNorm(768), torch.empty(4, 197, 768, device="meta"))
    assert a.family.tolist() == ["layer_norm"] and a.is_kind(OpKind.NORM).all()
    assert (a.norm_rows[0], a.norm_row_elements[0]) == (4 * 197, 768)
    assert (a.m[0], a.n[0], a.k[0]) == (0, 0, 0)
    assert (a.gemm_batch[0], a.groups[0], a.batch_heads[0]) == (0, 0, 0)
    assert (a.upsample_positions[0], a.upsample_planes[0]) == (0, 0)


def test_a_layer_norm_rows_time_reads_its_rows():
    """The rows' fixed time is rows / SMs x the per-row time: 788 rows on the toy card's 100 SMs, 16-bit. The toy
    card gives no clock, so the per-row time is taken at the reference clock as it is."""
    import torch

    from tops_advisor.roofline.rates.memory import layer_norm_rows_s

    a = _counted(torch.nn.LayerNorm(768), torch.empty(4, 197, 768, device="meta"))
    perf = device_perf(make_hardware())
    assert perf.compute_units == 100 and not perf.hardware.boost_clock_mhz
    per_row_s = perf.defaults.layer_norm_row_s.value["16-bit"]
    assert layer_norm_rows_s(a, perf)[0] == pytest.approx(788 / 100 * per_row_s, rel=1e-12)


def test_a_group_norm_has_rows_of_channels_per_group_times_plane():
    """GroupNorm(8, 64) over (2, 64, 10, 10): 2 x 8 = 16 rows of 64 / 8 x 10 x 10 = 800 elements."""
    import torch

    a = _counted(torch.nn.GroupNorm(8, 64), torch.empty(2, 64, 10, 10, device="meta"))
    assert a.family.tolist() == ["group_norm"]
    assert (a.norm_rows[0], a.norm_row_elements[0]) == (16, 800) and (a.m[0], a.n[0], a.k[0]) == (0, 0, 0)


def test_bilinear_upsampling_has_positions_and_planes():
    """Bilinear upsampling of (4, 8, 10, 10) to 20 x 20: 400 output positions, 4 x 8 = 32 planes."""
    import torch

    a = _counted(torch.nn.Upsample(size=(20, 20), mode="bilinear"), torch.empty(4, 8, 10, 10, device="meta"))
    assert a.family.tolist() == ["bilinear_upsample"] and a.is_kind(OpKind.COPY).all()
    assert (a.upsample_positions[0], a.upsample_planes[0]) == (400, 32)
    assert (a.m[0], a.n[0], a.k[0], a.norm_rows[0], a.norm_row_elements[0]) == (0, 0, 0, 0, 0)


def test_moe_experts_hit_reach_gemm_batch():
    """The LLM builder's fused MoE at decode batch 8: T = 8 tokens x top-2 of Mixtral's 8 experts hit
    8 (1 - (6/8)^8) = 7.199 experts on average, a grouped GEMM of round(7.199) = 7 products of
    ceil(16 / 7.199) = 3 rows each."""
    from tops_advisor.llm import build_workload, load_config

    w = build_workload(load_config("mixtral-8x7b"), phase="decode", batch=8, context=10, layout="fused")
    a = op_arrays(w)
    rows = [i for i, o in enumerate(w.ops) if o.name == "experts.w13"]
    assert len(rows) == 32
    assert a.gemm_batch[rows].tolist() == [7] * 32 and a.m[rows].tolist() == [3] * 32
    assert a.groups[rows].tolist() == [0] * 32 and a.batch_heads[rows].tolist() == [0] * 32


def test_take_keeps_every_field_of_the_rows():
    a = OpArrays.build(OpKind.CONV, "fp16", m=[1, 2, 3], groups=[1, 8, 64], family=["", CHANNELS_LAST_FAMILY, ""])
    sub = a.take(np.array([2, 1]))
    assert sub.m.tolist() == [3, 2] and sub.groups.tolist() == [64, 8]
    assert sub.family.tolist() == ["", CHANNELS_LAST_FAMILY] and len(sub) == 2


RULES = (
    Rule("big", lambda a, c: a.m > 10, lambda a, c: 3.0, "checked first"),
    Rule("positive", lambda a, c: a.m > 0, lambda a, c: a.m * c, "then this"),
    Rule("rest", always, lambda a, c: -1.0, "everything else"),
)


def test_the_first_rule_that_applies_wins():
    a = OpArrays.build(OpKind.OTHER, "fp16", m=[20, 5, 0])
    # 20 > 10: "big" (3); 5: "positive" (5 x 2 = 10); 0: "rest" (-1)
    assert first_match(RULES, a, 2.0).tolist() == [3.0, 10.0, -1.0]
    assert which_rule(RULES, a, 2.0).tolist() == ["big", "positive", "rest"]


def test_a_table_without_a_rule_for_an_operator_is_an_error():
    a = OpArrays.build(OpKind.OTHER, "fp16", m=[0])
    with pytest.raises(ValueError, match="no rule"):
        first_match(RULES[:2], a, 1.0)


def test_convolution_rules_name_the_kernel_each_convolution_gets():
    hw = make_hardware(architecture="Hopper")   # thin-input stems are modelled on Hopper
    perf = device_perf(hw)
    a = OpArrays.build(
        OpKind.CONV, "fp16",
        m=[12544, 12544, 3136, 3136, 3136], n=[64, 64, 4, 4, 128], k=[147, 27, 36, 36, 576],
        groups=[1, 1, 32, 32, 1], window=[49, 9, 9, 9, 9], stride=[2, 1, 1, 1, 1], plane=[3136] * 5,
        family=["", "", CHANNELS_LAST_FAMILY, "", ""])
    names = which_rule(CONV_RATE_RULES, a, conv_context(a, perf, "fp16")).tolist()
    # 7x7/s2 3 -> 64: the ResNet stem; 3x3 on 3 channels: a thin stem; 4 channels per group channels-last and
    # NCHW; a dense 3x3 on 64 channels: implicit GEMM
    assert names == ["first layer", "thin input", "grouped, channels-last", "grouped, NCHW", "implicit GEMM"]


def test_depthwise_rules_put_dilated_channels_last_first():
    a = OpArrays.build(OpKind.CONV, "fp16", spatial=[2, 2, 2, 1], dilation=[2, 1, 1, 1],
                       family=[CHANNELS_LAST_FAMILY, CHANNELS_LAST_FAMILY, "", ""])
    context = DepthwiseContext(device_perf(make_hardware()).defaults, "16-bit")
    assert which_rule(DEPTHWISE_RULES, a, context).tolist() == ["dilated, channels-last", "channels-last", "2-D",
                                                                "1-D"]
