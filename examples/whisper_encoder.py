"""The audio encoder of Whisper base (Radford et al. 2022, "Robust Speech Recognition via Large-Scale Weak
Supervision"): 30 s of 80-bin log-mel spectrogram, (batch, 80, 3000) -> (batch, 1500, 512). 20,590,592
parameters (Whisper base is 74M in all, with its decoder).

Plain torch, written from the paper and OpenAI's reference code (no weights are loaded): two Conv1d with
GELU (80 -> 512, kernel 3; 512 -> 512, kernel 3, stride 2, halving 3000 frames to 1500), a fixed sinusoidal
position embedding, 6 pre-LayerNorm transformer blocks (width 512, 8 heads of 64, MLP 2048 with GELU; the
key projection has no bias) and a final LayerNorm. Attention runs through ``F.scaled_dot_product_attention``
(bidirectional).

Parameter count, derived:
  conv1  80*512*3 + 512                     =    123,392
  conv2  512*512*3 + 512                    =    786,944
  block  q, v, out 3*(512*512 + 512) + k 512*512           = 1,050,112
         fc1 512*2048 + 2048 + fc2 2048*512 + 512           = 2,099,712
         2 LayerNorms 2*2*512                               =     2,048  -> 3,151,872, x 6 = 18,911,232
  ln_post 2*512                             =      1,024
  position table 1500*512                   =    768,000
  total                                     = 20,590,592
The position table is held as a frozen parameter, as Hugging Face's WhisperEncoder holds it (an
nn.Embedding); OpenAI's code registers it as a buffer, and without it the count is 19,822,592.

Part of the blind held-out set of docs/accuracy.md: written after the roofline predictor was tuned and
never used to check it.
"""

import math

import torch
import torch.nn.functional as F
from torch import nn

MELS, FRAMES, WIDTH, HEADS, MLP, LAYERS = 80, 3000, 512, 8, 2048, 6
POSITIONS = FRAMES // 2   # 1500 after the stride-2 convolution


def sinusoids(length: int, channels: int, max_timescale: float = 10_000.0) -> torch.Tensor:
    """(length, channels) sinusoidal position table: sines in the first half of the channels, cosines after."""
    increment = math.log(max_timescale) / (channels // 2 - 1)
    inv_timescales = torch.exp(-increment * torch.arange(channels // 2))
    scaled = torch.arange(length)[:, None] * inv_timescales[None, :]
    return torch.cat([torch.sin(scaled), torch.cos(scaled)], dim=1)


class EncoderBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn_ln = nn.LayerNorm(WIDTH)
        self.query = nn.Linear(WIDTH, WIDTH)
        self.key = nn.Linear(WIDTH, WIDTH, bias=False)
        self.value = nn.Linear(WIDTH, WIDTH)
        self.out = nn.Linear(WIDTH, WIDTH)
        self.mlp_ln = nn.LayerNorm(WIDTH)
        self.fc1 = nn.Linear(WIDTH, MLP)
        self.fc2 = nn.Linear(MLP, WIDTH)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        h = self.attn_ln(x)
        q, k, v = (proj(h).view(b, s, HEADS, WIDTH // HEADS).transpose(1, 2)
                   for proj in (self.query, self.key, self.value))
        y = F.scaled_dot_product_attention(q, k, v)
        x = x + self.out(y.transpose(1, 2).reshape(b, s, WIDTH))
        return x + self.fc2(F.gelu(self.fc1(self.mlp_ln(x))))


class WhisperEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv1d(MELS, WIDTH, kernel_size=3, padding=1)
        self.conv2 = nn.Conv1d(WIDTH, WIDTH, kernel_size=3, stride=2, padding=1)
        self.positional_embedding = nn.Parameter(sinusoids(POSITIONS, WIDTH), requires_grad=False)
        self.blocks = nn.ModuleList(EncoderBlock() for _ in range(LAYERS))
        self.ln_post = nn.LayerNorm(WIDTH)

    def forward(self, mel: torch.Tensor) -> torch.Tensor:
        x = F.gelu(self.conv1(mel))
        x = F.gelu(self.conv2(x)).permute(0, 2, 1)     # (batch, 1500, 512)
        x = x + self.positional_embedding
        for block in self.blocks:
            x = block(x)
        return self.ln_post(x)


def build_model() -> nn.Module:
    return WhisperEncoder()


def example_inputs(batch_size: int) -> torch.Tensor:
    return torch.randn(batch_size, MELS, FRAMES)
