"""A small CIFAR-style CNN (32x32 RGB, 10 classes): conv-BN-ReLU blocks, pooling, a linear head."""

import torch
from torch import nn


def block(cin: int, cout: int) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU())


class SmallCNN(nn.Module):
    def __init__(self, num_classes: int = 10):
        super().__init__()
        self.features = nn.Sequential(
            block(3, 32), block(32, 32), nn.MaxPool2d(2),
            block(32, 64), block(64, 64), nn.MaxPool2d(2),
            block(64, 128), nn.AdaptiveAvgPool2d(1))
        self.head = nn.Linear(128, num_classes)

    def forward(self, x):
        return self.head(torch.flatten(self.features(x), 1))


def build_model() -> nn.Module:
    return SmallCNN()


def example_inputs(batch_size: int) -> torch.Tensor:
    return torch.randn(batch_size, 3, 32, 32)
