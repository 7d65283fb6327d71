"""ResNeXt-50 32x4d (Xie et al. 2017, "Aggregated Residual Transformations for Deep Neural Networks"),
224x224 RGB, 1000 classes: 25,028,904 parameters (torchvision ``resnext50_32x4d``), 4.26 GMACs.

Plain torch, written from the paper and torchvision's layout (no weights are loaded): ResNet-50's stem
(7x7 stride-2 conv to 64 channels, BatchNorm, ReLU, 3x3 stride-2 max pooling), four stages of (3, 4, 6, 3)
bottleneck blocks and a linear classifier after global average pooling. Each block is Conv1x1 -> grouped
Conv3x3 (32 groups of 4 x 2^stage channels: widths 128, 256, 512, 1024) -> Conv1x1 to twice the width
(256, 512, 1024, 2048), each followed by BatchNorm, ReLU after the first two and after the residual add.
The stride is on the 3x3 convolution (v1.5, as torchvision); the first block of each stage has a projection
shortcut (Conv1x1 with the block's stride, BatchNorm). Convolutions have no bias.

Parameter count, derived (BatchNorm: 2 per channel; its running statistics are buffers):
  stem   3*64*7*7 + 2*64                                     =      9,536
  block  (cin, width w, out 2w): cin*w + 2w + w*(w/32)*9 + 2w + w*2w + 4w  (+ cin*2w + 4w when projecting)
  stage 1 (w 128)   63,488 + 2 x 71,168                      =    205,824
  stage 2 (w 256)   349,184 + 3 x 282,624                    =  1,197,056
  stage 3 (w 512)   1,390,592 + 5 x 1,126,400                =  7,022,592
  stage 4 (w 1024)  5,550,080 + 2 x 4,497,408                = 14,544,896
  classifier 2048*1000 + 1000                                =  2,049,000
  total                                                      = 25,028,904

Part of the blind held-out set of docs/accuracy.md: written after the roofline predictor was tuned and
never used to check it.
"""

import torch
from _blocks import ResNetLayers
from torch import nn

GROUPS, BASE_WIDTH = 32, 4
LAYERS = (3, 4, 6, 3)


class ResNeXt(ResNetLayers):
    def __init__(self, layers=LAYERS, num_classes: int = 1000):
        super().__init__(layers, groups=GROUPS, width_per_group=BASE_WIDTH)
        self.fc = nn.Linear(self.out_channels, num_classes)       # 2048 -> 1000

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(x.mean(dim=(2, 3)))                  # global average pool


def build_model() -> nn.Module:
    return ResNeXt()


def example_inputs(batch_size: int) -> torch.Tensor:
    return torch.randn(batch_size, 3, 224, 224)
