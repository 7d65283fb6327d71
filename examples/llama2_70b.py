"""A LLaMA-2-style decoder (RMSNorm, rotary embeddings, grouped-query attention, SwiGLU), plain torch.

``build_model()`` gives LLaMA-2-70B's shapes (hidden 8192, 80 layers, 64 query / 8 key-value heads,
FFN 28672, vocabulary 32000): 68,976,648,192 parameters. Do not run it for real: ``tops-advisor count``
builds it on the meta device, so no weight is allocated. ``build_model(LlamaConfig(...))`` gives other sizes.
"""

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn


@dataclass(frozen=True)
class LlamaConfig:
    hidden: int = 8192
    layers: int = 80
    heads: int = 64
    kv_heads: int = 8
    ffn: int = 28672
    vocab: int = 32000
    sequence: int = 128
    rope_theta: float = 10000.0


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class Attention(nn.Module):
    def __init__(self, c: LlamaConfig):
        super().__init__()
        self.c, self.head_dim = c, c.hidden // c.heads
        self.q_proj = nn.Linear(c.hidden, c.heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(c.hidden, c.kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(c.hidden, c.kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(c.heads * self.head_dim, c.hidden, bias=False)

    def forward(self, x, cos, sin):
        b, s, _ = x.shape
        q = self.q_proj(x).view(b, s, self.c.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, s, self.c.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(b, s, self.c.kv_heads, self.head_dim).transpose(1, 2)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        return self.o_proj(y.transpose(1, 2).reshape(b, s, -1))


class MLP(nn.Module):
    def __init__(self, c: LlamaConfig):
        super().__init__()
        self.gate_proj = nn.Linear(c.hidden, c.ffn, bias=False)
        self.up_proj = nn.Linear(c.hidden, c.ffn, bias=False)
        self.down_proj = nn.Linear(c.ffn, c.hidden, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self, c: LlamaConfig):
        super().__init__()
        self.input_norm = nn.RMSNorm(c.hidden, eps=1e-5)
        self.attn = Attention(c)
        self.post_attn_norm = nn.RMSNorm(c.hidden, eps=1e-5)
        self.mlp = MLP(c)

    def forward(self, x, cos, sin):
        x = x + self.attn(self.input_norm(x), cos, sin)
        return x + self.mlp(self.post_attn_norm(x))


class Llama(nn.Module):
    def __init__(self, c: LlamaConfig):
        super().__init__()
        self.c = c
        self.embed = nn.Embedding(c.vocab, c.hidden)
        self.layers = nn.ModuleList(DecoderLayer(c) for _ in range(c.layers))
        self.norm = nn.RMSNorm(c.hidden, eps=1e-5)
        self.lm_head = nn.Linear(c.hidden, c.vocab, bias=False)

    def forward(self, input_ids):
        head_dim = self.c.hidden // self.c.heads
        positions = torch.arange(input_ids.shape[1], device=input_ids.device, dtype=torch.float32)
        inv_freq = self.c.rope_theta ** -(torch.arange(0, head_dim, 2, device=input_ids.device) / head_dim)
        angles = torch.outer(positions, inv_freq)
        angles = torch.cat((angles, angles), dim=-1)
        x = self.embed(input_ids)
        cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
        for layer in self.layers:
            x = layer(x, cos, sin)
        return self.lm_head(self.norm(x))


def build_model(config: LlamaConfig | None = None) -> nn.Module:
    return Llama(config or LlamaConfig())


def example_inputs(batch_size: int, config: LlamaConfig | None = None) -> torch.Tensor:
    c = config or LlamaConfig()
    return torch.randint(0, c.vocab, (batch_size, c.sequence))
