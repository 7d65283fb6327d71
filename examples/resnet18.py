"""ResNet-18 (He et al. 2015, "Deep Residual Learning for Image Recognition"), 224x224 RGB, 1000 classes:
11,689,512 parameters (torchvision ``resnet18``), 1.81 GMACs.

Plain torch, written from the paper's Table 1 and torchvision's layout (no weights are loaded). Every
convolution is Conv2d without bias + BatchNorm (eps 1e-5).
- stem: Conv7x7 3 -> 64 stride 2 padding 3 (224 -> 112), BN, ReLU, max pool 3x3 stride 2 padding 1 (-> 56).
- 4 stages of 2 basic blocks, widths 64, 128, 256, 512 on 56, 28, 14, 7; the first block of stages 2-4 has
  stride 2 on its first 3x3 and a Conv1x1 stride 2 + BN projection shortcut. A basic block: Conv3x3, BN, ReLU,
  Conv3x3, BN, add the shortcut, ReLU.
- head: global average pooling, Linear 512 -> 1000.

Parameter count, derived (BatchNorm: 2 per channel; its running statistics are buffers):
  stem 3*64*49 + 2*64                                                   =      9,536
  stage 1: 2 blocks x 2 x (64*64*9 + 128)                               =    147,968
  stage 2: 64*128*9 + 256 + 128*128*9 + 256 + 64*128 + 256 = 230,144,
           + 2 x (128*128*9 + 256) = 295,424                            =    525,568
  stage 3: 128*256*9 + 512 + 256*256*9 + 512 + 128*256 + 512 = 919,040,
           + 2 x (256*256*9 + 512) = 1,180,672                          =  2,099,712
  stage 4: 256*512*9 + 1024 + 512*512*9 + 1024 + 256*512 + 1024 = 3,673,088,
           + 2 x (512*512*9 + 1024) = 4,720,640                         =  8,393,728
  fc 512*1000 + 1000                                                    =    513,000
  total                                                                 = 11,689,512
Multiply-adds per image: stem 112*112*3*64*49 = 118,013,952; stage 1 4 x 56*56*64*64*9 = 462,422,016;
stages 2-4 each (the spatial size halved, the channels doubled) 28*28*(64*128*9 + 3*128*128*9 + 64*128)
= 411,041,792, x 3 = 1,233,125,376; 1,813,561,344 in convolutions + 512,000 in the linear = 1,814,073,344
(torchvision lists 1.81 GFLOPS, multiply-adds).

Part of the ninth blind held-out set of docs/accuracy.md: written after the roofline predictor was tuned and
never used to check it.
"""

import torch
from torch import nn

STAGES = ((64, 1), (128, 2), (256, 2), (512, 2))          # (width, stride of the first block)


class BasicBlock(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(out_channels)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(out_channels)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = None
        if stride != 1 or in_channels != out_channels:
            self.downsample = nn.Sequential(nn.Conv2d(in_channels, out_channels, 1, stride=stride, bias=False),
                                            nn.BatchNorm2d(out_channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class ResNet18(nn.Module):
    def __init__(self, num_classes: int = 1000):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        layers, cin = [], 64
        for width, stride in STAGES:
            layers.append(nn.Sequential(BasicBlock(cin, width, stride), BasicBlock(width, width, 1)))
            cin = width
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(512, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = torch.flatten(nn.functional.adaptive_avg_pool2d(self.layers(x), 1), 1)
        return self.fc(x)


def build_model() -> nn.Module:
    return ResNet18().eval()


def example_inputs(batch_size: int) -> torch.Tensor:
    return torch.randn(batch_size, 3, 224, 224)
