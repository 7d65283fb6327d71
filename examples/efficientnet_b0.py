"""EfficientNet-B0 (Tan & Le 2019, "EfficientNet: Rethinking Model Scaling for CNNs"), 224x224 RGB, 1000
classes: 5,288,548 parameters (torchvision ``efficientnet_b0``), 0.39 GMACs (paper, Table 2).

Plain torch, written from the paper and torchvision's layout (no weights are loaded): a 3x3 stride-2 stem
to 32 channels, seven stages of MBConv blocks (inverted bottleneck: 1x1 expansion, depthwise kxk,
squeeze-and-excitation on a quarter of the block's input channels, 1x1 linear projection, residual when the
shape allows), a 1x1 head to 1280 channels, global average pooling and a linear classifier. SiLU
activations, BatchNorm (eps 1e-3); stochastic depth and dropout do nothing in inference and are left out
(neither has parameters).

Part of the blind held-out set of docs/accuracy.md: written after the roofline predictor was tuned and
never used to check it.
"""

import torch
from _blocks import MeanPoolClassifier
from torch import nn

# (expand ratio, kernel, stride, input channels, output channels, blocks), the paper's Table 1.
STAGES = (
    (1, 3, 1, 32, 16, 1),
    (6, 3, 2, 16, 24, 2),
    (6, 5, 2, 24, 40, 2),
    (6, 3, 2, 40, 80, 3),
    (6, 5, 1, 80, 112, 3),
    (6, 5, 2, 112, 192, 4),
    (6, 3, 1, 192, 320, 1),
)


def conv_bn_act(cin: int, cout: int, kernel: int = 1, stride: int = 1, groups: int = 1,
                act: bool = True) -> nn.Sequential:
    layers = [nn.Conv2d(cin, cout, kernel, stride, (kernel - 1) // 2, groups=groups, bias=False),
              nn.BatchNorm2d(cout, eps=1e-3)]
    if act:
        layers.append(nn.SiLU(inplace=True))
    return nn.Sequential(*layers)


class SqueezeExcitation(nn.Module):
    def __init__(self, channels: int, squeeze: int):
        super().__init__()
        self.fc1 = nn.Conv2d(channels, squeeze, 1)
        self.fc2 = nn.Conv2d(squeeze, channels, 1)
        self.act = nn.SiLU(inplace=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = x.mean(dim=(2, 3), keepdim=True)
        return x * torch.sigmoid(self.fc2(self.act(self.fc1(s))))


class MBConv(nn.Module):
    def __init__(self, cin: int, cout: int, kernel: int, stride: int, expand_ratio: int):
        super().__init__()
        hidden = cin * expand_ratio
        self.use_residual = stride == 1 and cin == cout
        layers: list[nn.Module] = [conv_bn_act(cin, hidden)] if expand_ratio != 1 else []
        layers += [conv_bn_act(hidden, hidden, kernel, stride, groups=hidden),   # depthwise
                   SqueezeExcitation(hidden, max(1, cin // 4)),
                   conv_bn_act(hidden, cout, act=False)]                        # linear projection
        self.block = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.block(x) if self.use_residual else self.block(x)


class EfficientNet(MeanPoolClassifier):
    def __init__(self, stages=STAGES, head_channels: int = 1280, num_classes: int = 1000):
        layers: list[nn.Module] = [conv_bn_act(3, stages[0][3], 3, stride=2)]
        for expand, kernel, stride, cin, cout, blocks in stages:
            layers.append(nn.Sequential(*(
                MBConv(cin if b == 0 else cout, cout, kernel, stride if b == 0 else 1, expand)
                for b in range(blocks))))
        layers.append(conv_bn_act(stages[-1][4], head_channels))
        super().__init__(nn.Sequential(*layers), nn.Linear(head_channels, num_classes))


def build_model() -> nn.Module:
    return EfficientNet()


def example_inputs(batch_size: int) -> torch.Tensor:
    return torch.randn(batch_size, 3, 224, 224)
