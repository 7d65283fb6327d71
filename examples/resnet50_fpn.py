"""A ResNet-50 backbone with a Feature Pyramid Network (Lin et al. 2017, "Feature Pyramid Networks for Object
Detection"; He et al. 2016 for ResNet), 800x800 RGB, the detection backbone of Faster / Mask R-CNN: the forward
returns the five 256-channel maps P2..P5 and "pool". 26,852,416 parameters, 88.4 GMACs.

Plain torch, written from the paper and torchvision's ``resnet_fpn_backbone('resnet50', weights=None,
trainable_layers=5)`` (no weights are loaded), with one change: torchvision's FrozenBatchNorm2d is an ordinary
BatchNorm2d (eps 1e-5) here, in eval mode, so it computes the same affine map per channel.
- backbone: ResNet-50 (v1.5, the stride on the 3x3) without its pooling and classifier. Every convolution has
  no bias and is followed by BatchNorm and ReLU unless said otherwise. Stem Conv7x7 3 -> 64 stride 2
  (800 -> 400), max pool 3x3 stride 2 (-> 200); layer1 (3 bottlenecks, width 64 -> 256 channels) at 200x200
  (C2); layer2 (4, width 128 -> 512) stride 2, 100x100 (C3); layer3 (6, width 256 -> 1024) 50x50 (C4); layer4
  (3, width 512 -> 2048) 25x25 (C5). A bottleneck (cin, width w, out 4w): Conv1x1 cin -> w, Conv3x3 w -> w,
  Conv1x1 w -> 4w + BatchNorm, residual add (projection Conv1x1 + BatchNorm on the first block of each layer),
  ReLU.
- FPN, 256 channels, convolutions with bias and no norm or activation: a lateral Conv1x1 on each of C2..C5;
  top-down from C5: inner = lateral(C5), then for C4, C3, C2 inner = lateral(Ci) + nearest upsampling of the
  previous inner to Ci's size (25 -> 50 -> 100 -> 200); an output Conv3x3 256 -> 256 on each inner gives
  P2..P5; the extra level "pool" = max_pool2d(P5, kernel 1, stride 2) (25 -> 13, torchvision's
  ``LastLevelMaxPool``).

Parameter count, derived (BatchNorm: 2 per channel; its running statistics are buffers):
  ResNet-50 without its classifier: 25,557,032 - (2048*1000 + 1000)             = 23,508,032
  FPN laterals (256 + 512 + 1024 + 2048)*256 + 4*256                           =    984,064
      outputs 4 x (256*256*9 + 256)                                            =  2,360,320
  total                                                                        = 26,852,416
torchvision's 26,799,296 is 53,120 fewer: FrozenBatchNorm2d keeps its weight and bias as buffers too, not
parameters, and the backbone has 64 + 1,408 + 3,584 + 10,240 + 11,264 = 26,560 BatchNorm channels
(2 x 26,560 = 53,120). Ordinary BatchNorm2d makes them parameters; nothing else changes.
Multiply-adds per image at 800x800, all convolutions: backbone 52,131,840,000 (the test derives it), FPN
laterals 200*200*256*256 + 100*100*512*256 + 50*50*1024*256 + 25*25*2048*256 = 4,915,200,000, outputs
(200*200 + 100*100 + 50*50 + 25*25) x 256*256*9 = 31,334,400,000: 88,381,440,000 in all (the FPN's 3x3
output on the 200x200 level alone is 23.6G).

Part of the eighth blind held-out set of docs/accuracy.md: written after the roofline predictor was tuned and
never used to check it.
"""

import torch
import torch.nn.functional as F
from _blocks import ConvBNBottleneck as Bottleneck
from _blocks import conv_bn as _conv_bn
from torch import nn

SIZE, FPN_CHANNELS = 800, 256
LAYERS = ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2))     # (width, blocks, stride)


class ResNet50Body(nn.Module):
    """The stem and layer1..layer4; returns C2, C3, C4, C5."""

    def __init__(self):
        super().__init__()
        self.stem = _conv_bn(3, 64, 7, stride=2)
        layers, channels = [], 64
        for width, depth, stride in LAYERS:
            blocks = []
            for i in range(depth):
                blocks.append(Bottleneck(channels, width, stride if i == 0 else 1))
                channels = 4 * width
            layers.append(nn.Sequential(*blocks))
        self.layers = nn.ModuleList(layers)

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        x = F.max_pool2d(F.relu(self.stem(x), inplace=True), kernel_size=3, stride=2, padding=1)
        features = []
        for layer in self.layers:
            x = layer(x)
            features.append(x)
        return features


class FeaturePyramid(nn.Module):
    def __init__(self, in_channels: tuple[int, ...], channels: int = FPN_CHANNELS):
        super().__init__()
        self.lateral = nn.ModuleList(nn.Conv2d(c, channels, 1) for c in in_channels)
        self.output = nn.ModuleList(nn.Conv2d(channels, channels, 3, padding=1) for _ in in_channels)

    def forward(self, features: list[torch.Tensor]) -> tuple[torch.Tensor, ...]:
        inner = self.lateral[-1](features[-1])
        results = [self.output[-1](inner)]
        for i in range(len(features) - 2, -1, -1):
            lateral = self.lateral[i](features[i])
            inner = lateral + F.interpolate(inner, size=lateral.shape[-2:], mode="nearest")
            results.insert(0, self.output[i](inner))
        results.append(F.max_pool2d(results[-1], kernel_size=1, stride=2, padding=0))   # "pool"
        return tuple(results)


class ResNet50FPN(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = ResNet50Body()
        self.fpn = FeaturePyramid(tuple(4 * width for width, _, _ in LAYERS))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return self.fpn(self.body(x))


def build_model() -> nn.Module:
    return ResNet50FPN().eval()


def example_inputs(batch_size: int, size: int = SIZE) -> torch.Tensor:
    return torch.randn(batch_size, 3, size, size)
