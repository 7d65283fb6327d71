"""The TensorRT lowering (counting/lowering/tensorrt.py) on tiny models whose engine kernels follow from the
profile's rules (tops_advisor/tensorrt.py): batch norm folded into the convolution, bias / activation / residual
sum in the convolution's epilogue, GELU in the GEMM's, residual add + layer norm in one generated kernel."""

from dataclasses import replace

import pytest
import torch
from torch import nn

from tops_advisor.counting import count_module
from tops_advisor.counting.lowering import PYTORCH_CUDA, TENSORRT, lowering_for
from tops_advisor.kinds import OpKind
from tops_advisor.tensorrt import TENSORRT as PROFILE
from tops_advisor.tensorrt import TrtRule

N, C_IN, C, H = 2, 16, 32, 8     # batch, input channels, channels, height = width
ACT = N * C * H * H              # elements of one activation: 4096
FP16 = 2


class ConvBnRelu(nn.Module):
    """conv3x3(+bias) -> bn -> relu -> conv1x1(no bias) -> bn -> + the first block's output -> relu -> mean -> fc."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(C_IN, C, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(C)
        self.conv2 = nn.Conv2d(C, C, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(C)
        self.fc = nn.Linear(C, 10)

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        z = torch.relu(self.bn2(self.conv2(y)) + y)
        return self.fc(z.mean((2, 3)))


def _count(module, x, lowering=TENSORRT, dtype="fp16"):
    return count_module(module, x, dtype, lowering=lowering)


def test_mode_tensorrt_counts_with_the_tensorrt_lowering():
    assert lowering_for("tensorrt") == TENSORRT
    assert lowering_for("graph") == PYTORCH_CUDA


def test_batch_norm_bias_activation_and_residual_fuse_into_the_convolutions():
    x = torch.randn(N, C_IN, H, H)
    eager = _count(ConvBnRelu(), x, PYTORCH_CUDA)
    # eager: conv, bias add, bn (2 kernels: native_batch_norm in half precision), relu | conv, bn (2), add,
    # relu | mean | addmm = 12 kernels
    assert eager.kernels == 12
    w = _count(ConvBnRelu(), x)
    # engine: conv1 (+bias, bn folded, relu) | conv2 (+bn folded as a bias, residual sum, relu) | mean | fc
    assert [op.name for op in w.ops] == ["aten.convolution", "aten.convolution", "trt:mean", "aten.addmm"]
    assert w.kernels == 4
    assert not any(op.kind == OpKind.NORM for op in w.ops)
    conv1, conv2 = w.ops[0], w.ops[1]
    # NHWC implicit GEMMs (input channels 16 and 32 are multiples of 8)
    assert conv1.kind == conv2.kind == OpKind.MATMUL
    macs1 = N * H * H * C * C_IN * 9             # 294,912 multiply-adds
    assert conv1.flops == 2 * macs1 + ACT + ACT  # + the bias add and the relu, one operation per output each
    weight1, bias = C * C_IN * 9 * FP16, C * FP16
    assert conv1.bytes_read == N * C_IN * H * H * FP16 + weight1 + bias
    assert conv1.bytes_written == ACT * FP16     # y once: conv2 and the residual sum read it
    macs2 = N * H * H * C * C
    assert conv2.flops == 2 * macs2 + 3 * ACT    # folded bias, residual sum, relu
    # reads y twice: as the 1x1 convolution's input and as the residual; the folded bias; writes z once
    assert conv2.bytes_read == 2 * ACT * FP16 + C * C * FP16 + bias
    assert conv2.bytes_written == ACT * FP16


def test_a_batch_norm_whose_input_another_operator_reads_is_not_folded():
    class Shared(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv, self.bn = nn.Conv2d(C_IN, C, 3, padding=1, bias=False), nn.BatchNorm2d(C)

        def forward(self, x):
            y = self.conv(x)
            return self.bn(y) + y            # y is read by the batch norm and by the add: no folding

    w = _count(Shared(), torch.randn(N, C_IN, H, H))
    assert [op.name for op in w.ops] == ["aten.convolution", "trt:native_batch_norm+add"]


class PostNormBlock(nn.Module):
    def __init__(self, d=64):
        super().__init__()
        self.fc1, self.fc2, self.norm = nn.Linear(d, 4 * d), nn.Linear(4 * d, d), nn.LayerNorm(d)

    def forward(self, x):
        return self.norm(x + self.fc2(nn.functional.gelu(self.fc1(x))))


def test_gelu_joins_the_gemm_and_the_residual_add_joins_the_layer_norm():
    x = torch.randn(2, 16, 64)
    eager = _count(PostNormBlock(), x, PYTORCH_CUDA)
    assert [op.name for op in eager.ops] == ["aten.addmm", "aten.gelu", "aten.addmm", "aten.add",
                                             "aten.native_layer_norm"]
    w = _count(PostNormBlock(), x)
    assert [op.name for op in w.ops] == ["aten.addmm", "aten.addmm", "trt:add+native_layer_norm"]
    fc1 = w.ops[0]
    tokens, hidden = 2 * 16, 4 * 64
    assert fc1.flops == 2 * tokens * 64 * hidden + eager.ops[1].flops   # the GEMM and the GELU's operations
    assert fc1.bytes_written == tokens * hidden * FP16                    # the GELU's output only


def test_each_rule_is_data_the_lowering_reads(monkeypatch):
    from tops_advisor.counting.lowering import LOWERINGS, NO_LOWERING
    from tops_advisor.counting.lowering.tensorrt import lower_tensorrt

    assert LOWERINGS[TENSORRT] is lower_tensorrt
    seen = []
    monkeypatch.setitem(LOWERINGS, NO_LOWERING, lambda ops: seen.extend(ops) or ())   # the operators as counted
    count_module(ConvBnRelu(), torch.randn(N, C_IN, H, H), "fp16", lowering=NO_LOWERING)
    names = [c.record.name for c in seen]
    assert names == ["aten.convolution", "aten.native_batch_norm", "aten.relu", "aten.convolution",
                     "aten.native_batch_norm", "aten.add", "aten.relu", "aten.mean", "aten.addmm"]
    assert [r.name for r in lower_tensorrt(seen, replace(PROFILE, rules=()))] == names   # no rule: as counted
    no_fold = replace(PROFILE, rules=tuple(r for r in PROFILE.rules if r.rule != TrtRule.FOLD_BATCH_NORM))
    # without folding, each batch norm is a generated kernel with the pointwise work after it (bn2's with the
    # sum, the relu and the mean: a reduction takes its pointwise producers)
    assert [r.name for r in lower_tensorrt(seen, no_fold)] == [
        "aten.convolution", "trt:native_batch_norm+relu", "aten.convolution",
        "trt:native_batch_norm+add+relu+mean", "aten.addmm"]


@pytest.mark.parametrize("rule", list(TrtRule))
def test_every_rule_of_the_shipped_profile_says_what_it_does_and_where_that_is_documented(rule):
    r = PROFILE.rule(rule)
    assert r.does and r.source and ("docs.nvidia.com" in r.source or "nvidia.com" in r.source)
