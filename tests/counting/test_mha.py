"""nn.MultiheadAttention without weights is counted as CUDA runs it: in-projection, fused attention,
out-projection (counting/mha.py); with weights, as it decomposes."""

import pytest
import torch
from torch import nn

from tops_advisor.counting.counter import count_module


class SelfAttention(nn.Module):
    def __init__(self, need_weights: bool):
        super().__init__()
        self.attn = nn.MultiheadAttention(64, 4, batch_first=True)
        self.need_weights = need_weights

    def forward(self, x):
        return self.attn(x, x, x, need_weights=self.need_weights)[0]


@pytest.mark.parametrize("meta", [True, False])
def test_multihead_attention_without_weights_is_three_kernels(meta):
    model = SelfAttention(False).eval()
    x = torch.empty(2, 10, 64, device="meta") if meta else torch.randn(2, 10, 64)
    w = count_module(model.to("meta") if meta else model, x, "fp16")
    assert [o.name for o in w.ops] == ["aten.addmm", "aten.scaled_dot_product_attention", "aten.addmm"]
    in_proj, attention, out_proj = w.ops
    assert (in_proj.gemm.m, in_proj.gemm.n, in_proj.gemm.k) == (20, 192, 64)
    assert (attention.gemm.m, attention.gemm.n, attention.gemm.k, attention.gemm.batch) == (10, 10, 16, 8)
    assert (out_proj.gemm.m, out_proj.gemm.n, out_proj.gemm.k) == (20, 64, 64)
    # the projection weights are read as parameters: 3 x 64 x 64 + 64 x 64 weights and 4 x 64 biases, fp16
    assert in_proj.param_bytes + out_proj.param_bytes == pytest.approx(w.param_bytes)


def test_multihead_attention_with_weights_decomposes():
    w = count_module(SelfAttention(True).eval(), torch.randn(2, 10, 64), "fp16")
    names = [o.name for o in w.ops]
    assert "aten.scaled_dot_product_attention" not in names and "aten._softmax" in names
