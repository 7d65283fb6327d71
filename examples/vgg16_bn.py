"""VGG-16 with batch normalisation (Simonyan & Zisserman 2015, "Very Deep Convolutional Networks for
Large-Scale Image Recognition", configuration D; BatchNorm after each convolution as in torchvision),
224x224 RGB, 1000 classes: 138,365,992 parameters (torchvision ``vgg16_bn``), 15.47 GMACs.

Plain torch, written from the paper and torchvision's layout (no weights are loaded). Thirteen 3x3
convolutions (padding 1, with bias), each followed by BatchNorm and ReLU, in five blocks of 2, 2, 3, 3, 3
convolutions with 64, 128, 256, 512, 512 channels, each block ending in a 2x2 stride-2 max pooling:
224 -> 112 -> 56 -> 28 -> 14 -> 7. Then adaptive average pooling to 7x7 (an identity at 224x224, kept as
torchvision has it), flatten to 25,088, and the classifier Linear 25088 -> 4096, ReLU, Dropout,
Linear 4096 -> 4096, ReLU, Dropout, Linear 4096 -> 1000 (dropout does nothing in eval mode).

Parameter count, derived; a convolution cin -> cout has cin*cout*9 + cout (bias) + 2*cout (BatchNorm: 2 per
channel; its running statistics are buffers):
  block 1  1,920 + 37,056                                   =     38,976
  block 2  74,112 + 147,840                                 =    221,952
  block 3  295,680 + 2 x 590,592                            =  1,476,864
  block 4  1,181,184 + 2 x 2,360,832                        =  5,902,848
  block 5  3 x 2,360,832                                    =  7,082,496  -> convolutions 14,723,136
  fc1  25088*4096 + 4096                                    = 102,764,544
  fc2  4096*4096 + 4096                                     =  16,781,312
  fc3  4096*1000 + 1000                                     =   4,097,000  -> classifier 123,642,856
  total                                                     = 138,365,992

Part of the sixth blind held-out set of docs/accuracy.md: written after the roofline predictor was tuned and
never used to check it.
"""

import torch
from torch import nn

# Configuration D: channels of each 3x3 convolution, "M" a 2x2 max pooling.
CONFIG = (64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M")


class VGG16BN(nn.Module):
    def __init__(self):
        super().__init__()
        layers: list[nn.Module] = []
        channels = 3
        for v in CONFIG:
            if v == "M":
                layers.append(nn.MaxPool2d(kernel_size=2, stride=2))
            else:
                layers += [nn.Conv2d(channels, v, 3, padding=1), nn.BatchNorm2d(v), nn.ReLU(inplace=True)]
                channels = v
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d((7, 7))
        self.classifier = nn.Sequential(
            nn.Linear(512 * 7 * 7, 4096), nn.ReLU(inplace=True), nn.Dropout(),
            nn.Linear(4096, 4096), nn.ReLU(inplace=True), nn.Dropout(),
            nn.Linear(4096, 1000))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.avgpool(self.features(x))
        return self.classifier(torch.flatten(x, 1))


def build_model() -> nn.Module:
    return VGG16BN().eval()


def example_inputs(batch_size: int) -> torch.Tensor:
    return torch.randn(batch_size, 3, 224, 224)
