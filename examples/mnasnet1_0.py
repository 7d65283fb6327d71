"""MnasNet 1.0 (Tan et al. 2019, "MnasNet: Platform-Aware Neural Architecture Search for Mobile"), the B1
model, 224x224 RGB, 1000 classes: 4,383,312 parameters (torchvision ``mnasnet1_0``), 0.31 GMACs.

Plain torch, written from the paper's Figure 7 and torchvision's layout (no weights are loaded). Every
convolution is Conv2d without bias + BatchNorm (eps 1e-5; torchvision's momentum 0.0003 does not matter in
inference); padding k // 2; no squeeze-and-excitation (the B1 model has none).
- stem: Conv3x3 3 -> 32 stride 2 (224 -> 112), BN, ReLU; depthwise Conv3x3 32, BN, ReLU; Conv1x1 32 -> 16, BN.
- 6 stacks of inverted-residual blocks (input, output, kernel, stride of the first block, expansion, repeats):
    16  24 3 2 3 3   (-> 56x56)        80  96 3 1 6 2   (14x14)
    24  40 5 2 3 3   (-> 28x28)        96 192 5 2 6 4   (-> 7x7)
    40  80 5 2 6 3   (-> 14x14)       192 320 3 1 6 1   (7x7)
  A block (cin, cout, k, expansion t, e = t*cin): Conv1x1 cin -> e, BN, ReLU; depthwise Convkxk e with the
  stride, BN, ReLU; Conv1x1 e -> cout, BN; a residual add when stride 1 and cin == cout (every block but the
  first of each stack).
- head: Conv1x1 320 -> 1280, BN, ReLU; global average pooling (mean over H, W); dropout 0.2 (nothing in
  inference), Linear 1280 -> 1000.

Parameter count, derived (BatchNorm: 2 per channel; its running statistics are buffers):
  stem 3*32*9 + 64 + 32*9 + 64 + 32*16 + 32                             =      1,824
  block(cin, e, k, cout) = cin*e + 2e + e*k*k + 2e + e*cout + 2*cout
    16 -> 24,  e 48,  k 3: 768 + 96 + 432 + 96 + 1,152 + 48             =      2,592
    24 -> 24,  e 72,  k 3: 1,728 + 144 + 648 + 144 + 1,728 + 48  (x 2)  =      8,880
    24 -> 40,  e 72,  k 5: 1,728 + 144 + 1,800 + 144 + 2,880 + 80       =      6,776
    40 -> 40,  e 120, k 5: 4,800 + 240 + 3,000 + 240 + 4,800 + 80 (x 2) =     26,320
    40 -> 80,  e 240, k 5: 9,600 + 480 + 6,000 + 480 + 19,200 + 160     =     35,920
    80 -> 80,  e 480, k 5: 38,400 + 960 + 12,000 + 960 + 38,400 + 160 (x 2) = 181,760
    80 -> 96,  e 480, k 3: 38,400 + 960 + 4,320 + 960 + 46,080 + 192    =     90,912
    96 -> 96,  e 576, k 3: 55,296 + 1,152 + 5,184 + 1,152 + 55,296 + 192 =    118,272
    96 -> 192, e 576, k 5: 55,296 + 1,152 + 14,400 + 1,152 + 110,592 + 384 =  182,976
   192 -> 192, e 1152, k 5: 221,184 + 2,304 + 28,800 + 2,304 + 221,184 + 384 (x 3) = 1,428,480
   192 -> 320, e 1152, k 3: 221,184 + 2,304 + 10,368 + 2,304 + 368,640 + 640 =      605,440
  head conv 320*1280 + 2*1280                                           =    412,160
  classifier 1280*1000 + 1000                                           =  1,281,000
  total                                                                 =  4,383,312
Multiply-adds per image: 313,135,872 in convolutions (the test derives them) + 1,280,000 in the linear =
314,415,872 (torchvision lists 0.31 GFLOPS, multiply-adds).

Part of the ninth blind held-out set of docs/accuracy.md: written after the roofline predictor was tuned and
never used to check it.
"""

import torch
from _blocks import Residual
from torch import nn

# (input, output, kernel, stride of the first block, expansion, repeats): torchvision's mnasnet1_0 depths
STACKS = ((16, 24, 3, 2, 3, 3), (24, 40, 5, 2, 3, 3), (40, 80, 5, 2, 6, 3), (80, 96, 3, 1, 6, 2),
          (96, 192, 5, 2, 6, 4), (192, 320, 3, 1, 6, 1))
LAST_CHANNELS = 1280


def conv_bn(in_channels: int, out_channels: int, kernel: int, stride: int = 1, groups: int = 1,
            relu: bool = True) -> list[nn.Module]:
    layers = [nn.Conv2d(in_channels, out_channels, kernel, stride=stride, padding=kernel // 2, groups=groups,
                        bias=False), nn.BatchNorm2d(out_channels)]
    return layers + [nn.ReLU(inplace=True)] if relu else layers


class InvertedResidual(Residual):
    def __init__(self, in_channels: int, out_channels: int, kernel: int, stride: int, expansion: int):
        mid = in_channels * expansion
        super().__init__(nn.Sequential(*conv_bn(in_channels, mid, 1), *conv_bn(mid, mid, kernel, stride, groups=mid),
                                       *conv_bn(mid, out_channels, 1, relu=False)),
                         stride == 1 and in_channels == out_channels)


class MnasNet(nn.Module):
    def __init__(self, num_classes: int = 1000):
        super().__init__()
        layers = [*conv_bn(3, 32, 3, stride=2), *conv_bn(32, 32, 3, groups=32), *conv_bn(32, 16, 1, relu=False)]
        for cin, cout, kernel, stride, expansion, repeats in STACKS:
            layers.append(InvertedResidual(cin, cout, kernel, stride, expansion))
            layers += [InvertedResidual(cout, cout, kernel, 1, expansion) for _ in range(repeats - 1)]
        layers += conv_bn(STACKS[-1][1], LAST_CHANNELS, 1)
        self.layers = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Dropout(p=0.2, inplace=True), nn.Linear(LAST_CHANNELS, num_classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.layers(x).mean([2, 3]))


def build_model() -> nn.Module:
    return MnasNet().eval()


def example_inputs(batch_size: int) -> torch.Tensor:
    return torch.randn(batch_size, 3, 224, 224)
