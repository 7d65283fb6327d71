"""Forward + backward operations of matrix products and convolutions against ``torch.utils.flop_counter``
(FlopCounterMode counts a multiply-add as 2 operations, as we do): equal on tiny models, run for real on the CPU
for the flop counter and on meta tensors for the counter."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from tests.counting.backward_step import count_step
from tops_advisor.kinds import OpKind

TENSOR_CORE = (OpKind.MATMUL, OpKind.CONV, OpKind.ATTENTION)


def small_cnn() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
        nn.Conv2d(16, 16, 1), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10))


MODELS = {
    "conv": (lambda: nn.Conv2d(3, 8, 3, padding=1), (2, 3, 8, 8)),
    "linear": (lambda: nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4, bias=False)), (5, 16)),
    "layer_norm_mlp": (lambda: nn.Sequential(nn.Linear(16, 24), nn.LayerNorm(24), nn.GELU(), nn.Linear(24, 16)),
                       (2, 7, 16)),
    "small_cnn": (small_cnn, (2, 3, 16, 16)),
    "conv_transpose": (lambda: nn.Sequential(nn.Conv2d(3, 4, 3, stride=2, padding=1),
                                             nn.ConvTranspose2d(4, 2, 2, stride=2)), (1, 3, 8, 8)),
    "conv1d": (lambda: nn.Sequential(nn.Conv1d(4, 8, 5, padding=2), nn.SiLU(), nn.Conv1d(8, 4, 3)), (2, 4, 20)),
}


def torch_flops(model: nn.Module, x: torch.Tensor) -> int:
    with FlopCounterMode(display=False) as counter:
        out = model(x)
        (out * out).sum().backward()
    return counter.get_total_flops()


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("input_grad", [False, True])
def test_forward_and_backward_operations_equal_flop_counter(name, input_grad):
    build, shape = MODELS[name]
    torch.manual_seed(0)
    model = build()
    x = torch.randn(shape, requires_grad=input_grad)
    step = count_step(model, x)
    ours = sum(r.flops for r in step.forward + step.backward if r.kind in TENSOR_CORE)
    assert ours == torch_flops(model, x)
    assert step.unsupported == {}


def test_grouped_weight_gradient_differs_from_flop_counter_by_the_groups():
    """FlopCounterMode counts a weight gradient as conv(input^T, grad_out^T): every input channel against every
    output channel, ignoring groups (torch/utils/flop_counter.py, ``conv_backward_flop``). The kernel multiplies
    each group's channels only: the forward's multiply-adds, a groups-th of its count."""
    conv = nn.Conv2d(8, 8, 3, padding=1, groups=4, bias=False)
    x = torch.randn(2, 8, 6, 6, requires_grad=True)
    step = count_step(conv, x)
    forward = sum(r.flops for r in step.forward if r.kind == OpKind.CONV)
    dgrad, wgrad = [r for r in step.backward if r.kind == OpKind.CONV]
    assert forward == dgrad.flops == wgrad.flops == 2 * (2 * 8 * 36) * 18     # 20736
    assert forward + dgrad.flops + 4 * wgrad.flops == torch_flops(conv, x)
