"""A timm model (random weights, eval mode) at a fixed input height and width.

For published runs whose input differs from the model's ``pretrained_cfg["input_size"]`` (what the
``timm:NAME`` workloads count at), e.g. a benchmark run with ``--img-size 224`` of a model whose default is 192.
"""

from collections.abc import Callable

import timm
import torch
from torch import nn


def at_resolution(name: str, height: int, width: int) -> tuple[Callable[[], nn.Module], Callable[[int], torch.Tensor]]:
    """``build_model`` and ``example_inputs`` of timm's ``name`` fed batch x 3 x height x width."""

    def build_model() -> nn.Module:
        return timm.create_model(name, pretrained=False).eval()

    def example_inputs(batch_size: int) -> torch.Tensor:
        return torch.randn(batch_size, 3, height, width)

    return build_model, example_inputs
