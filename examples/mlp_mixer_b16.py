"""MLP-Mixer-B/16 (Tolstikhin et al. 2021, "MLP-Mixer: An all-MLP Architecture for Vision"), 224x224 RGB,
1000 classes: 59,880,472 parameters (the paper's Table 1 says 59M; timm's ``mixer_b16_224`` 59.88M),
12.6 GMACs (timm's figure; the paper gives no FLOP count).

Plain torch, written from the paper and its reference code (no weights are loaded): a 16x16 stride-16 patch
embedding (a convolution, 3 -> 768 channels, 14 x 14 = 196 tokens), 12 Mixer layers, a final LayerNorm,
global average pooling over tokens and a linear classifier. Each Mixer layer is pre-LayerNorm with residuals:
token mixing (transpose to (batch, 768, 196), MLP 196 -> 384 -> 196 with GELU, transpose back) then channel
mixing (MLP 768 -> 3072 -> 768 with GELU). Dropout and stochastic depth do nothing in inference and are left
out.

Parameter count, derived:
  stem   768*3*16*16 + 768                                  =    590,592
  layer  2 LayerNorms 2*2*768                               =      3,072
         token MLP 196*384 + 384 + 384*196 + 196            =    151,108
         channel MLP 768*3072 + 3072 + 3072*768 + 768       =  4,722,432  -> 4,876,612, x 12 = 58,519,344
  final LayerNorm 2*768                                     =      1,536
  head   768*1000 + 1000                                    =    769,000
  total                                                     = 59,880,472
Multiply-adds per image: stem 196*768*768 = 115,605,504; per layer token MLP 768*2*196*384 = 115,605,504
and channel MLP 196*2*768*3072 = 924,844,032, x 12 = 12,485,394,432; head 768,000; in all 12,601,767,936
(12.6 GMACs, 25.2 G operations).

Part of the blind held-out set of docs/accuracy.md: written after the roofline predictor was tuned and
never used to check it.
"""

import torch
from _blocks import GeluMlp
from torch import nn

IMAGE, PATCH, HIDDEN, LAYERS, TOKEN_MLP, CHANNEL_MLP = 224, 16, 768, 12, 384, 3072
TOKENS = (IMAGE // PATCH) ** 2   # 196


class MixerLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm1 = nn.LayerNorm(HIDDEN, eps=1e-6)
        self.token_mixing = GeluMlp(TOKENS, TOKEN_MLP)
        self.norm2 = nn.LayerNorm(HIDDEN, eps=1e-6)
        self.channel_mixing = GeluMlp(HIDDEN, CHANNEL_MLP)

    def forward(self, x: torch.Tensor) -> torch.Tensor:              # (B, 196, 768)
        y = self.norm1(x).transpose(1, 2)                              # (B, 768, 196)
        x = x + self.token_mixing(y).transpose(1, 2)
        return x + self.channel_mixing(self.norm2(x))


class MlpMixer(nn.Module):
    def __init__(self, num_classes: int = 1000):
        super().__init__()
        self.stem = nn.Conv2d(3, HIDDEN, PATCH, stride=PATCH)
        self.layers = nn.Sequential(*(MixerLayer() for _ in range(LAYERS)))
        self.norm = nn.LayerNorm(HIDDEN, eps=1e-6)
        self.head = nn.Linear(HIDDEN, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x).flatten(2).transpose(1, 2)                    # (B, 196, 768)
        x = self.norm(self.layers(x))
        return self.head(x.mean(dim=1))


def build_model() -> nn.Module:
    return MlpMixer()


def example_inputs(batch_size: int) -> torch.Tensor:
    return torch.randn(batch_size, 3, IMAGE, IMAGE)
