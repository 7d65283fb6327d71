"""SqueezeNet 1.1 (Iandola et al. 2016, "SqueezeNet: AlexNet-level accuracy with 50x fewer parameters and
<0.5MB model size"; version 1.1 from the authors' repository), 224x224 RGB, 1000 classes: 1,235,496 parameters
(torchvision ``squeezenet1_1``), 0.35 GMACs.

Plain torch, written from the paper and torchvision's layout (no weights are loaded). Every convolution has a
bias and no BatchNorm; every max pool is 3x3 stride 2 with ``ceil_mode=True``:
- Conv2d 3 -> 64, 3x3 stride 2, no padding (224 -> 111), ReLU; max pool (111 -> 55).
- Fire(cin, squeeze s, expand e): Conv1x1 cin -> s, ReLU; then side by side Conv1x1 s -> e, ReLU and
  Conv3x3 s -> e (padding 1), ReLU; channel concatenation -> 2e channels.
- fire2 (64, 16, 64), fire3 (128, 16, 64) at 55x55; max pool (55 -> 27); fire4 (128, 32, 128),
  fire5 (256, 32, 128) at 27x27; max pool (27 -> 13); fire6 (256, 48, 192), fire7 (384, 48, 192),
  fire8 (384, 64, 256), fire9 (512, 64, 256) at 13x13.
- classifier: dropout (nothing in inference), Conv1x1 512 -> 1000, ReLU, global average pooling, flatten.

Parameter count, derived; a Fire(cin, s, e) has cin*s + s + s*e + e + s*e*9 + e:
  conv1 3*64*9 + 64                                                          =      1,792
  fire2 11,408  fire3 12,432  fire4 45,344  fire5 49,440                     =    118,624
  fire6 104,880  fire7 111,024  fire8 188,992  fire9 197,184                 =    602,080
  classifier conv 512*1000 + 1000                                            =    513,000
  total                                                                      =  1,235,496
Multiply-adds per image, a Fire at h x h doing h*h*(cin*s + s*e + 9*s*e): conv1 111*111*1,728 = 21,290,688;
fire2+3 at 55x55 71,244,800; fire4+5 at 27x27 68,677,632; fire6..9 at 13x13 101,410,816; classifier
13*13*512,000 = 86,528,000: 349,151,936 in all (torchvision lists 0.35 GFLOPS).

Part of the seventh blind held-out set of docs/accuracy.md: written after the roofline predictor was tuned and
never used to check it.
"""

import torch
import torch.nn.functional as F
from torch import nn

FIRES = ((64, 16, 64), (128, 16, 64), (128, 32, 128), (256, 32, 128),
         (256, 48, 192), (384, 48, 192), (384, 64, 256), (512, 64, 256))
POOL_AFTER = (1, 3)                                 # a max pool after fire3 and after fire5 (indices in FIRES)


class Fire(nn.Module):
    def __init__(self, in_channels: int, squeeze: int, expand: int):
        super().__init__()
        self.squeeze = nn.Conv2d(in_channels, squeeze, 1)
        self.expand1x1 = nn.Conv2d(squeeze, expand, 1)
        self.expand3x3 = nn.Conv2d(squeeze, expand, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.squeeze(x), inplace=True)
        return torch.cat([F.relu(self.expand1x1(x), inplace=True), F.relu(self.expand3x3(x), inplace=True)], 1)


def _max_pool(x: torch.Tensor) -> torch.Tensor:
    return F.max_pool2d(x, kernel_size=3, stride=2, ceil_mode=True)


class SqueezeNet11(nn.Module):
    def __init__(self, num_classes: int = 1000):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 3, stride=2)
        self.fires = nn.ModuleList(Fire(*spec) for spec in FIRES)
        self.classifier = nn.Conv2d(512, num_classes, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = _max_pool(F.relu(self.conv1(x), inplace=True))
        for i, fire in enumerate(self.fires):
            x = fire(x)
            if i in POOL_AFTER:
                x = _max_pool(x)
        x = F.relu(self.classifier(x), inplace=True)
        return torch.flatten(F.adaptive_avg_pool2d(x, 1), 1)


def build_model() -> nn.Module:
    return SqueezeNet11().eval()


def example_inputs(batch_size: int) -> torch.Tensor:
    return torch.randn(batch_size, 3, 224, 224)
