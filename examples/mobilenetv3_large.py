"""MobileNetV3-Large (Howard et al. 2019, "Searching for MobileNetV3"), 224x224 RGB, 1000 classes: 5,483,032
parameters (torchvision ``mobilenet_v3_large``), 0.22 GMACs.

Plain torch, written from the paper's Table 1 and torchvision's layout (no weights are loaded). Every
convolution is Conv2d without bias + BatchNorm (eps 0.001), with the block's activation unless said otherwise
(RE = ReLU, HS = hardswish); padding k // 2.
- stem: Conv3x3 3 -> 16 stride 2 (224 -> 112), hardswish.
- 15 inverted-residual blocks (input, kernel, expanded, output, SE, activation, stride):
    16 3  16  16 -  RE 1   112x112        80 3 200  80 -  HS 1   14x14
    16 3  64  24 -  RE 2    56x56         80 3 184  80 -  HS 1   14x14
    24 3  72  24 -  RE 1    56x56         80 3 184  80 -  HS 1   14x14
    24 5  72  40 SE RE 2    28x28         80 3 480 112 SE HS 1   14x14
    40 5 120  40 SE RE 1    28x28        112 3 672 112 SE HS 1   14x14
    40 5 120  40 SE RE 1    28x28        112 5 672 160 SE HS 2    7x7
    40 3 240  80 -  HS 2    14x14        160 5 960 160 SE HS 1    7x7
                                         160 5 960 160 SE HS 1    7x7
  A block (cin, kernel k, expanded e, cout): Conv1x1 cin -> e (left out when e == cin, the first block);
  depthwise Convkxk e -> e with the stride; squeeze-and-excitation when marked, of width
  s = make_divisible(e / 4, 8) (24, 32, 32, 120, 168, 168, 240, 240): global average pooling, Conv1x1 e -> s
  with bias, ReLU, Conv1x1 s -> e with bias, hardsigmoid, channel-wise scale; Conv1x1 e -> cout without
  activation; a residual add when stride 1 and cin == cout.
- head: Conv1x1 160 -> 960, BatchNorm, hardswish; global average pooling; Linear 960 -> 1280, hardswish,
  dropout 0.2 (nothing in inference), Linear 1280 -> 1000.

Parameter count, derived (BatchNorm: 2 per channel; its running statistics are buffers):
  stem 3*16*9 + 2*16                                                        =       464
  block(cin, k, e, s, cout) = [cin*e + 2e] + (e*k*k + 2e) + [e*s + s + s*e + e] + (e*cout + 2*cout)
    16 3  16   -  16   176 + 288                                          =        464
    16 3  64   -  24   1,152 + 704 + 1,584                                =      3,440
    24 3  72   -  24   1,872 + 792 + 1,776                                =      4,440
    24 5  72  24  40   1,872 + 1,944 + 3,552 + 2,960                      =     10,328
    40 5 120  32  40   5,040 + 3,240 + 7,832 + 4,880  (x 2)               =     41,984
    40 3 240   -  80   10,080 + 2,640 + 19,360                            =     32,080
    80 3 200   -  80   16,400 + 2,200 + 16,160                            =     34,760
    80 3 184   -  80   15,088 + 2,024 + 14,880  (x 2)                     =     63,984
    80 3 480 120 112   39,360 + 5,280 + 115,800 + 53,984                  =    214,424
   112 3 672 168 112   76,608 + 7,392 + 226,632 + 75,488                  =    386,120
   112 5 672 168 160   76,608 + 18,144 + 226,632 + 107,840                =    429,224
   160 5 960 240 160   155,520 + 25,920 + 462,000 + 153,920  (x 2)        =  1,594,720
  head conv 160*960 + 2*960                                                 =   155,520
  classifier 960*1280 + 1280 + 1280*1000 + 1000                             = 2,511,080
  total                                                                     = 5,483,032
Multiply-adds per image at 224x224: 214,080,960 in convolutions (stem 5,419,008; the test derives the
blocks, the SE 1x1s counted once per image) + 2,508,800 in the two linears = 216,589,760 (torchvision lists
0.22 GFLOPS, multiply-adds).

Part of the eighth blind held-out set of docs/accuracy.md: written after the roofline predictor was tuned and
never used to check it.
"""

from functools import partial

import _blocks
import torch
import torch.nn.functional as F
from _blocks import conv_bn
from torch import nn

BN_EPS = 0.001
# (input, kernel, expanded, output, squeeze-and-excitation, hardswish, stride)
BLOCKS = ((16, 3, 16, 16, False, False, 1), (16, 3, 64, 24, False, False, 2), (24, 3, 72, 24, False, False, 1),
          (24, 5, 72, 40, True, False, 2), (40, 5, 120, 40, True, False, 1), (40, 5, 120, 40, True, False, 1),
          (40, 3, 240, 80, False, True, 2), (80, 3, 200, 80, False, True, 1), (80, 3, 184, 80, False, True, 1),
          (80, 3, 184, 80, False, True, 1), (80, 3, 480, 112, True, True, 1), (112, 3, 672, 112, True, True, 1),
          (112, 5, 672, 160, True, True, 2), (160, 5, 960, 160, True, True, 1), (160, 5, 960, 160, True, True, 1))
LAST_CONV, LAST_CHANNELS = 960, 1280


def make_divisible(value: float, divisor: int = 8) -> int:
    """torchvision's ``_make_divisible``: round to a multiple of 8, never more than 10% down."""
    new = max(divisor, int(value + divisor / 2) // divisor * divisor)
    return new + divisor if new < 0.9 * value else new


def ConvBNAct(in_channels: int, out_channels: int, kernel: int, stride: int = 1, groups: int = 1,
              act: type[nn.Module] | None = nn.ReLU) -> nn.Sequential:
    return conv_bn(in_channels, out_channels, kernel, stride, groups, eps=BN_EPS, act=act)


def SqueezeExcitation(channels: int, squeeze: int) -> _blocks.SqueezeExcitation:
    return _blocks.SqueezeExcitation(channels, squeeze, act=partial(F.relu, inplace=True),
                                     gate=partial(F.hardsigmoid, inplace=True))


class InvertedResidual(_blocks.Residual):
    def __init__(self, in_channels: int, kernel: int, expanded: int, out_channels: int, se: bool,
                 hardswish: bool, stride: int):
        act = nn.Hardswish if hardswish else nn.ReLU
        layers = [] if expanded == in_channels else [ConvBNAct(in_channels, expanded, 1, act=act)]
        layers.append(ConvBNAct(expanded, expanded, kernel, stride, groups=expanded, act=act))
        if se:
            layers.append(SqueezeExcitation(expanded, make_divisible(expanded / 4)))
        layers.append(ConvBNAct(expanded, out_channels, 1, act=None))
        super().__init__(nn.Sequential(*layers), stride == 1 and in_channels == out_channels)


class MobileNetV3Large(_blocks.AdaptivePoolClassifier):
    def __init__(self, num_classes: int = 1000):
        layers = [ConvBNAct(3, BLOCKS[0][0], 3, stride=2, act=nn.Hardswish)]
        layers += [InvertedResidual(*cfg) for cfg in BLOCKS]
        layers.append(ConvBNAct(BLOCKS[-1][3], LAST_CONV, 1, act=nn.Hardswish))
        super().__init__(nn.Sequential(*layers),
                         nn.Sequential(nn.Linear(LAST_CONV, LAST_CHANNELS), nn.Hardswish(inplace=True),
                                       nn.Dropout(p=0.2, inplace=True), nn.Linear(LAST_CHANNELS, num_classes)))


def build_model() -> nn.Module:
    return MobileNetV3Large().eval()


def example_inputs(batch_size: int) -> torch.Tensor:
    return torch.randn(batch_size, 3, 224, 224)
