"""RegNetY-800MF (Radosavovic et al. 2020, "Designing Network Design Spaces"), 224x224 RGB, 1000 classes:
6,432,512 parameters (torchvision ``regnet_y_800mf``), 0.83 GMACs.

Plain torch, written from the paper and torchvision's layout (no weights are loaded). The design-space
parameters (depth 14, w_0 56, w_a 38.84, w_m 2.4, group width 16, bottleneck ratio 1, SE ratio 0.25) quantise
to four stages of depths (1, 3, 8, 2) and widths (64, 144, 320, 784):
- stem: Conv2d 3 -> 32, 3x3 stride 2 (224 -> 112), BatchNorm, ReLU.
- each block ("Y" = X block + squeeze-and-excitation), input width w_in, width w, groups w/16:
  Conv1x1 w_in -> w, BatchNorm, ReLU; grouped Conv3x3 w -> w (groups of 16 channels: 4, 9, 20, 49 groups)
  carrying the stage's stride 2 on the first block, BatchNorm, ReLU; SE: global average pooling,
  Conv1x1 w -> round(w_in / 4) with bias, ReLU, Conv1x1 back to w with bias, sigmoid, channel-wise scale;
  Conv1x1 w -> w, BatchNorm (no activation). The first block of each stage has a projection shortcut
  (Conv1x1 stride 2, BatchNorm); ReLU after the residual add. Note the SE width comes from the block's
  *input* width (torchvision ``ResBottleneckBlock``): 8 in stage 1, 16 then 36 in stage 2, 36 then 80 in
  stage 3, 80 then 196 in stage 4.
- head: global average pooling, Linear 784 -> 1000.
Spatial sizes 112 -> 56 -> 28 -> 14 -> 7. Convolutions have no bias except in the SE.

Parameter count, derived (BatchNorm: 2 per channel; its running statistics are buffers); a block
(w_in, w, se s) has w_in*w + 2w + w*16*9 + 2w + (w*s + s + s*w + w) + w*w + 2w, plus w_in*w + 2w when it
projects:
  stem  3*32*9 + 2*32                                                  =        928
  stage 1 (w 64)   first (32, s 8) 19,016                              =     19,016
  stage 2 (w 144)  first (64, s 16) 65,824 + 2 x (144, s 36) 73,620    =    213,064
  stage 3 (w 320)  first (144, s 36) 266,596 + 7 x (320, s 80) 304,400 =  2,397,396
  stage 4 (w 784)  first (320, s 80) 1,361,888 + (784, s 196) 1,655,220 = 3,017,108
  classifier 784*1000 + 1000                                           =    785,000
  total                                                                =  6,432,512

Part of the sixth blind held-out set of docs/accuracy.md: written after the roofline predictor was tuned and
never used to check it.
"""

import torch
import torch.nn.functional as F
from _blocks import SqueezeExcitation
from _blocks import conv_bn as _conv_bn
from torch import nn

STEM, GROUP_WIDTH, SE_RATIO = 32, 16, 0.25
DEPTHS = (1, 3, 8, 2)
WIDTHS = (64, 144, 320, 784)


class BottleneckY(nn.Module):
    def __init__(self, in_channels: int, width: int, stride: int):
        super().__init__()
        self.a = _conv_bn(in_channels, width, 1)
        self.b = _conv_bn(width, width, 3, stride=stride, groups=width // GROUP_WIDTH)
        self.se = SqueezeExcitation(width, int(round(SE_RATIO * in_channels)))
        self.c = _conv_bn(width, width, 1)
        self.proj = _conv_bn(in_channels, width, 1, stride=stride) \
            if in_channels != width or stride != 1 else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.a(x))
        y = F.relu(self.b(y))
        y = self.c(self.se(y))
        shortcut = x if self.proj is None else self.proj(x)
        return F.relu(shortcut + y)


class RegNetY(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = _conv_bn(3, STEM, 3, stride=2)
        blocks, channels = [], STEM
        for depth, width in zip(DEPTHS, WIDTHS, strict=True):
            for i in range(depth):
                blocks.append(BottleneckY(channels, width, 2 if i == 0 else 1))
                channels = width
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(WIDTHS[-1], 1000)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.blocks(F.relu(self.stem(x)))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def build_model() -> nn.Module:
    return RegNetY().eval()


def example_inputs(batch_size: int) -> torch.Tensor:
    return torch.randn(batch_size, 3, 224, 224)
