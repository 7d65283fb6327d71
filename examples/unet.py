"""U-Net for segmentation (Ronneberger et al., 2015), with batch norm and padded convolutions.

Widths 64-128-256-512-1024, input 3x256x256, 2 output classes: about 31.0M parameters (the common
"UNet with BN" implementation). Plain torch, random weights. Used as a held-out family in docs/accuracy.md.
"""

import torch
from torch import nn


class DoubleConv(nn.Sequential):
    def __init__(self, cin: int, cout: int):
        super().__init__(
            nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
            nn.Conv2d(cout, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
        )


class Up(nn.Module):
    def __init__(self, cin: int, cout: int):
        super().__init__()
        self.up = nn.ConvTranspose2d(cin, cin // 2, kernel_size=2, stride=2)
        self.conv = DoubleConv(cin, cout)

    def forward(self, x, skip):
        return self.conv(torch.cat([skip, self.up(x)], dim=1))


class UNet(nn.Module):
    def __init__(self, in_channels: int = 3, classes: int = 2, widths=(64, 128, 256, 512, 1024)):
        super().__init__()
        self.inc = DoubleConv(in_channels, widths[0])
        self.downs = nn.ModuleList(DoubleConv(a, b) for a, b in zip(widths[:-1], widths[1:], strict=True))
        self.pool = nn.MaxPool2d(2)
        self.ups = nn.ModuleList(Up(b, a) for a, b in zip(reversed(widths[:-1]), reversed(widths[1:]), strict=True))
        self.outc = nn.Conv2d(widths[0], classes, 1)

    def forward(self, x):
        skips = [self.inc(x)]
        for down in self.downs:
            skips.append(down(self.pool(skips[-1])))
        x = skips.pop()
        for up in self.ups:
            x = up(x, skips.pop())
        return self.outc(x)


def build_model() -> nn.Module:
    return UNet()


def example_inputs(batch_size: int):
    return torch.randn(batch_size, 3, 256, 256)
