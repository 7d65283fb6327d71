"""--dtype amp: autocast's per-operator precision and cast kernels (counting/amp.py), on tiny models where
what torch.autocast("cuda", torch.float16) does is known from its operator lists (aten/src/ATen/autocast_mode.h)."""

import torch
from torch import nn

from tops_advisor.counting import count_module
from tops_advisor.counting.amp import FP32, LOWER_PRECISION
from tops_advisor.counting.lowering import INDUCTOR_CUDA
from tops_advisor.units import parse_precision


class NormLinearSoftmax(nn.Module):
    def __init__(self, d=32):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.fc = nn.Linear(d, d)

    def forward(self, x):
        h = self.fc(self.norm(x))
        h = self.fc(h)          # the same weights twice: autocast casts them once per forward
        return torch.softmax(h, -1)


def _ops(w):
    return [(op.name, op.dtype) for op in w.ops]


def test_precision_names():
    assert parse_precision("autocast", ("fp16", "amp")) == "amp"
    assert "aten.addmm" in LOWER_PRECISION and "aten.native_layer_norm" in FP32


def test_linear_layer_norm_softmax_under_autocast():
    x = torch.randn(4, 8, 32)
    w = count_module(NormLinearSoftmax(), x, "amp")
    assert w.dtype == "amp"
    assert _ops(w) == [
        ("aten.native_layer_norm", "fp32"),   # fp32 list: on the fp32 input, no cast
        ("aten._to_copy", "fp32"),            # fc.bias, cast once (addmm's first argument) ...
        ("aten._to_copy", "fp32"),            # the fp32 norm output cast to fp16 for the GEMM
        ("aten._to_copy", "fp32"),            # ... and fc.weight, once
        ("aten.addmm", "fp16"),
        ("aten.addmm", "fp16"),               # second use: fp16 input, cached fp16 weights, no cast
        ("aten._softmax", "fp32"),            # upcast inside the kernel: no cast kernel, fp32 output
    ]
    casts = [op for op in w.ops if op.name == "aten._to_copy"]
    assert casts[1].bytes_read == 4 * 8 * 32 * 4 and casts[1].bytes_written == 4 * 8 * 32 * 2
    assert casts[2].bytes_read == 32 * 32 * 4 and casts[2].bytes_written == 32 * 32 * 2
    assert casts[2].param_bytes == casts[2].bytes_read and casts[1].param_bytes == 0
    assert w.ops[-1].bytes_written == 4 * 8 * 32 * 4
    # weights stay fp32 in memory
    assert w.param_bytes == (32 * 32 + 32 + 2 * 32) * 4


def test_cnn_batch_norm_runs_on_half_activations():
    m = nn.Sequential(nn.Conv2d(3, 8, 3, bias=False), nn.BatchNorm2d(8), nn.ReLU())
    w = count_module(m, torch.randn(2, 3, 16, 16), "amp")
    assert _ops(w)[:3] == [("aten._to_copy", "fp32"), ("aten._to_copy", "fp32"), ("aten.convolution", "fp16")]
    bn = next(op for op in w.ops if op.name == "aten.native_batch_norm")
    assert bn.dtype == "fp16"   # on no list: the fp16 convolution output, its fp32 statistics read as they are
    # half input with fp32 weights takes cuDNN's one kernel (Normalization.cpp), not the native kernel and a
    # copy that model.half() runs: input and output read and written once, in fp16
    half = next(op for op in count_module(m, torch.randn(2, 3, 16, 16), "fp16").ops
                if op.name == "aten.native_batch_norm")
    out = 2 * 8 * 14 * 14 * 2
    assert (bn.kernels, bn.bytes_written) == (1, out) and (half.kernels, half.bytes_written) == (2, 2 * out)


def test_compiled_autocast_fuses_activation_casts_but_not_weight_casts():
    x = torch.randn(4, 8, 32)
    eager = count_module(NormLinearSoftmax(), x, "amp")
    compiled = count_module(NormLinearSoftmax(), x, "amp", lowering=INDUCTOR_CUDA)
    names = [op.name for op in compiled.ops]
    # the norm and its output cast are one kernel; each weight cast is a kernel of its own (read by a GEMM)
    assert names == ["triton:_to_copy", "triton:native_layer_norm+_to_copy", "triton:_to_copy", "aten.addmm",
                     "aten.addmm", "triton:_softmax"]
    assert compiled.kernels < eager.kernels
    assert compiled.ops[1].bytes_written == 4 * 8 * 32 * 2   # only the fp16 copy leaves the norm kernel
    assert compiled.ops[0].bytes_written == 32 * 2             # the bias cast


class MixedAttention(nn.Module):
    def forward(self, q, k, v):
        return torch.nn.functional.scaled_dot_product_attention(q, k.float(), v.float())


def test_attention_inputs_cast_to_half_as_autocast_does():
    q = torch.randn(1, 2, 8, 16)
    w = count_module(MixedAttention(), (q, q.clone(), q.clone()), "amp")
    # an fp32 model: q is fp32, k.float() and v.float() are no-ops; autocast casts all three to fp16
    assert [op.name for op in w.ops] == ["aten._to_copy"] * 3 + ["aten.scaled_dot_product_attention"]
    assert w.ops[-1].dtype == "fp16"
