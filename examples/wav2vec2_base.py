"""The wav2vec 2.0 base encoder (Baevski et al. 2020, "wav2vec 2.0: A Framework for Self-Supervised Learning
of Speech Representations") for inference: 1 s of 16 kHz audio, (batch, 16000) -> (batch, 49, 768).
94,370,816 parameters; Hugging Face's ``Wav2Vec2Model`` of ``facebook/wav2vec2-base`` (no quantizer or
projection heads) has 94,371,712 (~94.4M), see below for the 896 difference.

Plain torch, written from the paper and Hugging Face's ``modeling_wav2vec2`` (no weights are loaded):
- feature encoder: 7 Conv1d without bias, 512 channels, kernels (10, 3, 3, 3, 3, 2, 2), strides
  (5, 2, 2, 2, 2, 2, 2), each followed by GELU; GroupNorm(512, 512) after the first convolution only.
  16000 samples -> 3199 -> 1599 -> 799 -> 399 -> 199 -> 99 -> 49 frames (a 20 ms hop, 25 ms receptive field).
- feature projection: LayerNorm(512), Linear 512 -> 768.
- convolutional positional embedding: Conv1d 768 -> 768, kernel 128, padding 64, 16 groups, with bias; the
  kernel is even, so the output has one frame too many and the last is dropped; GELU; added to the input.
  The weight norm of the original is folded into a plain weight (what it computes in inference).
- the encoder's LayerNorm, then 12 post-LN transformer layers (width 768, 12 heads of 64, q/k/v/out with
  bias, feed-forward 768 -> 3072 -> 768 with GELU), as in the base model (the large models are pre-LN).
Dropout, LayerDrop and the time masking of pre-training do nothing in inference and are left out; no padding
mask (every sample is real, as for the base model, which was trained without one).

Parameter count, derived:
  conv 0  1*512*10                                           =      5,120
  GroupNorm 2*512                                            =      1,024
  conv 1-4  4 * 512*512*3                                    =  3,145,728
  conv 5-6  2 * 512*512*2                                    =  1,048,576  -> feature encoder 4,200,448
  projection LayerNorm 2*512 + Linear 512*768 + 768          =    395,008
  positional conv 768*(768/16)*128 + 768                     =  4,719,360
  encoder LayerNorm 2*768                                    =      1,536
  layer  q, k, v, out 4*(768*768 + 768)                      =  2,362,368
         feed-forward 768*3072 + 3072 + 3072*768 + 768       =  4,722,432
         2 LayerNorms 2*2*768                                =      3,072  -> 7,087,872, x 12 = 85,054,464
  total                                                      = 94,370,816
Hugging Face's count is 896 more: the positional conv's weight norm keeps a magnitude ``weight_g`` of 128
(one per kernel position, dim=2) beside the direction ``weight_v`` (+128), and the model holds the
768-wide ``masked_spec_embed`` used only for masking in pre-training (+768): 94,371,712.

Part of the blind held-out set of docs/accuracy.md: written after the roofline predictor was tuned and
never used to check it.
"""

import torch
import torch.nn.functional as F
from _blocks import PostNormEncoderLayer
from torch import nn

SAMPLE_RATE, CHANNELS, HIDDEN, LAYERS, HEADS, FFN = 16_000, 512, 768, 12, 12, 3072
KERNELS = (10, 3, 3, 3, 3, 2, 2)
STRIDES = (5, 2, 2, 2, 2, 2, 2)
POS_KERNEL, POS_GROUPS = 128, 16


class FeatureEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.convs = nn.ModuleList(nn.Conv1d(1 if i == 0 else CHANNELS, CHANNELS, k, stride=s, bias=False)
                                   for i, (k, s) in enumerate(zip(KERNELS, STRIDES, strict=True)))
        self.norm = nn.GroupNorm(CHANNELS, CHANNELS)          # one group per channel, first conv only

    def forward(self, audio: torch.Tensor) -> torch.Tensor:
        x = audio[:, None, :]                                 # (batch, 1, samples)
        for i, conv in enumerate(self.convs):
            x = conv(x)
            if i == 0:
                x = self.norm(x)
            x = F.gelu(x)
        return x                                              # (batch, 512, frames)


class PositionalConvEmbedding(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(HIDDEN, HIDDEN, POS_KERNEL, padding=POS_KERNEL // 2, groups=POS_GROUPS)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x.transpose(1, 2))[:, :, :-1]           # even kernel: drop the extra last frame
        return F.gelu(y).transpose(1, 2)


class Wav2Vec2Base(nn.Module):
    def __init__(self):
        super().__init__()
        self.feature_extractor = FeatureEncoder()
        self.projection_norm = nn.LayerNorm(CHANNELS)
        self.projection = nn.Linear(CHANNELS, HIDDEN)
        self.pos_conv_embed = PositionalConvEmbedding()
        self.encoder_norm = nn.LayerNorm(HIDDEN)
        self.layers = nn.ModuleList(PostNormEncoderLayer(HIDDEN, HEADS, FFN) for _ in range(LAYERS))

    def forward(self, audio: torch.Tensor) -> torch.Tensor:
        x = self.feature_extractor(audio).transpose(1, 2)     # (batch, frames, 512)
        x = self.projection(self.projection_norm(x))
        x = self.encoder_norm(x + self.pos_conv_embed(x))
        for layer in self.layers:
            x = layer(x)
        return x


def build_model() -> nn.Module:
    return Wav2Vec2Base()


def example_inputs(batch_size: int) -> torch.Tensor:
    """1 s of random 16 kHz audio per item (the model expects zero-mean, unit-variance waveforms)."""
    return torch.randn(batch_size, SAMPLE_RATE)
