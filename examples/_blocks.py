"""Building blocks several example model files share (not a model file: it defines no ``build_model``).

A model file imports what it needs (``from _blocks import conv_bn``); ``tops-advisor count`` puts the model
file's folder on ``sys.path`` while it loads and runs it, so the import works from any working directory.
Each block is written as the model files wrote it before it moved here, so their counted work is unchanged.
"""

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn


def conv_bn(in_channels: int, out_channels: int, kernel: int, stride: int = 1, groups: int = 1,
            dilation: int = 1, eps: float = 1e-5, act: type[nn.Module] | None = None) -> nn.Sequential:
    """Conv2d ("same" padding, no bias) -> BatchNorm2d [-> ``act(inplace=True)``]."""
    layers = [nn.Conv2d(in_channels, out_channels, kernel, stride=stride, padding=dilation * (kernel // 2),
                        dilation=dilation, groups=groups, bias=False),
              nn.BatchNorm2d(out_channels, eps=eps)]
    if act is not None:
        layers.append(act(inplace=True))
    return nn.Sequential(*layers)


def split_heads(x: torch.Tensor, heads: int, head_dim: int) -> torch.Tensor:
    """(batch, sequence, heads * head_dim) -> (batch, heads, sequence, head_dim), a view."""
    b, s, _ = x.shape
    return x.view(b, s, heads, head_dim).transpose(1, 2)


class GeluMlp(nn.Module):
    """``fc1`` -> GELU -> ``fc2``: the transformer feed-forward (BART, MLP-Mixer)."""

    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.gelu(self.fc1(x)))


class PostNormEncoderLayer(nn.Module):
    """A post-LN transformer encoder layer (BERT, DistilBERT, wav2vec 2.0 base): q/k/v and output projections
    with bias around ``F.scaled_dot_product_attention`` (``attn_mask``, where given, passed to it), then a
    GELU feed-forward; a residual add and a LayerNorm after each of the two."""

    def __init__(self, hidden: int, heads: int, ffn: int, eps: float = 1e-5):
        super().__init__()
        self.heads = heads
        self.query, self.key, self.value = (nn.Linear(hidden, hidden) for _ in range(3))
        self.attn_out = nn.Linear(hidden, hidden)
        self.attn_norm = nn.LayerNorm(hidden, eps=eps)
        self.intermediate = nn.Linear(hidden, ffn)
        self.output = nn.Linear(ffn, hidden)
        self.out_norm = nn.LayerNorm(hidden, eps=eps)

    def forward(self, x: torch.Tensor, attn_mask: torch.Tensor | None = None) -> torch.Tensor:
        b, s, hidden = x.shape

        def heads(t: torch.Tensor) -> torch.Tensor:
            return t.view(b, s, self.heads, hidden // self.heads).transpose(1, 2)

        ctx = F.scaled_dot_product_attention(heads(self.query(x)), heads(self.key(x)), heads(self.value(x)),
                                             attn_mask=attn_mask)
        x = self.attn_norm(x + self.attn_out(ctx.transpose(1, 2).reshape(b, s, hidden)))
        return self.out_norm(x + self.output(F.gelu(self.intermediate(x))))


class MeanPoolClassifier(nn.Module):
    """An image classifier's last steps: ``features``, a global average pool as a mean over height and width,
    and ``classifier``. A subclass builds both and passes them to ``__init__``."""

    def __init__(self, features: nn.Module, classifier: nn.Module):
        super().__init__()
        self.features = features
        self.classifier = classifier

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.features(x).mean(dim=(2, 3))                  # global average pool
        return self.classifier(x)


class AdaptivePoolClassifier(MeanPoolClassifier):
    """The same with the pool as torchvision writes it: ``adaptive_avg_pool2d`` to 1x1, then a flatten."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.adaptive_avg_pool2d(self.features(x), 1)
        return self.classifier(torch.flatten(x, 1))


class ResNetBottleneck(nn.Module):
    """torchvision's ResNet bottleneck (v1.5, stride on the 3x3): 1x1 -> 3x3 (``groups``) -> 1x1, BatchNorm after
    each, ReLU after the first two and after the residual add; a projection shortcut where the shape changes."""

    def __init__(self, in_channels: int, width: int, out_channels: int, stride: int = 1, groups: int = 1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride=stride, padding=1, groups=groups, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, out_channels, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(out_channels)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = None
        if stride != 1 or in_channels != out_channels:
            self.downsample = nn.Sequential(
                nn.Conv2d(in_channels, out_channels, 1, stride=stride, bias=False), nn.BatchNorm2d(out_channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + identity)


class ResNetLayers(nn.Module):
    """Base of the ResNet and ResNeXt classifiers: the stem (7x7 stride-2 conv, BatchNorm, ReLU, 3x3 stride-2
    max pooling) and four stages of ``ResNetBottleneck`` as ``conv1, bn1, relu, maxpool, layer1..layer4``; the
    subclass adds its head and ``forward``. A stage of ``planes`` p has 3x3 width p * width_per_group / 64 *
    groups and 4p output channels, its first block strided from the second stage on."""

    def __init__(self, layers: tuple[int, ...], groups: int = 1, width_per_group: int = 64):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        in_channels, stages = 64, []
        for i, (blocks, planes) in enumerate(zip(layers, (64, 128, 256, 512), strict=True)):
            stage = []
            for b in range(blocks):
                stage.append(ResNetBottleneck(in_channels, planes * width_per_group // 64 * groups, planes * 4,
                                              stride=2 if (b == 0 and i > 0) else 1, groups=groups))
                in_channels = planes * 4
            stages.append(nn.Sequential(*stage))
        self.layer1, self.layer2, self.layer3, self.layer4 = stages
        self.out_channels = in_channels


class ConvBNBottleneck(nn.Module):
    """The same bottleneck (4x expansion) built from ``conv_bn`` units with functional ReLUs, and an optional
    dilation on the 3x3 (DeepLabV3's dilated ResNet-50)."""

    def __init__(self, in_channels: int, width: int, stride: int, dilation: int = 1):
        super().__init__()
        out_channels = 4 * width
        self.conv1 = conv_bn(in_channels, width, 1)
        self.conv2 = conv_bn(width, width, 3, stride=stride, dilation=dilation)
        self.conv3 = conv_bn(width, out_channels, 1)
        self.downsample = conv_bn(in_channels, out_channels, 1, stride=stride) \
            if stride != 1 or in_channels != out_channels else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.conv1(x), inplace=True)
        y = F.relu(self.conv2(y), inplace=True)
        y = self.conv3(y)
        shortcut = x if self.downsample is None else self.downsample(x)
        return F.relu(shortcut + y, inplace=True)


class Residual(nn.Module):
    """``block``, with an identity shortcut added where ``residual`` (stride 1 and as many channels out as in):
    the inverted-residual and MBConv blocks of the mobile networks."""

    def __init__(self, block: nn.Module, residual: bool):
        super().__init__()
        self.residual = residual
        self.block = block

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.block(x)
        return x + y if self.residual else y


class SqueezeExcitation(nn.Module):
    """Global average pool -> 1x1 conv -> ``act`` -> 1x1 conv -> ``gate``, which scales the input per channel.
    ``act`` and ``gate`` are torch functions (or ``functools.partial`` of one, for ``inplace=True``)."""

    def __init__(self, channels: int, squeeze: int, act: Callable = F.relu, gate: Callable = torch.sigmoid):
        super().__init__()
        self.fc1 = nn.Conv2d(channels, squeeze, 1)
        self.fc2 = nn.Conv2d(squeeze, channels, 1)
        self.act, self.gate = act, gate

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scale = F.adaptive_avg_pool2d(x, 1)
        scale = self.gate(self.fc2(self.act(self.fc1(scale))))
        return x * scale


class DoubleConv(nn.Sequential):
    """U-Net's unit: (3x3 conv, BatchNorm, ReLU) twice."""

    def __init__(self, in_channels: int, out_channels: int):
        super().__init__(
            nn.Conv2d(in_channels, out_channels, 3, padding=1, bias=False), nn.BatchNorm2d(out_channels),
            nn.ReLU(inplace=True),
            nn.Conv2d(out_channels, out_channels, 3, padding=1, bias=False), nn.BatchNorm2d(out_channels),
            nn.ReLU(inplace=True),
        )


class UNetUp(nn.Module):
    """2x2 stride-2 transposed convolution to half the channels, concatenated with the skip, then DoubleConv."""

    def __init__(self, in_channels: int, out_channels: int):
        super().__init__()
        self.up = nn.ConvTranspose2d(in_channels, in_channels // 2, kernel_size=2, stride=2)
        self.conv = DoubleConv(in_channels, out_channels)

    def forward(self, x: torch.Tensor, skip: torch.Tensor) -> torch.Tensor:
        return self.conv(torch.cat([skip, self.up(x)], dim=1))


class UNet(nn.Module):
    """U-Net (Ronneberger et al., 2015) with batch norm and padded convolutions: DoubleConv at each width,
    2x2 max pooling down, transposed convolutions up, a 1x1 convolution to the classes."""

    def __init__(self, in_channels: int, classes: int, widths: tuple[int, ...]):
        super().__init__()
        self.inc = DoubleConv(in_channels, widths[0])
        self.downs = nn.ModuleList(DoubleConv(a, b) for a, b in zip(widths[:-1], widths[1:], strict=True))
        self.pool = nn.MaxPool2d(2)
        self.ups = nn.ModuleList(UNetUp(b, a) for a, b in zip(reversed(widths[:-1]), reversed(widths[1:]),
                                                              strict=True))
        self.outc = nn.Conv2d(widths[0], classes, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        skips = [self.inc(x)]
        for down in self.downs:
            skips.append(down(self.pool(skips[-1])))
        x = skips.pop()
        for up in self.ups:
            x = up(x, skips.pop())
        return self.outc(x)
