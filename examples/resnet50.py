"""ResNet-50 (v1.5: stride on the 3x3 conv, as torchvision), plain torch, random weights. 25.56M parameters.

Model file for ``tops-advisor count examples/resnet50.py --batch 8 --dtype fp16``.
"""

import torch
from _blocks import ResNetBottleneck
from torch import nn


class ResNet(nn.Module):
    def __init__(self, layers=(3, 4, 6, 3), num_classes: int = 1000):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        in_channels, stages = 64, []
        for i, (blocks, width) in enumerate(zip(layers, (64, 128, 256, 512), strict=True)):
            stage = []
            for b in range(blocks):
                stage.append(ResNetBottleneck(in_channels, width, width * 4, stride=2 if (b == 0 and i > 0) else 1))
                in_channels = width * 4
            stages.append(nn.Sequential(*stage))
        self.layer1, self.layer2, self.layer3, self.layer4 = stages
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(in_channels, num_classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def build_model() -> nn.Module:
    return ResNet()


def example_inputs(batch_size: int) -> torch.Tensor:
    return torch.randn(batch_size, 3, 224, 224)
