"""U-Net for segmentation (Ronneberger et al., 2015), with batch norm and padded convolutions.

Widths 64-128-256-512-1024, input 3x256x256, 2 output classes: about 31.0M parameters (the common
"UNet with BN" implementation). Plain torch, random weights. Used as a held-out family in docs/accuracy.md.
"""

import torch
from _blocks import UNet
from torch import nn


def build_model() -> nn.Module:
    return UNet(3, 2, (64, 128, 256, 512, 1024))


def example_inputs(batch_size: int):
    return torch.randn(batch_size, 3, 256, 256)
