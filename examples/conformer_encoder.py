"""A Conformer-S speech encoder (Gulati et al. 2020, "Conformer: Convolution-augmented Transformer for Speech
Recognition"): 10 s of 80-bin log-mel features at a 10 ms hop, (batch, 1000, 80) -> (batch, 249, 144).
8,353,728 parameters (the paper's 10.3M for Conformer-S includes its one-layer LSTM decoder of 320 units and
the output layer, which are not here).

Plain torch, written from the paper and the layout of ESPnet's Conformer encoder (no weights are loaded):
- convolutional subsampling x4: the features as a one-channel image (batch, 1, 1000, 80), Conv2d 1 -> 144
  3x3 stride 2, ReLU, Conv2d 144 -> 144 3x3 stride 2, ReLU, no padding: time 1000 -> 499 -> 249, mel bins
  80 -> 39 -> 19; the (144 channels x 19 bins) of each frame are flattened and projected by a Linear
  2736 -> 144.
- absolute sinusoidal position encoding as in ESPnet's ``abs_pos`` variant: x * sqrt(144) + PE (a fixed
  buffer, no parameters). The paper uses relative sinusoidal positions inside the attention (Transformer-XL
  style); this file uses plain absolute attention instead, which keeps the same matrix shapes.
- 16 Conformer blocks of width d = 144, each (Macaron style):
  x + 1/2 FFN(x): LayerNorm, Linear 144 -> 576, SiLU (Swish), Linear 576 -> 144;
  x + MHSA(x): LayerNorm, q/k/v Linear 144 -> 144 each (with bias), 4 heads of 36 as (batch, heads, time, 36)
    tensors into ``F.scaled_dot_product_attention`` without a mask (every frame is real), output Linear;
  x + Conv(x): LayerNorm, pointwise Conv1d 144 -> 288, GLU over channels (-> 144), depthwise Conv1d kernel 31
    (padding 15, 144 groups), BatchNorm1d, SiLU, pointwise Conv1d 144 -> 144 (all convolutions with bias);
  x + 1/2 FFN(x) (a second FFN module), then the block's final LayerNorm.
Dropout does nothing in inference and is left out.

Parameter count, derived (BatchNorm: 2 per channel; its running statistics are buffers; LayerNorm 2*144):
  subsampling conv 1 1*144*9 + 144                            =      1,440
              conv 2 144*144*9 + 144                          =    186,768
              linear 144*19*144 + 144                         =    394,128  -> 582,336
  block  FFN  288 + 144*576 + 576 + 576*144 + 144 = 166,896, two  =    333,792
         MHSA 288 + 3*(144*144 + 144) + 144*144 + 144         =     83,808
         Conv 288 + 144*288 + 288 + 144*31 + 144 + 288 + 144*144 + 144 =  67,824
         final LayerNorm                                      =        288  -> 485,712, x 16 = 7,771,392
  total                                                       =  8,353,728

Part of the blind held-out set of docs/accuracy.md: written after the roofline predictor was tuned and
never used to check it.
"""

import math

import torch
import torch.nn.functional as F
from torch import nn

FRAMES, MELS, D_MODEL, HEADS, BLOCKS, FFN_EXPANSION, KERNEL = 1000, 80, 144, 4, 16, 4, 31
MAX_POSITIONS = 2048                                   # after subsampling: 20 s of audio


def _sinusoidal(positions: int, dim: int) -> torch.Tensor:
    position = torch.arange(positions, dtype=torch.float32)[:, None]
    div = torch.exp(torch.arange(0, dim, 2, dtype=torch.float32) * (-math.log(10000.0) / dim))
    pe = torch.zeros(positions, dim)
    pe[:, 0::2] = torch.sin(position * div)
    pe[:, 1::2] = torch.cos(position * div)
    return pe[None]                                    # (1, positions, dim)


class Conv2dSubsampling(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, D_MODEL, 3, stride=2)
        self.conv2 = nn.Conv2d(D_MODEL, D_MODEL, 3, stride=2)
        bins = ((MELS - 1) // 2 - 1) // 2              # 80 -> 39 -> 19
        self.out = nn.Linear(D_MODEL * bins, D_MODEL)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.conv2(F.relu(self.conv1(features[:, None]))))     # (batch, 144, 249, 19)
        b, c, t, f = x.shape
        return self.out(x.transpose(1, 2).reshape(b, t, c * f))          # (batch, 249, 144)


class FeedForward(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(D_MODEL)
        self.linear1 = nn.Linear(D_MODEL, FFN_EXPANSION * D_MODEL)
        self.linear2 = nn.Linear(FFN_EXPANSION * D_MODEL, D_MODEL)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear2(F.silu(self.linear1(self.norm(x))))


class SelfAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(D_MODEL)
        self.linear_q, self.linear_k, self.linear_v = (nn.Linear(D_MODEL, D_MODEL) for _ in range(3))
        self.linear_out = nn.Linear(D_MODEL, D_MODEL)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        x = self.norm(x)

        def heads(y: torch.Tensor) -> torch.Tensor:
            return y.view(b, t, HEADS, D_MODEL // HEADS).transpose(1, 2)      # (batch, heads, time, 36)

        ctx = F.scaled_dot_product_attention(heads(self.linear_q(x)), heads(self.linear_k(x)),
                                             heads(self.linear_v(x)))
        return self.linear_out(ctx.transpose(1, 2).reshape(b, t, D_MODEL))


class ConvolutionModule(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(D_MODEL)
        self.pointwise_conv1 = nn.Conv1d(D_MODEL, 2 * D_MODEL, 1)
        self.depthwise_conv = nn.Conv1d(D_MODEL, D_MODEL, KERNEL, padding=KERNEL // 2, groups=D_MODEL)
        self.batch_norm = nn.BatchNorm1d(D_MODEL)
        self.pointwise_conv2 = nn.Conv1d(D_MODEL, D_MODEL, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.norm(x).transpose(1, 2)                                     # (batch, 144, time)
        y = F.glu(self.pointwise_conv1(y), dim=1)
        y = F.silu(self.batch_norm(self.depthwise_conv(y)))
        return self.pointwise_conv2(y).transpose(1, 2)


class ConformerBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.ffn1 = FeedForward()
        self.attention = SelfAttention()
        self.conv = ConvolutionModule()
        self.ffn2 = FeedForward()
        self.final_norm = nn.LayerNorm(D_MODEL)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + 0.5 * self.ffn1(x)
        x = x + self.attention(x)
        x = x + self.conv(x)
        x = x + 0.5 * self.ffn2(x)
        return self.final_norm(x)


class ConformerEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.subsampling = Conv2dSubsampling()
        self.register_buffer("pe", _sinusoidal(MAX_POSITIONS, D_MODEL), persistent=False)
        self.blocks = nn.ModuleList(ConformerBlock() for _ in range(BLOCKS))

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        x = self.subsampling(features)
        x = x * math.sqrt(D_MODEL) + self.pe[:, :x.shape[1]]
        for block in self.blocks:
            x = block(x)
        return x


def build_model() -> nn.Module:
    return ConformerEncoder().eval()


def example_inputs(batch_size: int) -> torch.Tensor:
    """10 s of random 80-bin log-mel features per item (batch, 1000 frames, 80)."""
    return torch.randn(batch_size, FRAMES, MELS)
