"""Inception-v3 (Szegedy et al. 2016, "Rethinking the Inception Architecture for Computer Vision"), 299x299 RGB,
1000 classes, without the auxiliary classifier: 23,834,568 parameters (torchvision ``inception_v3`` with
``aux_logits=False``; 27,161,264 with the auxiliary head), 5.7 GMACs.

Plain torch, written from the paper and torchvision's layout (no weights are loaded; ``transform_input`` is
off, so the input goes to the first convolution as it is). Every convolution is a "BasicConv2d": Conv2d
without bias, BatchNorm (eps 0.001), ReLU. The stem is five convolutions (3x3 stride 2 to 32, 3x3 to 32,
3x3 padded to 64, max pool 3x3 stride 2, 1x1 to 80, 3x3 to 192, max pool 3x3 stride 2):
299 -> 149 -> 147 -> 147 -> 73 -> 73 -> 71 -> 35. Then, each block the channel concatenation of its branches:
- Mixed_5b/5c/5d (35x35, "A"): 1x1 64 | 1x1 48, 5x5 64 | 1x1 64, 3x3 96, 3x3 96 | 3x3 average pool (stride 1,
  padding 1), 1x1 to 32/64/64  ->  256, 288, 288 channels.
- Mixed_6a (to 17x17, "B"): 3x3 stride 2 384 | 1x1 64, 3x3 96, 3x3 stride 2 96 | 3x3 stride-2 max pool -> 768.
- Mixed_6b..6e (17x17, "C", c7 = 128, 160, 160, 192): 1x1 192 | 1x1 c7, 1x7 c7, 7x1 192 | 1x1 c7, 7x1 c7,
  1x7 c7, 7x1 c7, 1x7 192 | average pool, 1x1 192  ->  768: the asymmetric factorised 7x7 convolutions.
- Mixed_7a (to 8x8, "D"): 1x1 192, 3x3 stride 2 320 | 1x1 192, 1x7 192, 7x1 192, 3x3 stride 2 192 | max pool
  -> 1280.
- Mixed_7b/7c (8x8, "E"): 1x1 320 | 1x1 384, then 1x3 384 and 3x1 384 side by side | 1x1 448, 3x3 384, then
  1x3 384 and 3x1 384 side by side | average pool, 1x1 192  ->  2048.
Global average pooling and a linear classifier 2048 -> 1000 (the dropout before it does nothing in inference).

Parameter count, derived; a BasicConv2d cin -> cout with a kh x kw kernel has cin*cout*kh*kw + 2*cout
(BatchNorm: 2 per channel; its running statistics are buffers):
  stem 864+64 + 9,216+64 + 18,432+128 + 5,120+160 + 138,240+384          =    172,672
  A(cin, pool p)  cin*(64 + 48 + 64 + p) + 48*64*25 + 64*96*9 + 96*96*9 + 2*(64+48+64+64+96+96+p)
     Mixed_5b (192, 32) 255,904   Mixed_5c (256, 64) 277,472   Mixed_5d (288, 64) 285,152  =    818,528
  B(288)  288*384*9 + 288*64 + 64*96*9 + 96*96*9 + 2*(384+64+96+96)      =  1,153,280
  C(768, c7)  768*(192 + 2*c7 + 192) + c7*c7*7*4 + 2*c7*192*7 + 2*(4*192 + 6*c7)
     Mixed_6b (c7 128) 1,297,408   6c, 6d (160) 1,691,008 each   6e (192) 2,141,952   =  6,821,376
  D(768)  768*192*2 + 192*320*9 + 192*192*7*2 + 192*192*9 + 2*(192+320+192*4)          =  1,698,304
  E(cin)  cin*(320 + 384 + 448 + 192) + 384*384*3*4 + 448*384*9 + 2*(320+384*6+448+192)
     Mixed_7b (1280) 5,044,608   Mixed_7c (2048) 6,076,800                             = 11,121,408
  classifier 2048*1000 + 1000                                                          =  2,049,000
  total                                                                                = 23,834,568
The auxiliary classifier torchvision adds by default (1x1 768 -> 128 + BN, 5x5 128 -> 768 + BN,
Linear 768 -> 1000) is 98,560 + 2,459,136 + 769,000 = 3,326,696 more: 27,161,264.

Part of the blind held-out set of docs/accuracy.md: written after the roofline predictor was tuned and
never used to check it.
"""

import torch
import torch.nn.functional as F
from torch import nn


class BasicConv2d(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size, **kwargs):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, bias=False, **kwargs)
        self.bn = nn.BatchNorm2d(out_channels, eps=0.001)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(self.bn(self.conv(x)), inplace=True)


def _avg_pool(x: torch.Tensor) -> torch.Tensor:
    return F.avg_pool2d(x, kernel_size=3, stride=1, padding=1)


class InceptionA(nn.Module):
    def __init__(self, in_channels: int, pool_features: int):
        super().__init__()
        self.branch1x1 = BasicConv2d(in_channels, 64, 1)
        self.branch5x5_1 = BasicConv2d(in_channels, 48, 1)
        self.branch5x5_2 = BasicConv2d(48, 64, 5, padding=2)
        self.branch3x3dbl_1 = BasicConv2d(in_channels, 64, 1)
        self.branch3x3dbl_2 = BasicConv2d(64, 96, 3, padding=1)
        self.branch3x3dbl_3 = BasicConv2d(96, 96, 3, padding=1)
        self.branch_pool = BasicConv2d(in_channels, pool_features, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        branch5x5 = self.branch5x5_2(self.branch5x5_1(x))
        branch3x3dbl = self.branch3x3dbl_3(self.branch3x3dbl_2(self.branch3x3dbl_1(x)))
        return torch.cat([self.branch1x1(x), branch5x5, branch3x3dbl, self.branch_pool(_avg_pool(x))], 1)


class InceptionB(nn.Module):
    def __init__(self, in_channels: int):
        super().__init__()
        self.branch3x3 = BasicConv2d(in_channels, 384, 3, stride=2)
        self.branch3x3dbl_1 = BasicConv2d(in_channels, 64, 1)
        self.branch3x3dbl_2 = BasicConv2d(64, 96, 3, padding=1)
        self.branch3x3dbl_3 = BasicConv2d(96, 96, 3, stride=2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        branch3x3dbl = self.branch3x3dbl_3(self.branch3x3dbl_2(self.branch3x3dbl_1(x)))
        return torch.cat([self.branch3x3(x), branch3x3dbl, F.max_pool2d(x, kernel_size=3, stride=2)], 1)


class InceptionC(nn.Module):
    def __init__(self, in_channels: int, channels_7x7: int):
        super().__init__()
        c7 = channels_7x7
        self.branch1x1 = BasicConv2d(in_channels, 192, 1)
        self.branch7x7_1 = BasicConv2d(in_channels, c7, 1)
        self.branch7x7_2 = BasicConv2d(c7, c7, (1, 7), padding=(0, 3))
        self.branch7x7_3 = BasicConv2d(c7, 192, (7, 1), padding=(3, 0))
        self.branch7x7dbl_1 = BasicConv2d(in_channels, c7, 1)
        self.branch7x7dbl_2 = BasicConv2d(c7, c7, (7, 1), padding=(3, 0))
        self.branch7x7dbl_3 = BasicConv2d(c7, c7, (1, 7), padding=(0, 3))
        self.branch7x7dbl_4 = BasicConv2d(c7, c7, (7, 1), padding=(3, 0))
        self.branch7x7dbl_5 = BasicConv2d(c7, 192, (1, 7), padding=(0, 3))
        self.branch_pool = BasicConv2d(in_channels, 192, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        branch7x7 = self.branch7x7_3(self.branch7x7_2(self.branch7x7_1(x)))
        branch7x7dbl = self.branch7x7dbl_1(x)
        for conv in (self.branch7x7dbl_2, self.branch7x7dbl_3, self.branch7x7dbl_4, self.branch7x7dbl_5):
            branch7x7dbl = conv(branch7x7dbl)
        return torch.cat([self.branch1x1(x), branch7x7, branch7x7dbl, self.branch_pool(_avg_pool(x))], 1)


class InceptionD(nn.Module):
    def __init__(self, in_channels: int):
        super().__init__()
        self.branch3x3_1 = BasicConv2d(in_channels, 192, 1)
        self.branch3x3_2 = BasicConv2d(192, 320, 3, stride=2)
        self.branch7x7x3_1 = BasicConv2d(in_channels, 192, 1)
        self.branch7x7x3_2 = BasicConv2d(192, 192, (1, 7), padding=(0, 3))
        self.branch7x7x3_3 = BasicConv2d(192, 192, (7, 1), padding=(3, 0))
        self.branch7x7x3_4 = BasicConv2d(192, 192, 3, stride=2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        branch3x3 = self.branch3x3_2(self.branch3x3_1(x))
        branch7x7x3 = self.branch7x7x3_4(self.branch7x7x3_3(self.branch7x7x3_2(self.branch7x7x3_1(x))))
        return torch.cat([branch3x3, branch7x7x3, F.max_pool2d(x, kernel_size=3, stride=2)], 1)


class InceptionE(nn.Module):
    def __init__(self, in_channels: int):
        super().__init__()
        self.branch1x1 = BasicConv2d(in_channels, 320, 1)
        self.branch3x3_1 = BasicConv2d(in_channels, 384, 1)
        self.branch3x3_2a = BasicConv2d(384, 384, (1, 3), padding=(0, 1))
        self.branch3x3_2b = BasicConv2d(384, 384, (3, 1), padding=(1, 0))
        self.branch3x3dbl_1 = BasicConv2d(in_channels, 448, 1)
        self.branch3x3dbl_2 = BasicConv2d(448, 384, 3, padding=1)
        self.branch3x3dbl_3a = BasicConv2d(384, 384, (1, 3), padding=(0, 1))
        self.branch3x3dbl_3b = BasicConv2d(384, 384, (3, 1), padding=(1, 0))
        self.branch_pool = BasicConv2d(in_channels, 192, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        branch3x3 = self.branch3x3_1(x)
        branch3x3 = torch.cat([self.branch3x3_2a(branch3x3), self.branch3x3_2b(branch3x3)], 1)
        branch3x3dbl = self.branch3x3dbl_2(self.branch3x3dbl_1(x))
        branch3x3dbl = torch.cat([self.branch3x3dbl_3a(branch3x3dbl), self.branch3x3dbl_3b(branch3x3dbl)], 1)
        return torch.cat([self.branch1x1(x), branch3x3, branch3x3dbl, self.branch_pool(_avg_pool(x))], 1)


class InceptionV3(nn.Module):
    def __init__(self, num_classes: int = 1000):
        super().__init__()
        self.Conv2d_1a_3x3 = BasicConv2d(3, 32, 3, stride=2)
        self.Conv2d_2a_3x3 = BasicConv2d(32, 32, 3)
        self.Conv2d_2b_3x3 = BasicConv2d(32, 64, 3, padding=1)
        self.Conv2d_3b_1x1 = BasicConv2d(64, 80, 1)
        self.Conv2d_4a_3x3 = BasicConv2d(80, 192, 3)
        self.Mixed_5b = InceptionA(192, pool_features=32)
        self.Mixed_5c = InceptionA(256, pool_features=64)
        self.Mixed_5d = InceptionA(288, pool_features=64)
        self.Mixed_6a = InceptionB(288)
        self.Mixed_6b = InceptionC(768, channels_7x7=128)
        self.Mixed_6c = InceptionC(768, channels_7x7=160)
        self.Mixed_6d = InceptionC(768, channels_7x7=160)
        self.Mixed_6e = InceptionC(768, channels_7x7=192)
        self.Mixed_7a = InceptionD(768)
        self.Mixed_7b = InceptionE(1280)
        self.Mixed_7c = InceptionE(2048)
        self.fc = nn.Linear(2048, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.Conv2d_2b_3x3(self.Conv2d_2a_3x3(self.Conv2d_1a_3x3(x)))       # 149 -> 147 -> 147
        x = F.max_pool2d(x, kernel_size=3, stride=2)                           # 73
        x = self.Conv2d_4a_3x3(self.Conv2d_3b_1x1(x))                          # 73 -> 71
        x = F.max_pool2d(x, kernel_size=3, stride=2)                           # 35
        x = self.Mixed_5d(self.Mixed_5c(self.Mixed_5b(x)))                     # 35x35x288
        x = self.Mixed_6a(x)                                                   # 17x17x768
        x = self.Mixed_6e(self.Mixed_6d(self.Mixed_6c(self.Mixed_6b(x))))
        x = self.Mixed_7c(self.Mixed_7b(self.Mixed_7a(x)))                     # 8x8x2048
        x = F.adaptive_avg_pool2d(x, (1, 1)).flatten(1)
        return self.fc(x)


def build_model() -> nn.Module:
    return InceptionV3().eval()


def example_inputs(batch_size: int) -> torch.Tensor:
    return torch.randn(batch_size, 3, 299, 299)
