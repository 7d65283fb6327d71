"""ConvNeXt-T (Liu et al. 2022, "A ConvNet for the 2020s"), 224x224 RGB, 1000 classes: 28.6M parameters.

Plain torch, written from the paper and torchvision's layout (no weights are loaded): a 4x4 stride-4 stem,
four stages of (3, 3, 9, 3) blocks at widths (96, 192, 384, 768) with 2x2 stride-2 downsampling between
them, each block a depthwise 7x7 convolution, LayerNorm over channels, an inverted bottleneck of two
linear layers (4x wider, GELU between) and a learned per-channel layer scale on the residual branch.

This is the held-out family of docs/accuracy.md: it was written and measured after the roofline predictor
had been tuned, and nothing in the predictor was changed for it.
"""

import torch
import torch.nn.functional as F
from torch import nn

DEPTHS = (3, 3, 9, 3)
WIDTHS = (96, 192, 384, 768)


class LayerNorm2d(nn.LayerNorm):
    """LayerNorm over the channels of an NCHW tensor."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.permute(0, 2, 3, 1)
        x = F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
        return x.permute(0, 3, 1, 2)


class Block(nn.Module):
    def __init__(self, dim: int, layer_scale: float = 1e-6):
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, kernel_size=7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.pwconv1 = nn.Linear(dim, 4 * dim)
        self.act = nn.GELU()
        self.pwconv2 = nn.Linear(4 * dim, dim)
        self.gamma = nn.Parameter(torch.full((dim,), layer_scale))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.dwconv(x).permute(0, 2, 3, 1)        # NHWC for the channel-wise LayerNorm and linears
        y = self.pwconv2(self.act(self.pwconv1(self.norm(y))))
        return x + (self.gamma * y).permute(0, 3, 1, 2)


class ConvNeXt(nn.Module):
    def __init__(self, depths=DEPTHS, widths=WIDTHS, num_classes: int = 1000):
        super().__init__()
        layers: list[nn.Module] = [nn.Conv2d(3, widths[0], kernel_size=4, stride=4),
                                   LayerNorm2d(widths[0], eps=1e-6)]
        for i, (depth, width) in enumerate(zip(depths, widths, strict=True)):
            if i > 0:
                layers += [LayerNorm2d(widths[i - 1], eps=1e-6),
                           nn.Conv2d(widths[i - 1], width, kernel_size=2, stride=2)]
            layers += [Block(width) for _ in range(depth)]
        self.features = nn.Sequential(*layers)
        self.norm = nn.LayerNorm(widths[-1], eps=1e-6)
        self.head = nn.Linear(widths[-1], num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.features(x).mean(dim=(2, 3))         # global average pool
        return self.head(self.norm(x))


def build_model() -> nn.Module:
    return ConvNeXt()


def example_inputs(batch_size: int) -> torch.Tensor:
    return torch.randn(batch_size, 3, 224, 224)
