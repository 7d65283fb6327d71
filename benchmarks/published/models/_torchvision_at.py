"""A torchvision classification model (random weights, eval mode) at a fixed input height and width.

Shared by the model files of this folder: each one names a published run's model and input shape, so that
``benchmarks/reports/published_score.py`` counts the network at the resolution that was measured (a
``torchvision:NAME`` workload counts it at its default weights' crop: 224 for most, 384 for efficientnet_v2_s).
"""

from collections.abc import Callable

import torch
import torchvision
from torch import nn


def at_resolution(name: str, height: int, width: int) -> tuple[Callable[[], nn.Module], Callable[[int], torch.Tensor]]:
    """``build_model`` and ``example_inputs`` of torchvision's ``name`` fed batch x 3 x height x width."""

    def build_model() -> nn.Module:
        return getattr(torchvision.models, name)(weights=None).eval()

    def example_inputs(batch_size: int) -> torch.Tensor:
        return torch.randn(batch_size, 3, height, width)

    return build_model, example_inputs
