"""ShuffleNet V2 1.0x (Ma et al. 2018, "ShuffleNet V2: Practical Guidelines for Efficient CNN Architecture
Design"), 224x224 RGB, 1000 classes: 2,278,604 parameters (torchvision ``shufflenet_v2_x1_0``), 0.145 GMACs
("146M FLOPs" in the paper, which counts multiply-adds).

Plain torch, written from the paper and torchvision's layout (no weights are loaded). Stem: 3x3 stride-2 conv to
24 channels, BatchNorm, ReLU, 3x3 stride-2 max pooling (224 -> 112 -> 56). Three stages of (4, 8, 4) units with
116, 232, 464 output channels (28x28, 14x14, 7x7), then a 1x1 conv to 1024, BatchNorm, ReLU, global average
pooling and a linear classifier. Convolutions have no bias. In a unit with c output channels, each branch has
c/2 channels:
- stride 1 (the basic unit): channel split, x.chunk(2, dim=1); the first half passes through unchanged, the
  second goes through 1x1 conv, BN, ReLU, depthwise 3x3 conv, BN, 1x1 conv, BN, ReLU; the halves are
  concatenated.
- stride 2 (the first unit of a stage, no split): branch 1 is depthwise 3x3 stride-2 conv, BN, 1x1 conv to c/2,
  BN, ReLU; branch 2 is the basic unit's branch with the stride on its depthwise conv; concatenated.
Then the channel shuffle with 2 groups: view (b, 2, c/2, h, w), transpose(1, 2), contiguous, view (b, c, h, w).

Parameter count, derived (BatchNorm: 2 per channel; its running statistics are buffers):
  stem 3*24*9 + 2*24                                                   =        696
  basic unit, branch width b = c/2: b*b + 2b + b*9 + 2b + b*b + 2b = 2b^2 + 15b
  down unit (cin -> c, b = c/2): cin*9 + 2cin + cin*b + 2b  +  cin*b + 2b + b*9 + 2b + b*b + 2b
  stage 2 (24 -> 116, b 58)     7,398 + 3 x 7,598                     =     30,192
  stage 3 (116 -> 232, b 116)   43,616 + 7 x 28,652                   =    244,180
  stage 4 (232 -> 464, b 232)   167,968 + 3 x 111,128                 =    501,352
  conv5 464*1024 + 2*1024                                             =    477,184
  classifier 1024*1000 + 1000                                         =  1,025,000
  total                                                               =  2,278,604

Part of the blind held-out set of docs/accuracy.md: written after the roofline predictor was tuned and
never used to check it.
"""

import torch
from torch import nn

STAGE_REPEATS = (4, 8, 4)
STAGE_CHANNELS = (24, 116, 232, 464, 1024)


def channel_shuffle(x: torch.Tensor, groups: int) -> torch.Tensor:
    b, c, h, w = x.shape
    x = x.view(b, groups, c // groups, h, w)
    x = torch.transpose(x, 1, 2).contiguous()
    return x.view(b, c, h, w)


def _depthwise(channels: int, stride: int) -> nn.Conv2d:
    return nn.Conv2d(channels, channels, 3, stride=stride, padding=1, groups=channels, bias=False)


class InvertedResidual(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, stride: int):
        super().__init__()
        self.stride = stride
        branch = out_channels // 2
        if stride > 1:
            self.branch1 = nn.Sequential(
                _depthwise(in_channels, stride), nn.BatchNorm2d(in_channels),
                nn.Conv2d(in_channels, branch, 1, bias=False), nn.BatchNorm2d(branch), nn.ReLU(inplace=True))
        else:
            self.branch1 = nn.Sequential()
        self.branch2 = nn.Sequential(
            nn.Conv2d(in_channels if stride > 1 else branch, branch, 1, bias=False), nn.BatchNorm2d(branch),
            nn.ReLU(inplace=True),
            _depthwise(branch, stride), nn.BatchNorm2d(branch),
            nn.Conv2d(branch, branch, 1, bias=False), nn.BatchNorm2d(branch), nn.ReLU(inplace=True))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.stride == 1:
            x1, x2 = x.chunk(2, dim=1)                          # channel split
            out = torch.cat((x1, self.branch2(x2)), dim=1)
        else:
            out = torch.cat((self.branch1(x), self.branch2(x)), dim=1)
        return channel_shuffle(out, 2)


class ShuffleNetV2(nn.Module):
    def __init__(self, num_classes: int = 1000):
        super().__init__()
        c = STAGE_CHANNELS
        self.conv1 = nn.Sequential(nn.Conv2d(3, c[0], 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(c[0]),
                                   nn.ReLU(inplace=True))
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        stages, in_channels = [], c[0]
        for repeats, out_channels in zip(STAGE_REPEATS, c[1:4], strict=True):
            units = [InvertedResidual(in_channels, out_channels, 2)]
            units += [InvertedResidual(out_channels, out_channels, 1) for _ in range(repeats - 1)]
            stages.append(nn.Sequential(*units))
            in_channels = out_channels
        self.stage2, self.stage3, self.stage4 = stages
        self.conv5 = nn.Sequential(nn.Conv2d(in_channels, c[4], 1, bias=False), nn.BatchNorm2d(c[4]),
                                   nn.ReLU(inplace=True))
        self.fc = nn.Linear(c[4], num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.conv1(x))                         # 56x56x24
        x = self.stage4(self.stage3(self.stage2(x)))            # 7x7x464
        x = self.conv5(x).mean([2, 3])                          # global average pool
        return self.fc(x)


def build_model() -> nn.Module:
    return ShuffleNetV2().eval()


def example_inputs(batch_size: int) -> torch.Tensor:
    return torch.randn(batch_size, 3, 224, 224)
