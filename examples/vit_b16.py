"""ViT-B/16 at 224x224 (12 layers, hidden 768, 12 heads, MLP 3072, 1000 classes), plain torch, random
weights: 86,567,656 parameters (torchvision ``vit_b_16``). Attention through
``F.scaled_dot_product_attention``."""

import torch
import torch.nn.functional as F
from torch import nn

IMAGE, PATCH, HIDDEN, LAYERS, HEADS, MLP, CLASSES = 224, 16, 768, 12, 12, 3072, 1000
TOKENS = (IMAGE // PATCH) ** 2 + 1  # 196 patches + the class token


class EncoderBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1 = nn.LayerNorm(HIDDEN, eps=1e-6)
        self.qkv = nn.Linear(HIDDEN, 3 * HIDDEN)
        self.proj = nn.Linear(HIDDEN, HIDDEN)
        self.ln_2 = nn.LayerNorm(HIDDEN, eps=1e-6)
        self.fc1 = nn.Linear(HIDDEN, MLP)
        self.fc2 = nn.Linear(MLP, HIDDEN)

    def forward(self, x):
        b, s, _ = x.shape
        qkv = self.qkv(self.ln_1(x)).view(b, s, 3, HEADS, HIDDEN // HEADS).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2])
        x = x + self.proj(y.transpose(1, 2).reshape(b, s, HIDDEN))
        return x + self.fc2(F.gelu(self.fc1(self.ln_2(x))))


class ViT(nn.Module):
    def __init__(self):
        super().__init__()
        self.patch_embed = nn.Conv2d(3, HIDDEN, PATCH, stride=PATCH)
        self.class_token = nn.Parameter(torch.zeros(1, 1, HIDDEN))
        self.pos_embedding = nn.Parameter(torch.randn(1, TOKENS, HIDDEN) * 0.02)
        self.blocks = nn.ModuleList(EncoderBlock() for _ in range(LAYERS))
        self.ln = nn.LayerNorm(HIDDEN, eps=1e-6)
        self.head = nn.Linear(HIDDEN, CLASSES)

    def forward(self, images):
        x = self.patch_embed(images).flatten(2).transpose(1, 2)
        x = torch.cat([self.class_token.expand(x.shape[0], -1, -1), x], dim=1) + self.pos_embedding
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln(x)[:, 0])


def build_model() -> nn.Module:
    return ViT()


def example_inputs(batch_size: int) -> torch.Tensor:
    return torch.randn(batch_size, 3, IMAGE, IMAGE)
