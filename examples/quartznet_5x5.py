"""QuartzNet 5x5 (Kriman et al. 2020, "QuartzNet: Deep Automatic Speech Recognition with 1D Time-Channel
Separable Convolutions"), CTC acoustic model: 16 s of 64-bin mel features at a 10 ms hop, (batch, 64, 1600)
-> (batch, 29, 800) logits over 29 classes (28 characters + the CTC blank). 6,713,181 parameters (the paper's
Table 1 gives 6.7M for 5x5), 5.35 GMACs per 16 s utterance.

Plain torch, written from the paper's Table 1 and the layout of NeMo's ``JasperBlock`` / ``QuartzNet15x5``
configuration with 5 blocks instead of 15 (no weights are loaded). Every "sub-block" is a 1-D time-channel
separable convolution: a depthwise Conv1d (one group per channel, kernel K, "same" padding
dilation * (K - 1) / 2, no bias), a pointwise Conv1d 1x1 (no bias), BatchNorm1d (eps 0.001), ReLU; dropout
does nothing in inference and is left out.
- C1: one sub-block 64 -> 256, K 33, stride 2 on the depthwise convolution: 1600 -> 800 frames.
- B1..B5: 5 sub-blocks each (the first one changes the width), K 33, 39, 51, 63, 75 and 256, 256, 512, 512,
  512 channels. The block's residual is a pointwise Conv1d 1x1 (no bias) + BatchNorm1d of the block input,
  added after the BatchNorm of the fifth sub-block and before its ReLU.
- C2: one sub-block 512 -> 512, K 87, dilation 2 (padding 86).
- C3: an ordinary Conv1d 512 -> 1024, kernel 1 (no bias), BatchNorm1d, ReLU.
- C4: the CTC decoder, Conv1d 1024 -> 29, kernel 1, with bias (no activation: logits).

Parameter count, derived; a sub-block cin -> cout with kernel K has cin*K + cin*cout + 2*cout (BatchNorm: 2
per channel; its running statistics are buffers), a residual cin*cout + 2*cout:
  C1  64*33 + 64*256 + 2*256                                       =     19,008
  B1  (256*33 + 256*256 + 512) x 5 + 256*256 + 512                  =    438,528
  B2  (256*39 + 256*256 + 512) x 5 + 256*256 + 512                  =    446,208
  B3  256*51 + 256*512 + 1,024 + (512*51 + 512*512 + 1,024) x 4 + 256*512 + 1,024  =  1,434,368
  B4  (512*63 + 512*512 + 1,024) x 5 + 512*512 + 1,024              =  1,740,288
  B5  (512*75 + 512*512 + 1,024) x 5 + 512*512 + 1,024              =  1,771,008
  C2  512*87 + 512*512 + 1,024                                      =    307,712
  C3  512*1024 + 2*1024                                             =    526,336
  C4  1024*29 + 29                                                  =     29,725
  total                                                             =  6,713,181
The paper rounds this to 6.7M: no difference. (The same arithmetic for QuartzNet 15x5, each B block repeated
three times, gives 18,924,381: the paper's and NeMo's 18.9M.)

Part of the sixth blind held-out set of docs/accuracy.md: written after the roofline predictor was tuned and
never used to check it.
"""

import torch
import torch.nn.functional as F
from torch import nn

MELS, FRAMES, CLASSES = 64, 1600, 29
# (kernel, channels) of B1..B5; each block has REPEATS sub-blocks.
BLOCKS = ((33, 256), (39, 256), (51, 512), (63, 512), (75, 512))
REPEATS = 5


class SeparableConv(nn.Module):
    """Depthwise Conv1d + pointwise Conv1d + BatchNorm1d; the ReLU is applied by the caller."""

    def __init__(self, in_channels: int, out_channels: int, kernel: int, stride: int = 1, dilation: int = 1):
        super().__init__()
        self.depthwise = nn.Conv1d(in_channels, in_channels, kernel, stride=stride, dilation=dilation,
                                   padding=dilation * (kernel - 1) // 2, groups=in_channels, bias=False)
        self.pointwise = nn.Conv1d(in_channels, out_channels, 1, bias=False)
        self.bn = nn.BatchNorm1d(out_channels, eps=0.001)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.bn(self.pointwise(self.depthwise(x)))


class QuartzBlock(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel: int):
        super().__init__()
        self.sub_blocks = nn.ModuleList(
            SeparableConv(in_channels if i == 0 else out_channels, out_channels, kernel) for i in range(REPEATS))
        self.residual = nn.Conv1d(in_channels, out_channels, 1, bias=False)
        self.residual_bn = nn.BatchNorm1d(out_channels, eps=0.001)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x
        for sub in self.sub_blocks[:-1]:
            y = F.relu(sub(y))
        y = self.sub_blocks[-1](y) + self.residual_bn(self.residual(x))
        return F.relu(y)


class QuartzNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = SeparableConv(MELS, 256, 33, stride=2)
        blocks, channels = [], 256
        for kernel, out_channels in BLOCKS:
            blocks.append(QuartzBlock(channels, out_channels, kernel))
            channels = out_channels
        self.blocks = nn.Sequential(*blocks)
        self.c2 = SeparableConv(512, 512, 87, dilation=2)
        self.c3 = nn.Conv1d(512, 1024, 1, bias=False)
        self.c3_bn = nn.BatchNorm1d(1024, eps=0.001)
        self.c4 = nn.Conv1d(1024, CLASSES, 1)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.c1(features))                    # (batch, 256, 800)
        x = self.blocks(x)
        x = F.relu(self.c2(x))
        x = F.relu(self.c3_bn(self.c3(x)))
        return self.c4(x)                                # (batch, 29, 800)


def build_model() -> nn.Module:
    return QuartzNet().eval()


def example_inputs(batch_size: int) -> torch.Tensor:
    """16 s of random 64-bin mel features per item (batch, 64, 1600 frames)."""
    return torch.randn(batch_size, MELS, FRAMES)
