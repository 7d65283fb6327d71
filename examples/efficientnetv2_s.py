"""EfficientNetV2-S (Tan & Le 2021, "EfficientNetV2: Smaller Models and Faster Training"), 384x384 RGB (its
evaluation size), 1000 classes: 21,458,488 parameters (torchvision ``efficientnet_v2_s``), 8.37 GMACs.

Plain torch, written from the paper's Table 4 and torchvision's layout (no weights are loaded). Every
convolution is Conv2d without bias + BatchNorm (eps 0.001), with SiLU unless said otherwise; padding k // 2.
- stem: Conv3x3 3 -> 24 stride 2 (384 -> 192).
- six stages (block, expansion, stride, in -> out channels, layers), the first block of a stage carrying its
  stride and the channel change, a residual add when stride 1 and in == out (stochastic depth does nothing in
  inference):
    Fused-MBConv 1, stride 1, 24 -> 24,   2 layers   192x192
    Fused-MBConv 4, stride 2, 24 -> 48,   4 layers    96x96
    Fused-MBConv 4, stride 2, 48 -> 64,   4 layers    48x48
    MBConv 4 + SE,  stride 2, 64 -> 128,  6 layers    24x24
    MBConv 6 + SE,  stride 1, 128 -> 160, 9 layers    24x24
    MBConv 6 + SE,  stride 2, 160 -> 256, 15 layers   12x12
- Fused-MBConv (cin -> cout, expansion t): Conv3x3 cin -> t*cin with the stride, then Conv1x1 t*cin -> cout
  without activation; with t = 1 a single Conv3x3 cin -> cout (with SiLU).
- MBConv (cin -> cout, expansion t, e = t*cin): Conv1x1 cin -> e; depthwise Conv3x3 e -> e with the stride;
  squeeze-and-excitation of width s = cin // 4 (from the block's *input* channels): global average pooling,
  Conv1x1 e -> s with bias, SiLU, Conv1x1 s -> e with bias, sigmoid, channel-wise scale; Conv1x1 e -> cout
  without activation.
- head: Conv1x1 256 -> 1280, BatchNorm, SiLU; global average pooling; dropout (nothing in inference);
  Linear 1280 -> 1000.

Parameter count, derived (BatchNorm: 2 per channel; its running statistics are buffers):
  stem 3*24*9 + 2*24                                                       =        696
  stage 1  2 x (24*24*9 + 48)                                              =     10,464
  stage 2  first 24*96*9 + 192 + 96*48 + 96 = 25,632; 3 x (48*192*9 + 384 + 192*48 + 96) = 92,640 each
                                                                           =    303,552
  stage 3  first 48*192*9 + 384 + 192*64 + 128 = 95,744; 3 x (64*256*9 + 512 + 256*64 + 128) = 164,480
                                                                           =    589,184
  MBConv(cin, e, s, cout) = cin*e + 2e + 9e + 2e + (e*s + s + s*e + e) + e*cout + 2*cout
  stage 4  first (64, 256, 16, 128) 61,200 + 5 x (128, 512, 32, 128) 171,296 =    917,680
  stage 5  first (128, 768, 32, 160) 281,440 + 8 x (160, 960, 40, 160) 397,800 = 3,463,840
  stage 6  first (160, 960, 40, 256) 490,152 + 14 x (256, 1536, 64, 256) 1,005,120 = 14,561,832
  head conv 256*1280 + 2*1280                                              =    330,240
  classifier 1280*1000 + 1000                                              =  1,281,000
  total                                                                    = 21,458,488
Multiply-adds per image at 384x384, by stage (the test derives them): stem 23,887,872; 382,205,952;
2,781,609,984; 1,351,876,608; 448,880,640; 1,587,437,568; 1,741,252,608; head 47,185,920 + 1,280,000:
8,365,617,152 in all (torchvision lists 8.37 GFLOPS).

Part of the seventh blind held-out set of docs/accuracy.md: written after the roofline predictor was tuned and
never used to check it.
"""

import _blocks
import torch
import torch.nn.functional as F
from _blocks import conv_bn
from torch import nn

BN_EPS = 0.001
# (fused, expansion, stride, in channels, out channels, layers)
STAGES = ((True, 1, 1, 24, 24, 2), (True, 4, 2, 24, 48, 4), (True, 4, 2, 48, 64, 4),
          (False, 4, 2, 64, 128, 6), (False, 6, 1, 128, 160, 9), (False, 6, 2, 160, 256, 15))
LAST_CHANNELS = 1280


def ConvBNAct(in_channels: int, out_channels: int, kernel: int, stride: int = 1, groups: int = 1,
              act: bool = True) -> nn.Sequential:
    return conv_bn(in_channels, out_channels, kernel, stride, groups, eps=BN_EPS, act=nn.SiLU if act else None)


def SqueezeExcitation(channels: int, squeeze: int) -> _blocks.SqueezeExcitation:
    return _blocks.SqueezeExcitation(channels, squeeze, act=F.silu, gate=torch.sigmoid)


class FusedMBConv(_blocks.Residual):
    def __init__(self, in_channels: int, out_channels: int, expansion: int, stride: int):
        expanded = in_channels * expansion
        if expansion == 1:
            block = ConvBNAct(in_channels, out_channels, 3, stride)
        else:
            block = nn.Sequential(ConvBNAct(in_channels, expanded, 3, stride),
                                  ConvBNAct(expanded, out_channels, 1, act=False))
        super().__init__(block, stride == 1 and in_channels == out_channels)


class MBConv(_blocks.Residual):
    def __init__(self, in_channels: int, out_channels: int, expansion: int, stride: int):
        expanded = in_channels * expansion
        super().__init__(nn.Sequential(ConvBNAct(in_channels, expanded, 1),
                                       ConvBNAct(expanded, expanded, 3, stride, groups=expanded),
                                       SqueezeExcitation(expanded, max(1, in_channels // 4)),
                                       ConvBNAct(expanded, out_channels, 1, act=False)),
                         stride == 1 and in_channels == out_channels)


class EfficientNetV2S(_blocks.AdaptivePoolClassifier):
    def __init__(self, num_classes: int = 1000):
        blocks = [ConvBNAct(3, STAGES[0][3], 3, stride=2)]
        for fused, expansion, stride, in_channels, out_channels, layers in STAGES:
            block = FusedMBConv if fused else MBConv
            for i in range(layers):
                blocks.append(block(in_channels if i == 0 else out_channels, out_channels, expansion,
                                    stride if i == 0 else 1))
        blocks.append(ConvBNAct(STAGES[-1][4], LAST_CHANNELS, 1))
        super().__init__(nn.Sequential(*blocks), nn.Linear(LAST_CHANNELS, num_classes))


def build_model() -> nn.Module:
    return EfficientNetV2S().eval()


def example_inputs(batch_size: int) -> torch.Tensor:
    return torch.randn(batch_size, 3, 384, 384)
