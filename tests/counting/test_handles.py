"""Hand-derived counts for tiny modules: the arithmetic is written beside every expected number.

Conventions under test: one multiply-add = 2 operations; bytes are the minimal traffic (each input read
once, each output written once, at the element size in use); views cost nothing.
"""

from __future__ import annotations

import json

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from tests.counting.modules import as_module
from tops_advisor.counting import count_module
from tops_advisor.counting.handles import HANDLES, ZERO_COST, Cost, register
from tops_advisor.errors import CountingError
from tops_advisor.kinds import OpKind, Phase
from tops_advisor.workload import OP_KINDS, GemmShape, OpRecord


def only(w, name=None):
    ops = [op for op in w.ops if name is None or op.name == name]
    assert len(ops) == 1, [op.name for op in w.ops]
    return ops[0]


def test_linear_addmm():
    w = count_module(nn.Linear(16, 32), torch.randn(4, 16))
    op = only(w)
    assert op.name == "aten.addmm" and op.kind == "matmul" and op.kernels == 1
    assert op.flops == 2 * 4 * 32 * 16              # 2 * m * n * k = 4096
    assert op.bytes_read == 4 * 16 * 4 + 32 * 16 * 4 + 32 * 4  # x 256 + W 2048 + b 128 = 2432
    assert op.bytes_written == 4 * 32 * 4           # 512
    assert op.param_bytes == 32 * 16 * 4 + 32 * 4   # W seen through its transpose view: 2176
    assert op.gemm == GemmShape(m=4, n=32, k=16, batch=1)
    assert w.params == 32 * 16 + 32 and w.param_bytes == 2176 and w.input_bytes == 256


def test_linear_without_bias_on_3d_input_is_mm():
    op = only(count_module(nn.Linear(16, 8, bias=False), torch.randn(2, 5, 16)))
    assert op.name == "aten.mm" and op.gemm == GemmShape(m=10, n=8, k=16)  # (2*5) x 16 @ 16 x 8
    assert op.flops == 2 * 10 * 8 * 16                                   # 2560


def test_bmm_and_matmul():
    op = only(count_module(as_module(torch.bmm), (torch.randn(3, 4, 5), torch.randn(3, 5, 6))))
    assert op.flops == 2 * 3 * 4 * 6 * 5 and op.gemm == GemmShape(4, 6, 5, 3)  # 720


def test_conv2d_grouped():
    conv = nn.Conv2d(8, 16, 3, padding=1, groups=4, bias=False)
    op = only(count_module(conv, torch.randn(2, 8, 10, 10)))
    # out (2, 16, 10, 10); each output element: C_in/groups * 3*3 = 2*9 = 18 multiply-adds
    assert op.flops == 2 * (2 * 16 * 10 * 10) * 18                      # 115200
    assert op.gemm == GemmShape(m=2 * 10 * 10, n=16 // 4, k=2 * 9, batch=4)
    assert op.kernels == 1                                               # no bias: one cuDNN kernel
    assert op.bytes_read == (2 * 8 * 100 + 16 * 2 * 9) * 4               # input + weight = 7552
    assert op.bytes_written == 2 * 16 * 100 * 4                          # 12800


def test_conv_records_stride_and_dilation():
    # cuDNN's Winograd needs stride 1 and dilation 1 (roofline/rates.winograd_speedup); channels-last dilated
    # depthwise convolutions run a slow kernel (rates.depthwise_rate): the largest of each is recorded
    x = torch.randn(1, 4, 8, 8)
    shapes = [only(count_module(nn.Conv2d(4, 4, 3, bias=False, **kw), x)).gemm
              for kw in ({"padding": 1}, {"stride": 2}, {"dilation": 2}, {"stride": (1, 2)})]
    assert [(g.stride, g.dilation) for g in shapes] == [(1, 1), (2, 1), (1, 2), (2, 1)]


def test_conv2d_depthwise_with_bias():
    op, add = count_module(nn.Conv2d(8, 8, 3, groups=8), torch.randn(1, 8, 6, 6)).ops
    # out (1, 8, 4, 4): each output element 1*3*3 = 9 multiply-adds
    assert op.flops == 2 * (8 * 4 * 4) * 9                               # 2304
    assert op.gemm == GemmShape(m=16, n=1, k=9, batch=8)
    assert op.kernels == 1 and op.param_bytes == 8 * 9 * 4               # the weights: 288 bytes
    # PyTorch adds the bias in its own broadcast kernel: reads the output (128 floats) and the bias, writes it
    assert (add.name, add.kind, add.kernels, add.strided) == ("aten.add", "elementwise", 1, True)
    assert add.bytes_read == (128 + 8) * 4 and add.bytes_written == 128 * 4 and add.param_bytes == 8 * 4


def test_conv_transpose2d():
    op = only(count_module(nn.ConvTranspose2d(4, 6, 2, stride=2, bias=False), torch.randn(1, 4, 5, 5)))
    # every input element (4*5*5 = 100) scatters into C_out * 2*2 = 24 outputs: 2400 multiply-adds
    assert op.flops == 2 * 100 * 24                                      # 4800
    assert op.gemm == GemmShape(m=25, n=6 * 4, k=4, batch=1)
    assert op.bytes_written == 6 * 10 * 10 * 4                           # out (1, 6, 10, 10)


def test_conv1d_and_conv3d():
    op = only(count_module(nn.Conv1d(4, 8, 3, bias=False), torch.randn(2, 4, 10)))
    assert op.flops == 2 * (2 * 8 * 8) * (4 * 3)                         # out (2, 8, 8): 3072
    op, add = count_module(nn.Conv3d(2, 4, 3, padding=1), torch.randn(1, 2, 4, 4, 4)).ops
    assert op.flops == 2 * (4 * 64) * (2 * 27)                           # out (1, 4, 4, 4, 4): 27648
    assert op.gemm == GemmShape(m=64, n=4, k=54, batch=1) and op.kernels == 1
    assert add.name == "aten.add" and add.bytes_written == 4 * 64 * 4   # the bias add over the output


class _SplitConv(nn.Module):
    """MixNet's mixed convolution: a channel split, one convolution per part."""

    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Conv2d(4, 4, 3, padding=1, bias=False), nn.Conv2d(4, 4, 5, padding=2, bias=False)

    def forward(self, x):
        xa, xb = x.split(4, dim=1)
        return torch.cat([self.a(xa), self.b(xb)], 1)


def test_strided_convolution_input_is_copied_dense_first():
    """PyTorch copies a convolution input that is dense in neither layout (a channel slice of a batch);
    at batch 1 the slice is dense, and a transposed 1-D sequence is a channels-last input: no copy."""
    ops = count_module(_SplitConv(), torch.randn(2, 8, 6, 6)).ops
    copies = [o for o in ops if o.name == "aten.contiguous"]
    assert len(copies) == 2 and all(c.internal and c.kind == "copy" for c in copies)
    assert copies[0].bytes_read == copies[0].bytes_written == 2 * 4 * 36 * 4
    assert not [o for o in count_module(_SplitConv(), torch.randn(1, 8, 6, 6)).ops if o.name == "aten.contiguous"]

    class Seq(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv1d(8, 8, 3, bias=False)

        def forward(self, x):
            return self.conv(x.transpose(1, 2))

    assert [o.name for o in count_module(Seq(), torch.randn(2, 10, 8)).ops] == ["aten.convolution"]


@pytest.mark.parametrize("causal", [False, True])
def test_sdpa_is_one_fused_op(causal):
    q, k, v = (torch.randn(2, 4, 16, 8) for _ in range(3))
    w = count_module(as_module(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=causal)), (q, k, v))
    op = only(w)  # no bmm, softmax or mask ops leak out of the math path
    assert op.name == "aten.scaled_dot_product_attention" and op.kind == "attention" and op.kernels == 1
    full = 2 * (2 * 4) * 16 * 16 * 8 * 2  # QK^T and PV: 2 * (b*h) * Lq * Lk * d each = 65536
    # causal: query i sees keys 0..i, 16 * 17 / 2 = 136 of the 256 pairs: 34816
    assert op.flops == (full * 136 / 256 if causal else full)
    assert op.bytes_read == 3 * (2 * 4 * 16 * 8 * 4)                     # Q, K, V: 12288, no score matrix
    assert op.bytes_written == 2 * 4 * 16 * 8 * 4                        # 4096
    assert op.gemm == GemmShape(m=16, n=16, k=8, batch=8)


def test_attention_output_transpose_reshape_is_free():
    """On a GPU fused attention writes (b, s, h, d) memory, so transpose(1, 2).reshape() is a view there."""
    def attend(q):
        y = F.scaled_dot_product_attention(q, q, q)
        return y.transpose(1, 2).reshape(2, 16, 32), y.view(8, 16, 8)  # both work as on a CPU

    w = count_module(as_module(attend), torch.randn(2, 4, 16, 8))
    assert [op.name for op in w.ops] == ["aten.scaled_dot_product_attention"]


def test_sdpa_grouped_query_attention_reads_the_small_kv():
    q, k, v = torch.randn(1, 8, 16, 8), torch.randn(1, 2, 16, 8), torch.randn(1, 2, 16, 8)
    fn = as_module(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, enable_gqa=True))
    op = only(count_module(fn, (q, k, v)))
    assert op.flops == 2 * 8 * 16 * 16 * 8 * 2                           # query heads: 65536
    assert op.bytes_read == (8 + 2 + 2) * 16 * 8 * 4                     # 6144


def test_sdpa_with_a_contiguous_mask_is_one_fused_kernel_that_reads_the_mask():
    q = torch.randn(1, 2, 4, 8)
    mask = torch.ones(4, 4, dtype=torch.bool)
    op = only(count_module(as_module(lambda q, m: F.scaled_dot_product_attention(q, q, q, attn_mask=m)), (q, mask)))
    assert op.kind == "attention" and op.kernels == 1
    assert op.bytes_read == 3 * (2 * 4 * 8 * 4) + 16                     # Q, K, V (256 B each x 3) + bool mask


def test_sdpa_no_fused_kernel_takes_is_counted_kernel_by_kernel():
    # A permuted mask (last-dim stride 2) rules out every fused kernel, so PyTorch runs the math path
    # (profiled on the H200): bmm, mask add, safe softmax, bmm, each a kernel of its own, plus a zero-cost
    # marker that keeps the attention call visible.
    q = torch.randn(1, 2, 4, 8)
    mask = torch.randn(1, 4, 4, 2).permute(0, 3, 1, 2)                   # (1, 2, 4, 4), stride(-1) == 2
    w = count_module(as_module(lambda q, m: F.scaled_dot_product_attention(q, q, q, attn_mask=m)), (q, mask))
    names = [op.name for op in w.ops]
    marker = [op for op in w.ops if op.name == "aten.scaled_dot_product_attention"]
    assert len(marker) == 1 and marker[0].flops == 0 and marker[0].kernels == 0 and marker[0].kind == "attention"
    bmm = [op for op in w.ops if op.name == "aten.bmm"]
    assert [op.flops for op in bmm] == [2 * 2 * 4 * 4 * 8, 2 * 2 * 4 * 4 * 8]   # QK^T and PV: 256 each
    add = w.ops[names.index("aten.add")]
    assert add.bytes_read == 2 * (2 * 4 * 4 * 4)                                # scores + mask, 128 B each
    softmax = w.ops[names.index("aten._safe_softmax")]
    assert softmax.kernels == 4 and softmax.bytes_read == 3 * 128 and softmax.bytes_written == 2 * 128


def test_sdpa_on_5d_inputs_runs_the_math_path_and_upcasts_fp16():
    q = torch.randn(1, 3, 2, 4, 8, dtype=torch.float16)                   # (batch, windows, heads, tokens, dim)
    w = count_module(as_module(lambda q: F.scaled_dot_product_attention(q, q, q)), q, "fp16")
    assert {op.dtype for op in w.ops if op.name == "aten.bmm"} == {"fp32"}


def test_norms():
    op = only(count_module(nn.LayerNorm(16), torch.randn(4, 16)))
    # mean 1, variance 3, normalise 2, scale 1, shift 1 = 8 per element (opcosts.LAYER_NORM): 8 * 64 = 512
    assert op.kind == "norm" and op.flops == 8 * 64
    assert op.bytes_read == 64 * 4 + 2 * 16 * 4 and op.bytes_written == 64 * 4  # 384, 256
    bn = nn.BatchNorm2d(4)
    op = only(count_module(bn, torch.randn(2, 4, 3, 3)))
    assert op.flops == 2 * 72 and op.kernels == 1                        # eval: scale and shift
    assert op.param_bytes == 4 * 4 * 4                                   # weight, bias, running mean, var
    op = only(count_module(nn.GroupNorm(2, 4), torch.randn(2, 4, 3, 3)))
    assert op.flops == 8 * 72 and op.kernels == 3                        # as layer norm: 8 * 72 = 576
    assert (op.gemm.m, op.gemm.n) == (2 * 2, 2 * 9)                      # rows: samples x groups
    op = only(count_module(nn.LayerNorm(16, elementwise_affine=False), torch.randn(4, 16)))
    assert op.flops == 6 * 64                                            # no scale or shift: 8 - 2 = 6
    op = only(count_module(nn.RMSNorm(16), torch.randn(4, 16)))          # fused, not pow/mean/rsqrt/mul
    assert op.name == "aten.rms_norm" and op.flops == 4 * 64             # 256


def test_softmax_elementwise_and_reduction():
    op = only(count_module(as_module(lambda x: x.softmax(-1)), torch.randn(4, 10)))
    assert op.kind == "softmax" and op.flops == 5 * 40
    op = only(count_module(as_module(torch.relu), torch.randn(3, 4)))
    assert op.flops == 12 and op.bytes_read == 48 and op.bytes_written == 48
    op = only(count_module(as_module(lambda x: x * x), torch.randn(3, 4)))
    assert op.bytes_read == 48                                           # the same tensor is read once
    op = only(count_module(as_module(lambda x: x.sum(-1)), torch.randn(3, 4)))
    assert op.kind == "reduction" and op.flops == 12 and op.bytes_written == 12


@pytest.mark.parametrize(("fn", "ops_per_element"), [
    (F.silu, 4),                                   # x / (1 + exp(-x)): neg, exp, add, divide
    (torch.sigmoid, 4),                            # 1 / (1 + exp(-x)): neg, exp, add, reciprocal
    (F.gelu, 5),                                   # x * 0.5 * (1 + erf(x / sqrt 2)): mul, erf, add, mul, mul
    (lambda x: F.gelu(x, approximate="tanh"), 8),  # square, mul, add, mul, tanh, add, mul, mul
    (F.hardswish, 5),                              # x * clamp(x + 3, 0, 6) / 6: add, max, min, mul, div
    (F.relu6, 2),                                  # max, min
    (lambda x: x.clamp(min=0), 1),                 # one bound: one comparison
    (lambda x: x.clamp(-1, 1), 2),                 # two bounds: two comparisons
    (lambda x: x.clip(-1, 1), 2),                  # clip is clamp
    (lambda x: x.clip(max=1), 1),
    (torch.tanh, 1),                               # one transcendental instruction
])
def test_activations_count_the_arithmetic_of_their_formula(fn, ops_per_element):
    op = only(count_module(as_module(fn), torch.randn(3, 4)))
    assert op.kind == "elementwise" and op.flops == ops_per_element * 12


def test_pooling():
    op = only(count_module(nn.MaxPool2d(2), torch.randn(1, 3, 8, 8)))
    assert op.kind == "pool" and op.flops == 48 * 4                      # out 3*4*4 = 48, window 4
    assert op.bytes_written == 48 * 4                                    # values only, not the indices
    op = only(count_module(nn.AvgPool2d(3, stride=1), torch.randn(1, 1, 5, 5)))
    assert op.flops == 9 * 9                                             # out 3x3, window 9
    op = only(count_module(nn.AdaptiveAvgPool2d(2), torch.randn(1, 2, 6, 6)))
    assert op.flops == 72                                                # every input element once


def test_embedding_reads_rows_not_table():
    emb = nn.Embedding(1000, 8)
    op = only(count_module(emb, torch.tensor([[1, 2, 3], [4, 5, 6]])))
    assert op.kind == "embedding" and op.flops == 0
    assert op.param_bytes == 6 * 8 * 4                                   # 6 rows of 8 fp32: 192, not 32000
    assert op.bytes_read == 6 * 8 + 192                                  # int64 indices + rows: 240
    assert op.bytes_written == 192


def test_cat_copy_and_upsample():
    op = only(count_module(as_module(lambda a, b: torch.cat([a, b])), (torch.randn(2, 3), torch.randn(2, 3))))
    assert op.kind == "copy" and op.bytes_read == 48 and op.bytes_written == 48
    op = only(count_module(as_module(lambda x: x.t().contiguous()), torch.randn(3, 5)))
    assert op.name == "aten.clone" and op.bytes == 2 * 60                # a layout change materialises
    op = only(count_module(nn.Upsample(scale_factor=2), torch.randn(1, 2, 3, 3)))
    assert op.flops == 0 and op.bytes_read == 72 and op.bytes_written == 288  # 18 in, 72 out (fp32)
    op = only(count_module(nn.Upsample(scale_factor=2, mode="bilinear"), torch.randn(1, 2, 3, 3)))
    assert op.flops == 72 * 8                                            # 4 taps, a multiply-add each


def test_views_cost_nothing():
    def views(x):
        return x.view(4, 6).t().unsqueeze(0).permute(0, 2, 1)[0].reshape(24)[2:10].squeeze()

    w = count_module(as_module(views), torch.randn(2, 3, 4))
    assert w.ops == () and w.flops == 0 and w.bytes == 0


def test_module_paths_and_peak_activations():
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Sequential(nn.Linear(32, 8)))
    w = count_module(model.to("meta"), torch.randn(4, 16, device="meta"))
    assert [op.module for op in w.ops] == ["0", "1", "2.0"]
    # x 256 B is held by the caller; Linear out 512 B is alive while ReLU writes its 512 B: 1280 B
    assert w.activation_peak_bytes == 256 + 512 + 512


@pytest.mark.parametrize("dtype,size", [("fp32", 4), ("fp16", 2), ("bf16", 2)])
def test_dtype_casts_params_and_inputs(dtype, size):
    w = count_module(nn.Linear(16, 32), torch.randn(4, 16), dtype)
    op = only(w)
    assert op.dtype == dtype and w.dtype == dtype
    assert op.bytes_read == (64 + 512 + 32) * size                       # x, W, b
    assert w.param_bytes == 544 * size


def test_tf32_labels_only_matrix_ops():
    w = count_module(nn.Sequential(nn.Linear(4, 4), nn.ReLU()), torch.randn(2, 4), "tf32")
    assert [op.dtype for op in w.ops] == ["tf32", "fp32"]
    assert w.ops[0].bytes_read == (8 + 16 + 4) * 4                       # fp32 storage


def test_int8_counts_bytes_at_one_byte():
    w = count_module(nn.Linear(16, 32), torch.randn(4, 16), "int8")
    assert w.dtype == "int8" and w.ops[0].dtype == "int8"
    assert w.ops[0].bytes_read == 64 + 512 + 32 and w.param_bytes == 544  # 1 byte per element


def test_unknown_dtype_is_an_error():
    with pytest.raises(CountingError, match="fp17"):
        count_module(nn.Linear(2, 2), torch.randn(1, 2), "fp17")


def test_unsupported_ops_are_listed_and_warned_never_silent():
    fn = as_module(torch.special.bessel_j0)
    with pytest.warns(UserWarning, match="bessel_j0"):
        w = count_module(fn, torch.randn(3, 4))
    assert w.unsupported_ops == {"aten.special_bessel_j0": 1}
    op = only(w)
    assert op.kind == "other" and op.flops == 0 and op.bytes == 96       # bytes still counted: 48 + 48
    with pytest.raises(CountingError, match="bessel_j0"):
        count_module(fn, torch.randn(3, 4), strict=True)


def test_registry_is_consistent():
    assert not (set(HANDLES) & ZERO_COST)  # an operator is either counted or free, never both
    assert all(k.startswith(("aten.", "prim.", "profiler.")) for k in set(HANDLES) | ZERO_COST)
    for name in ("aten.mm", "aten.convolution", "aten.scaled_dot_product_attention", "aten.embedding",
                 "aten.native_layer_norm", "aten.cat", "aten.upsample_nearest2d", "aten.max_pool2d_with_indices"):
        assert name in HANDLES, name
    for name in ("aten.view", "aten.transpose", "aten.permute", "aten.expand", "aten.detach"):
        assert name in ZERO_COST, name


def test_registering_a_name_twice_is_refused():
    def formula(_call):
        return Cost(OpKind.OTHER)

    name = "aten.op_registered_by_this_test"
    register(name)(formula)
    try:
        with pytest.raises(CountingError, match=f"{name} is already registered"):
            register(name)(formula)
    finally:
        del HANDLES[name]
    gelu = HANDLES["aten.gelu"]
    with pytest.raises(CountingError, match="aten.gelu is already registered"):
        register("aten.new_name_of_this_test", "aten.gelu")(formula)
    assert HANDLES["aten.gelu"] is gelu and "aten.new_name_of_this_test" not in HANDLES  # nothing half-done
    with pytest.raises(CountingError, match="ZERO_COST"):
        register("aten.view")(formula)


def test_every_kind_is_a_workload_kind():
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                          nn.Linear(4 * 3 * 3, 5), nn.Softmax(-1))
    w = count_module(model, torch.randn(1, 3, 8, 8))
    assert {op.kind for op in w.ops} <= set(OP_KINDS)
    assert all(isinstance(op.kind, OpKind) for op in w.ops)
    assert OP_KINDS == tuple(OpKind) and OP_KINDS[:2] == ("matmul", "conv")   # the words users already read


def test_every_counted_operator_is_in_the_forward_phase():
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 6 * 6, 5))
    w = count_module(model, torch.randn(1, 3, 8, 8))
    assert [op.phase for op in w.ops] == [Phase.FORWARD] * len(w.ops) and len(w.ops) == 4  # conv, bias add,
    dumped = json.loads(json.dumps(w.model_dump()))["ops"]                                   # relu, addmm
    assert [(op["kind"], op["phase"]) for op in dumped] == [
        ("conv", "forward"), ("elementwise", "forward"), ("elementwise", "forward"), ("matmul", "forward")]


def test_kernels_a_lowering_inserts_belong_to_the_phase_of_their_operator():
    from tops_advisor.counting.lowering import CountedOp, OpFacts, lower_pytorch_cuda

    conv = OpRecord(name="aten.convolution", kind="conv", module="c", flops=1.0, bytes_read=1.0, bytes_written=1.0,
                    phase=Phase.BACKWARD)
    facts = OpFacts(conv_bias_bytes=8.0, conv_out_elements=4, conv_out_bytes=16.0, conv_input_copy_bytes=32.0)
    ops = lower_pytorch_cuda([CountedOp(conv, facts)])
    assert [(op.name, op.phase) for op in ops] == [("aten.contiguous", "backward"), ("aten.convolution", "backward"),
                                                   ("aten.add", "backward")]


def test_an_operator_kind_is_one_of_the_kinds():
    assert OpRecord(name="x", kind="pool", module="", flops=0, bytes_read=0, bytes_written=0).kind is OpKind.POOL
    with pytest.raises(ValueError, match="gemm"):
        OpRecord(name="x", kind="gemm", module="", flops=0, bytes_read=0, bytes_written=0)


def test_fvcore_agrees_on_convolution_and_linear():
    """fvcore counts one multiply-add as one flop: ours must be exactly twice its conv and linear counts."""
    fvcore = pytest.importorskip("fvcore.nn")
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                          nn.Conv2d(8, 8, 3, groups=2, bias=False), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                          nn.Linear(8, 10)).eval()
    x = torch.randn(2, 3, 12, 12)
    analysis = fvcore.FlopCountAnalysis(model, x).unsupported_ops_warnings(False).uncalled_modules_warnings(False)
    by_op = analysis.by_operator()
    w = count_module(model, x)
    ours_conv = sum(op.flops for op in w.ops if op.kind == "conv")
    ours_linear = sum(op.flops for op in w.ops if op.kind == "matmul")
    assert ours_conv == 2 * by_op["conv"]
    assert ours_linear == 2 * by_op["linear"]


@pytest.mark.parametrize(("dtype", "head_dim", "pads"), [(torch.float16, 36, 3), (torch.float16, 40, 0),
                                                        (torch.float32, 36, 0)])
def test_half_attention_pads_head_dims_not_a_multiple_of_8(dtype, head_dim, pads):
    q, k, v = (torch.randn(2, 4, 16, head_dim, dtype=dtype, device="meta") for _ in range(3))
    w = count_module(as_module(lambda q, k, v: F.scaled_dot_product_attention(q, k, v)), (q, k, v),
                     "fp16" if dtype == torch.float16 else "fp32")
    padding = [op for op in w.ops if op.name == "aten.constant_pad_nd"]
    assert len(padding) == pads and w.ops[-1].name == "aten.scaled_dot_product_attention"
    for op in padding:
        # reads the (2, 4, 16, 36) tensor, fills and copies into a (2, 4, 16, 40) one: 2 kernels, 2 writes
        assert op.bytes_read == 2 * 4 * 16 * 36 * 2 and op.bytes_written == 2 * (2 * 4 * 16 * 40 * 2)
        assert op.kernels == 2 and op.internal and op.strided and op.kind == "copy"


def test_the_three_cuda_rewrites_belong_to_the_lowering():
    """Counted without a lowering, a model is what it computes: the convolution without cuDNN's separate bias
    add, attention without the half-precision head-dim padding, and the math path's copy of the
    transposed attention output kept; lowered for eager PyTorch on CUDA (the default), the reverse."""
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv1d(4, 4, 1)                                  # with a bias

        def forward(self, x, q):
            y = F.scaled_dot_product_attention(q, q, q)                   # head dim 36: padded in fp16
            return self.conv(x), y.transpose(1, 2).reshape(2, 16, 144)

    inputs = (torch.randn(2, 4, 8, device="meta"), torch.randn(2, 4, 16, 36, device="meta"))
    raw = count_module(Model(), inputs, "fp16", lowering="none")
    lowered = count_module(Model(), inputs, "fp16")
    assert (raw.lowering, lowered.lowering) == ("none", "pytorch-cuda")
    assert [op.name for op in raw.ops] == ["aten.scaled_dot_product_attention", "aten.convolution",
                                           "aten.clone"]
    assert [op.name for op in lowered.ops] == ["aten.constant_pad_nd"] * 3 + [  # one each for q, k, v
        "aten.scaled_dot_product_attention", "aten.convolution", "aten.add"]
    add = lowered.ops[-1]
    assert add.flops == 2 * 4 * 8 and add.bytes_read == (2 * 4 * 8 + 4) * 2  # output 64 fp16 + bias 4
    with pytest.raises(CountingError, match="unknown lowering"):
        count_module(Model(), inputs, "fp16", lowering="tpu")


def test_counter_and_llm_builder_count_the_same_operators_alike():
    """One table (tops_advisor.opcosts) for both: operators of an LLM built analytically cost what the same
    operators counted from PyTorch cost."""
    from tops_advisor.llm import build_workload, load_config

    def counted(fn, *shapes):
        return only(count_module(as_module(fn) if not isinstance(fn, nn.Module) else fn,
                                 tuple(torch.randn(*s, device="meta") for s in shapes))).flops

    t, h = 16, 1600  # GPT-2 XL: layer norm, GELU (tanh), a fused qkv Linear with a bias, residual adds
    gpt = build_workload(load_config("examples/llm/gpt2-xl-config.json"), phase="prefill", batch=1, context=t)
    built = {op.name: op.flops for op in gpt.ops if op.module.startswith("layers.0.")}
    assert built["input_layernorm.layer_norm"] == counted(nn.LayerNorm(h, device="meta"), (t, h)) == 8 * t * h
    assert built["gelu_new"] == counted(lambda x: F.gelu(x, approximate="tanh"), (t, 4 * h)) == 8 * t * 4 * h
    assert built["qkv_proj"] == counted(nn.Linear(h, 3 * h, device="meta"), (t, h)) == 2 * t * 3 * h * h  # no bias
    assert built["residual_add"] == counted(torch.add, (t, h), (t, h)) == t * h

    t, h, inter = 16, 4096, 11008  # LLaMA-2-7B: RMS norm, SiLU and the gate multiply
    llama = load_config("llama2-7b")
    built = {op.name: op.flops for op in build_workload(llama, phase="prefill", batch=1, context=t).ops
             if op.module.startswith("layers.0.")}
    assert built["silu"] == counted(F.silu, (t, inter)) == 4 * t * inter
    assert built["mul"] == counted(torch.mul, (t, inter), (t, inter)) == t * inter
    fused = {op.name: op.flops for op in build_workload(llama, phase="prefill", batch=1, context=t,
                                                           layout="fused").ops if op.module.startswith("layers.0.")}
    assert fused["input_layernorm.rms_norm"] == counted(nn.RMSNorm(h, device="meta"), (t, h)) == 4 * t * h
    assert fused["act_and_mul"] == built["silu"] + built["mul"]                             # 5 per element
