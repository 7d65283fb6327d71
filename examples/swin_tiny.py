"""Swin-T (Liu et al. 2021, "Swin Transformer: Hierarchical Vision Transformer using Shifted Windows"),
224x224 RGB, 1000 classes: 28,288,354 parameters (torchvision ``swin_t``), 4.5 GMACs (paper, Table 1).

Plain torch, written from the paper and torchvision's layout (no weights are loaded): a 4x4 stride-4 patch
embedding to 96 channels with LayerNorm, four stages of (2, 2, 6, 2) transformer blocks with (3, 6, 12, 24)
heads of 32 channels, patch merging (2x2 neighbours concatenated, LayerNorm, linear 4C -> 2C) between
stages, a final LayerNorm, global average pooling and a linear classifier. Each block is window attention
over 7x7 windows, the odd blocks on windows shifted by 3 (a cyclic roll, with an attention mask keeping
tokens to their own region), plus a 4x MLP with GELU, both pre-LayerNorm with residuals. Where the window
covers the whole feature map (stage 4, 7x7) there is nothing to shift and the shift is dropped, as in the
paper's code and torchvision.

Attention runs through ``F.scaled_dot_product_attention`` with one float ``attn_mask``: the learned
relative position bias (a (2*7-1)^2 x heads table, indexed per query/key pair) plus the shift mask (0 or
-100). The mask and the index are buffers computed once for the 224x224 resolution.

Part of the blind held-out set of docs/accuracy.md: written after the roofline predictor was tuned and
never used to check it.
"""

import torch
import torch.nn.functional as F
from torch import nn

IMAGE, PATCH, WINDOW, EMBED = 224, 4, 7, 96
DEPTHS = (2, 2, 6, 2)
HEADS = (3, 6, 12, 24)


def relative_position_index(window: int) -> torch.Tensor:
    """(window^2 * window^2,) index into the (2*window-1)^2 bias table for every query/key pair."""
    coords = torch.stack(torch.meshgrid(torch.arange(window), torch.arange(window), indexing="ij")).flatten(1)
    rel = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0) + (window - 1)   # (N, N, 2), >= 0
    return (rel[..., 0] * (2 * window - 1) + rel[..., 1]).flatten()


def shift_mask(size: int, window: int, shift: int) -> torch.Tensor:
    """(windows, N, N) float mask: 0 where query and key lie in the same region of the rolled map, else -100."""
    region = torch.zeros(size, size)
    bounds = (slice(0, -window), slice(-window, -shift), slice(-shift, None))
    for i, h in enumerate(bounds):
        for j, w in enumerate(bounds):
            region[h, w] = 3 * i + j
    n = size // window
    region = region.view(n, window, n, window).permute(0, 2, 1, 3).reshape(n * n, window * window)
    diff = region[:, None, :] - region[:, :, None]
    return torch.zeros_like(diff).masked_fill(diff != 0, -100.0)


class WindowAttention(nn.Module):
    def __init__(self, dim: int, heads: int, size: int, shift: int):
        super().__init__()
        self.heads, self.size, self.shift = heads, size, shift
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.relative_position_bias_table = nn.Parameter(torch.zeros((2 * WINDOW - 1) ** 2, heads))
        nn.init.trunc_normal_(self.relative_position_bias_table, std=0.02)
        self.register_buffer("relative_position_index", relative_position_index(WINDOW), persistent=False)
        mask = shift_mask(size, WINDOW, shift) if shift else torch.zeros(1, WINDOW ** 2, WINDOW ** 2)
        self.register_buffer("mask", mask, persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, h, w, c = x.shape
        n, tokens, head_dim = h // WINDOW, WINDOW * WINDOW, c // self.heads
        if self.shift:
            x = torch.roll(x, shifts=(-self.shift, -self.shift), dims=(1, 2))
        # (B, H, W, C) -> (B, windows, 49 tokens, C)
        x = x.view(b, n, WINDOW, n, WINDOW, c).permute(0, 1, 3, 2, 4, 5).reshape(b, n * n, tokens, c)
        qkv = self.qkv(x).view(b, n * n, tokens, 3, self.heads, head_dim).permute(3, 0, 1, 4, 2, 5)
        bias = self.relative_position_bias_table[self.relative_position_index]
        bias = bias.view(tokens, tokens, self.heads).permute(2, 0, 1)          # (heads, N, N)
        attn_mask = bias[None] + self.mask[:, None]                             # (windows or 1, heads, N, N)
        y = F.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], attn_mask=attn_mask)  # (B, nW, heads, N, d)
        y = self.proj(y.transpose(2, 3).reshape(b, n * n, tokens, c))
        # back to (B, H, W, C), undoing the roll
        y = y.view(b, n, n, WINDOW, WINDOW, c).permute(0, 1, 3, 2, 4, 5).reshape(b, h, w, c)
        if self.shift:
            y = torch.roll(y, shifts=(self.shift, self.shift), dims=(1, 2))
        return y


class SwinBlock(nn.Module):
    def __init__(self, dim: int, heads: int, size: int, shift: int):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = WindowAttention(dim, heads, size, shift if size > WINDOW else 0)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class PatchMerging(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.norm = nn.LayerNorm(4 * dim)
        self.reduction = nn.Linear(4 * dim, 2 * dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.cat([x[:, 0::2, 0::2], x[:, 1::2, 0::2], x[:, 0::2, 1::2], x[:, 1::2, 1::2]], dim=-1)
        return self.reduction(self.norm(x))


class SwinTransformer(nn.Module):
    def __init__(self, depths=DEPTHS, heads=HEADS, embed: int = EMBED, num_classes: int = 1000):
        super().__init__()
        self.patch_embed = nn.Conv2d(3, embed, PATCH, stride=PATCH)
        self.patch_norm = nn.LayerNorm(embed)
        layers: list[nn.Module] = []
        dim, size = embed, IMAGE // PATCH
        for i, (depth, h) in enumerate(zip(depths, heads, strict=True)):
            layers += [SwinBlock(dim, h, size, 0 if b % 2 == 0 else WINDOW // 2) for b in range(depth)]
            if i < len(depths) - 1:
                layers.append(PatchMerging(dim))
                dim, size = 2 * dim, size // 2
        self.features = nn.Sequential(*layers)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.patch_norm(self.patch_embed(x).permute(0, 2, 3, 1))    # NHWC from here on
        x = self.norm(self.features(x)).mean(dim=(1, 2))                 # global average pool
        return self.head(x)


def build_model() -> nn.Module:
    return SwinTransformer()


def example_inputs(batch_size: int) -> torch.Tensor:
    return torch.randn(batch_size, 3, IMAGE, IMAGE)
