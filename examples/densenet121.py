"""DenseNet-121 (Huang et al. 2017, "Densely Connected Convolutional Networks"), 224x224 RGB, 1000 classes:
7,978,856 parameters (torchvision ``densenet121``), 2.87 GMACs (2.83 by torchvision's count of convolutions
and the classifier alone).

Plain torch, written from the paper and torchvision's layout (no weights are loaded): a 7x7 stride-2 stem to
64 channels with BatchNorm, ReLU and 3x3 stride-2 max pooling, four dense blocks of (6, 12, 24, 16) layers
with growth rate 32, transitions between them, a final BatchNorm and ReLU, global average pooling and a
linear classifier. Each dense layer is a bottleneck, BN-ReLU-Conv1x1 to 4 x 32 = 128 channels then
BN-ReLU-Conv3x3 to 32 channels, applied to the ``torch.cat`` of every earlier feature map of its block
(as torchvision does: one concatenation per layer). Each transition is BN-ReLU-Conv1x1 halving the channels
and 2x2 average pooling with stride 2. Convolutions have no bias; dropout is 0 and left out.

Part of the blind held-out set of docs/accuracy.md: written after the roofline predictor was tuned and
never used to check it.
"""

import torch
from _blocks import MeanPoolClassifier
from torch import nn

GROWTH, BN_SIZE, STEM = 32, 4, 64
BLOCKS = (6, 12, 24, 16)


class DenseLayer(nn.Module):
    def __init__(self, cin: int):
        super().__init__()
        self.norm1 = nn.BatchNorm2d(cin)
        self.conv1 = nn.Conv2d(cin, BN_SIZE * GROWTH, 1, bias=False)
        self.norm2 = nn.BatchNorm2d(BN_SIZE * GROWTH)
        self.conv2 = nn.Conv2d(BN_SIZE * GROWTH, GROWTH, 3, padding=1, bias=False)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, features: list[torch.Tensor]) -> torch.Tensor:
        x = torch.cat(features, 1)
        x = self.conv1(self.relu(self.norm1(x)))
        return self.conv2(self.relu(self.norm2(x)))


class DenseBlock(nn.Module):
    def __init__(self, layers: int, cin: int):
        super().__init__()
        self.layers = nn.ModuleList(DenseLayer(cin + i * GROWTH) for i in range(layers))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        features = [x]
        for layer in self.layers:
            features.append(layer(features))
        return torch.cat(features, 1)


def transition(cin: int, cout: int) -> nn.Sequential:
    return nn.Sequential(nn.BatchNorm2d(cin), nn.ReLU(inplace=True), nn.Conv2d(cin, cout, 1, bias=False),
                         nn.AvgPool2d(2, stride=2))


class DenseNet(MeanPoolClassifier):
    def __init__(self, blocks=BLOCKS, num_classes: int = 1000):
        layers: list[nn.Module] = [nn.Conv2d(3, STEM, 7, 2, 3, bias=False), nn.BatchNorm2d(STEM),
                                   nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, 1)]
        channels = STEM
        for i, n in enumerate(blocks):
            layers.append(DenseBlock(n, channels))
            channels += n * GROWTH
            if i != len(blocks) - 1:
                layers.append(transition(channels, channels // 2))
                channels //= 2
        layers += [nn.BatchNorm2d(channels), nn.ReLU(inplace=True)]
        super().__init__(nn.Sequential(*layers), nn.Linear(channels, num_classes))  # 1024 -> 1000


def build_model() -> nn.Module:
    return DenseNet()


def example_inputs(batch_size: int) -> torch.Tensor:
    return torch.randn(batch_size, 3, 224, 224)
