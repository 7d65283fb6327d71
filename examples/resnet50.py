"""ResNet-50 (v1.5: stride on the 3x3 conv, as torchvision), plain torch, random weights. 25.56M parameters.

Model file for ``tops-advisor count examples/resnet50.py --batch 8 --dtype fp16``.
"""

import torch
from _blocks import ResNetLayers
from torch import nn


class ResNet(ResNetLayers):
    def __init__(self, layers=(3, 4, 6, 3), num_classes: int = 1000):
        super().__init__(layers)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(self.out_channels, num_classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def build_model() -> nn.Module:
    return ResNet()


def example_inputs(batch_size: int) -> torch.Tensor:
    return torch.randn(batch_size, 3, 224, 224)
