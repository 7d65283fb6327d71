"""U-Net (Ronneberger et al. 2015, "U-Net: Convolutional Networks for Biomedical Image Segmentation") in its
original layout with padded convolutions and BatchNorm, transposed-convolution upsampling: 1 x 256 x 256
input (grey-scale), 2 classes, 31,036,546 parameters, 48.1 GMACs.

Plain torch, written from the paper's Figure 1 (no weights are loaded). Changes from the paper, as in the
common modern implementations: padding=1 on every 3x3 convolution (so the output keeps the input size and no
cropping is needed) and a BatchNorm after every 3x3 convolution (which then has no bias).
- a double conv (cin -> cout): Conv3x3 cin -> cout, BN, ReLU, Conv3x3 cout -> cout, BN, ReLU.
- contracting path: double conv 1 -> 64 on 256x256; then 4 times max pool 2x2 and a double conv doubling the
  width: 128 on 128x128, 256 on 64x64, 512 on 32x32, 1024 on 16x16.
- expanding path, 4 times: ConvTranspose2d(c, c/2, kernel 2, stride 2, with bias) doubling the size,
  concatenated (skip first) with the contracting path's output of the same size (c/2 channels) to c channels,
  then a double conv c -> c/2: 1024 -> 512 on 32x32, 512 -> 256 on 64x64, 256 -> 128 on 128x128,
  128 -> 64 on 256x256.
- Conv1x1 64 -> 2 with bias: per-pixel logits (batch, 2, 256, 256).

Parameter count, derived (double conv(a, b) = a*b*9 + 2b + b*b*9 + 2b; BatchNorm running stats are buffers):
  double conv 1 -> 64            576 + 128 + 36,864 + 128               =     37,696
  double conv 64 -> 128          73,728 + 256 + 147,456 + 256           =    221,696
  double conv 128 -> 256         294,912 + 512 + 589,824 + 512          =    885,760
  double conv 256 -> 512         1,179,648 + 1,024 + 2,359,296 + 1,024  =  3,540,992
  double conv 512 -> 1024        4,718,592 + 2,048 + 9,437,184 + 2,048  = 14,159,872
  up 1024 -> 512: transposed 1024*512*4 + 512 = 2,097,664; double conv 1024 -> 512
                                 4,718,592 + 1,024 + 2,359,296 + 1,024 = 7,079,936  ->  9,177,600
  up 512 -> 256: transposed 524,544; double conv 1,770,496                          ->  2,295,040
  up 256 -> 128: transposed 131,200; double conv 442,880                            ->    574,080
  up 128 -> 64: transposed 32,832; double conv 110,848                              ->    143,680
  output 1x1 64*2 + 2                                                   =        130
  total                                                                 = 31,036,546
Multiply-adds per image (all convolutions; a 2x2 stride-2 transposed conv c -> c/2 on an h x h input does
h*h*c*(c/2)*4 = (2h)^2 * c * c/2, one per weight per output pixel):
  contracting  256^2*(1*64 + 64*64)*9 + 128^2*(64*128 + 128^2)*9 + 64^2*(128*256 + 256^2)*9
               + 32^2*(256*512 + 512^2)*9 + 16^2*(512*1024 + 1024^2)*9                = 16,949,182,464
  transposed   (32^2*1024*512 + 64^2*512*256 + 128^2*256*128 + 256^2*128*64)          =  2,147,483,648
  expanding    32^2*(1024*512 + 512^2)*9 + 64^2*(512*256 + 256^2)*9
               + 128^2*(256*128 + 128^2)*9 + 256^2*(128*64 + 64^2)*9                  = 28,991,029,248
  output       256^2*64*2                                                             =      8,388,608
  total                                                                               = 48,096,083,968

Part of the ninth blind held-out set of docs/accuracy.md: written after the roofline predictor was tuned and
never used to check it.
"""

import torch
from _blocks import UNet
from torch import nn

WIDTHS = (64, 128, 256, 512, 1024)
IN_CHANNELS, CLASSES, SIZE = 1, 2, 256


def build_model() -> nn.Module:
    return UNet(IN_CHANNELS, CLASSES, WIDTHS).eval()


def example_inputs(batch_size: int) -> torch.Tensor:
    return torch.randn(batch_size, IN_CHANNELS, SIZE, SIZE)
