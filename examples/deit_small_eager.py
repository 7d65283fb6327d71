"""DeiT-Small (Touvron et al. 2021, "Training data-efficient image transformers & distillation through
attention"), the ViT-S/16 shape, 224x224 RGB, 1000 classes: 22,050,664 parameters (timm ``deit_small_patch16_224``,
class token only, no distillation token), 4.6 GMACs; with "eager" attention.

Plain torch, written from the paper and timm's / Hugging Face's layout (no weights are loaded): a 16x16 stride-16
Conv2d patch embedding 3 -> 384 (196 patches), a learned class token prepended, learned position embeddings
(197 x 384) added, 12 pre-norm transformer blocks (width 384, 6 heads of 64; LayerNorm eps 1e-6, q/k/v as one
Linear 384 -> 1152 with bias, output projection 384 -> 384, MLP 384 -> 1536 -> 384 with exact GELU), a final
LayerNorm and a linear head on the class token. Dropout and stochastic depth do nothing in inference.

The attention is written the way Hugging Face's "eager" implementations (and timm without fused attention)
write it, not with ``F.scaled_dot_product_attention``: scores = q @ k.transpose(-2, -1) * scale,
probs = scores.softmax(-1), out = probs @ v, on (batch, 6, 197, 64) tensors; the (batch, 6, 197, 197) scores
and probabilities are materialised in memory.

Parameter count, derived:
  patch embedding 3*16*16*384 + 384                          =    295,296
  class token 384, position embedding 197*384                =     76,032
  block  2 LayerNorms 2*2*384                                =      1,536
         qkv 384*1152 + 1152                                 =    443,520
         projection 384*384 + 384                            =    147,840
         MLP 384*1536 + 1536 + 1536*384 + 384                =  1,181,568  -> 1,774,464, x 12 = 21,293,568
  final LayerNorm 2*384                                      =        768
  head 384*1000 + 1000                                       =    385,000
  total                                                      = 22,050,664

Part of the blind held-out set of docs/accuracy.md: written after the roofline predictor was tuned and
never used to check it.
"""

import torch
import torch.nn.functional as F
from torch import nn

IMAGE, PATCH, WIDTH, DEPTH, HEADS, MLP = 224, 16, 384, 12, 6, 1536
HEAD_DIM = WIDTH // HEADS
TOKENS = (IMAGE // PATCH) ** 2 + 1                      # 196 patches + the class token


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(WIDTH, 3 * WIDTH)
        self.proj = nn.Linear(WIDTH, WIDTH)
        self.scale = HEAD_DIM ** -0.5

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, _ = x.shape
        qkv = self.qkv(x).reshape(b, n, 3, HEADS, HEAD_DIM).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)                                         # (batch, heads, tokens, 64) each
        scores = q @ k.transpose(-2, -1) * self.scale                   # (batch, heads, tokens, tokens)
        probs = scores.softmax(dim=-1)
        out = probs @ v
        return self.proj(out.transpose(1, 2).reshape(b, n, WIDTH))


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm1 = nn.LayerNorm(WIDTH, eps=1e-6)
        self.attn = Attention()
        self.norm2 = nn.LayerNorm(WIDTH, eps=1e-6)
        self.fc1 = nn.Linear(WIDTH, MLP)
        self.fc2 = nn.Linear(MLP, WIDTH)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm1(x))
        return x + self.fc2(F.gelu(self.fc1(self.norm2(x))))


class DeiTSmall(nn.Module):
    def __init__(self, num_classes: int = 1000):
        super().__init__()
        self.patch_embed = nn.Conv2d(3, WIDTH, PATCH, stride=PATCH)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, WIDTH))
        self.pos_embed = nn.Parameter(torch.zeros(1, TOKENS, WIDTH))
        self.blocks = nn.ModuleList(Block() for _ in range(DEPTH))
        self.norm = nn.LayerNorm(WIDTH, eps=1e-6)
        self.head = nn.Linear(WIDTH, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.patch_embed(x).flatten(2).transpose(1, 2)             # (batch, 196, 384)
        x = torch.cat((self.cls_token.expand(x.shape[0], -1, -1), x), dim=1) + self.pos_embed
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x)[:, 0])


def build_model() -> nn.Module:
    return DeiTSmall().eval()


def example_inputs(batch_size: int) -> torch.Tensor:
    return torch.randn(batch_size, 3, IMAGE, IMAGE)
