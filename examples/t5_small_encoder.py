"""The encoder of T5-small, v1.0 (Raffel et al. 2020, "Exploring the Limits of Transfer Learning with a
Unified Text-to-Text Transformer"): 512 random token ids -> (batch, 512, 512). 35,330,816 parameters with
the shared token embedding (Hugging Face's ``T5EncoderModel`` of ``t5-small``; T5-small is 60.5M in all,
with its decoder).

Plain torch, written from the paper and Hugging Face's ``modeling_t5`` (no weights are loaded): a token
embedding of 32128 x 512, 6 pre-norm transformer blocks (width 512, 8 heads of d_kv 64, projections without
bias; feed-forward 512 -> 2048 -> 512 with ReLU, no bias) and a final norm. T5's LayerNorm is RMS-style:
no bias, no mean subtraction, ``x * rsqrt(mean(x^2) + 1e-6) * weight``, written with plain torch ops.
Attention runs through ``F.scaled_dot_product_attention`` with ``scale=1`` (T5 does not divide the scores
by sqrt(d_kv)) and the relative position bias as a float ``attn_mask``: 32 bidirectional buckets (16 per
direction, exact up to 8, logarithmic up to a distance of 128), a 32 x 8 table held by the first block;
the bias is computed once there and shared by every block. Dropout does nothing in inference and is left
out; no padding mask (every token is real).

Parameter count, derived:
  shared embedding 32128*512                                 = 16,449,536
  block  q, k, v, o 4*512*512                                =  1,048,576
         feed-forward 512*2048 + 2048*512                    =  2,097,152
         2 norms 2*512                                       =      1,024  -> 3,146,752, x 6 = 18,880,512
  relative attention bias (first block) 32*8                 =        256
  final norm 512                                             =        512
  total                                                      = 35,330,816 (encoder layers 18,881,280)

Part of the blind held-out set of docs/accuracy.md: written after the roofline predictor was tuned and
never used to check it.
"""

import math

import torch
import torch.nn.functional as F
from torch import nn

VOCAB, D_MODEL, LAYERS, HEADS, D_KV, D_FF = 32128, 512, 6, 8, 64, 2048
BUCKETS, MAX_DISTANCE, SEQUENCE = 32, 128, 512


def relative_position_bucket(relative_position: torch.Tensor, num_buckets: int = BUCKETS,
                             max_distance: int = MAX_DISTANCE) -> torch.Tensor:
    """T5's bidirectional bucketing of (key - query) offsets: half the buckets per direction, the first half
    of those exact offsets, the rest logarithmically spaced up to max_distance (beyond it, the last one)."""
    num_buckets //= 2
    buckets = (relative_position > 0).to(torch.long) * num_buckets
    distance = relative_position.abs()
    max_exact = num_buckets // 2
    large = max_exact + (torch.log(distance.float() / max_exact) / math.log(max_distance / max_exact)
                         * (num_buckets - max_exact)).to(torch.long)
    large = torch.minimum(large, torch.full_like(large, num_buckets - 1))
    return buckets + torch.where(distance < max_exact, distance, large)


class T5LayerNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        variance = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(variance + self.eps))


class T5Attention(nn.Module):
    def __init__(self, has_relative_bias: bool):
        super().__init__()
        inner = HEADS * D_KV
        self.q = nn.Linear(D_MODEL, inner, bias=False)
        self.k = nn.Linear(D_MODEL, inner, bias=False)
        self.v = nn.Linear(D_MODEL, inner, bias=False)
        self.o = nn.Linear(inner, D_MODEL, bias=False)
        self.relative_attention_bias = nn.Embedding(BUCKETS, HEADS) if has_relative_bias else None

    def compute_bias(self, length: int, device: torch.device) -> torch.Tensor:
        """(1, heads, length, length) bias from each query/key offset's bucket."""
        position = torch.arange(length, dtype=torch.long, device=device)
        buckets = relative_position_bucket(position[None, :] - position[:, None])
        return self.relative_attention_bias(buckets).permute(2, 0, 1).unsqueeze(0)

    def forward(self, x: torch.Tensor, position_bias: torch.Tensor) -> torch.Tensor:
        b, n, _ = x.shape
        q, k, v = (proj(x).view(b, n, HEADS, D_KV).transpose(1, 2) for proj in (self.q, self.k, self.v))
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=position_bias, scale=1.0)
        return self.o(y.transpose(1, 2).reshape(b, n, HEADS * D_KV))


class T5Block(nn.Module):
    def __init__(self, has_relative_bias: bool):
        super().__init__()
        self.attention_norm = T5LayerNorm(D_MODEL)
        self.attention = T5Attention(has_relative_bias)
        self.ff_norm = T5LayerNorm(D_MODEL)
        self.wi = nn.Linear(D_MODEL, D_FF, bias=False)
        self.wo = nn.Linear(D_FF, D_MODEL, bias=False)

    def forward(self, x: torch.Tensor, position_bias: torch.Tensor) -> torch.Tensor:
        x = x + self.attention(self.attention_norm(x), position_bias)
        return x + self.wo(F.relu(self.wi(self.ff_norm(x))))


class T5Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.shared = nn.Embedding(VOCAB, D_MODEL)
        self.blocks = nn.ModuleList(T5Block(has_relative_bias=i == 0) for i in range(LAYERS))
        self.final_norm = T5LayerNorm(D_MODEL)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        x = self.shared(input_ids)
        position_bias = self.blocks[0].attention.compute_bias(input_ids.shape[1], input_ids.device)
        for block in self.blocks:
            x = block(x, position_bias)
        return self.final_norm(x)


def build_model() -> nn.Module:
    return T5Encoder()


def example_inputs(batch_size: int) -> torch.Tensor:
    return torch.randint(0, VOCAB, (batch_size, SEQUENCE))
